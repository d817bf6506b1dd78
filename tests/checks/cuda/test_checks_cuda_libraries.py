"""CUDA runtime and cuDNN checks: the copies on the loader path, the fixes for every problem, and
which libcuda the loader finds on WSL2. Driver versions the tests expect are literals read off
compat/cuda.toml."""

from __future__ import annotations

import sys

from support import builders
from support import more_builders as mb
from support.builders import library
from support.evaluate import run_checks, the

from gpucheck import compat
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass  # type: ignore[import-not-found,no-redef,unused-ignore]
from support.cuda_checks import cuinit_fails, upgrade_target, with_nvcc

# --- cuda.runtime-libraries --------------------------------------------------------------------


CUDART_121 = "/usr/local/cuda-12.1/lib64/libcudart.so.12"
CUDART_124 = "/usr/local/cuda-12.4/lib64/libcudart.so.12"


def test_no_runtime_outside_frameworks_is_info() -> None:
    f = the(builders.h100_node(1), "cuda.runtime-libraries")
    assert f.status is Status.INFO


def test_two_cudart_12_versions_on_the_loader_path_warn() -> None:
    snap = builders.h100_node(1)
    snap.cuda.runtimes = [
        library("cudart", CUDART_121, "12.1.105", "ld_library_path"),
        library("cudart", CUDART_124, "12.4.127", "ldconfig"),
    ]
    f = the(snap, "cuda.runtime-libraries")
    assert f.status is Status.WARN
    assert "compete on the loader path" in f.title
    assert f"12.1.105 at {CUDART_121} (ld library path)" in f.evidence
    assert f"12.4.127 at {CUDART_124} (ldconfig)" in f.evidence
    assert f.fix and "keep /usr/local/cuda-12.4/lib64" in f.fix.text  # the newer one


def test_cudart_11_and_12_coexist() -> None:
    snap = builders.h100_node(1)
    snap.cuda.runtimes = [
        library("cudart", "/usr/local/cuda-11.8/lib64/libcudart.so.11.0", "11.8.89"),
        library("cudart", CUDART_124, "12.4.127"),
    ]
    f = the(snap, "cuda.runtime-libraries")
    assert f.status is Status.PASS
    assert f.title == "CUDA runtime 11.8.89, 12.4.127 found"


def test_same_minor_patch_levels_do_not_compete() -> None:
    snap = builders.h100_node(1)
    snap.cuda.runtimes = [
        library("cudart", "/opt/a/libcudart.so.12", "12.4.99", "ld_library_path"),
        library("cudart", CUDART_124, "12.4.127"),
    ]
    assert the(snap, "cuda.runtime-libraries").status is Status.PASS


def test_a_runtime_off_the_loader_path_does_not_compete() -> None:
    snap = builders.h100_node(1)
    snap.cuda.runtimes = [
        library("cudart", CUDART_121, "12.1.105", "cuda_toolkit"),
        library("cudart", CUDART_124, "12.4.127"),
    ]
    assert the(snap, "cuda.runtime-libraries").status is Status.PASS


def test_runtime_13_on_a_12_driver_fails() -> None:
    snap = mb.driver_535_node(1)
    snap.cuda.runtimes = [
        library(
            "cudart", "/usr/local/cuda-13.0/lib64/libcudart.so.13", "13.0.96", "ld_library_path"
        ),
    ]
    f = the(snap, "cuda.runtime-libraries")
    assert f.status is Status.FAIL
    assert "13.0.96" in f.title
    assert upgrade_target(f.fix) == compat.parse_version("580.65.06")  # cuda.toml, 13.0.0
    assert f.fix and "no newer than CUDA 12.2" in f.fix.text


def test_the_toolkits_own_runtime_13_on_a_12_driver_warns_as_its_nvcc_does() -> None:
    # The trial: nvcc 13.0.88 on a 535 driver; the toolkit's libcudart.so.13 is in the ldconfig
    # cache through its installer's /etc/ld.so.conf.d entry. cuda.toolkit warns; so does this.
    snap = with_nvcc(mb.driver_535_node(1), "13.0.88")
    snap.cuda.runtimes = [
        library("cudart", "/usr/local/cuda/lib64/libcudart.so.13", "13.0", "cuda_toolkit"),
    ]
    snap.cuda.runtimes[0].on_loader_path = True
    snap.cuda.runtimes[
        0
    ].realpath = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96"
    f = the(snap, "cuda.runtime-libraries")
    assert f.status is Status.WARN
    assert f.title == (
        "CUDA runtime 13.0 on the loader path is newer than the driver supports: code built "
        "with its toolkit does not run here"
    )
    assert the(snap, "cuda.toolkit").status is Status.WARN
    # Found only through the cache, not in the CUDA home: still the toolkit's own.
    snap.cuda.runtimes[0].origin = "ldconfig"
    assert the(snap, "cuda.runtime-libraries").status is Status.WARN
    # On LD_LIBRARY_PATH it comes before frameworks' RUNPATH: what they load. A failure.
    snap.system.env["LD_LIBRARY_PATH"] = "/usr/local/cuda/lib64"
    assert the(snap, "cuda.runtime-libraries").status is Status.FAIL


def test_a_stray_runtime_13_in_the_system_folder_fails() -> None:
    snap = with_nvcc(mb.driver_535_node(1), "13.0.88")
    snap.cuda.runtimes = [
        library("cudart", "/usr/lib/x86_64-linux-gnu/libcudart.so.13", "13.0.96", "system"),
        library("cudart", "/usr/local/cuda/lib64/libcudart.so.13", "13.0.96", "cuda_toolkit"),
    ]
    snap.cuda.runtimes[1].on_loader_path = True
    f = the(snap, "cuda.runtime-libraries")
    assert f.status is Status.FAIL
    assert f.title == "CUDA runtime 13.0.96 on the loader path is newer than the driver supports"


def test_runtime_newer_minor_warns() -> None:
    snap = mb.driver_535_node(1)
    snap.cuda.runtimes = [library("cudart", CUDART_124, "12.4.127")]
    f = the(snap, "cuda.runtime-libraries")
    assert f.status is Status.WARN
    assert upgrade_target(f.fix) == compat.parse_version("550.54.14")  # cuda.toml, 12.4.0


# --- cudnn.libraries ---------------------------------------------------------------------------


SITE = "/home/user/venv/lib/python3.11/site-packages"


def test_no_cudnn_outside_frameworks_is_info() -> None:
    assert the(builders.h100_node(1), "cudnn.libraries").status is Status.INFO


def test_cudnn_that_cannot_load_warns_with_pip_force_reinstall() -> None:
    snap = builders.h100_node(1)
    snap.cudnn.libraries = [
        library(
            "cudnn",
            f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",
            "9.1.0",
            "pip",
            package="nvidia-cudnn-cu12 9.1.0.70",
            load_error="libcudnn_graph.so.9: cannot open shared object file",
        )
    ]
    f = the(snap, "cudnn.libraries")
    assert f.status is Status.WARN
    assert "cannot be loaded" in f.title
    assert f.fix and f.fix.commands == ["pip install --force-reinstall nvidia-cudnn-cu12==9.1.0.70"]
    assert any("libcudnn_graph.so.9" in e for e in f.evidence)


def test_cudnn_without_a_package_that_cannot_load_says_reinstall() -> None:
    snap = builders.h100_node(1)
    path = "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"
    snap.cudnn.libraries = [library("cudnn", path, "9.3.0", load_error="undefined symbol")]
    f = the(snap, "cudnn.libraries")
    assert f.status is Status.WARN
    assert f.fix and "libcudnn_*.so" in f.fix.text and path in f.fix.text


def test_two_cudnn_9_versions_on_the_loader_path_warn() -> None:
    snap = builders.h100_node(1)
    snap.cudnn.libraries = [
        library("cudnn", "/opt/cudnn-9.3/lib/libcudnn.so.9", "9.3.0", "ld_library_path"),
        library("cudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "9.1.0", "ldconfig"),
    ]
    f = the(snap, "cudnn.libraries")
    assert f.status is Status.WARN
    assert "Several cuDNN versions compete" in f.title
    assert f.fix and "ldconfig" in f.fix.text


def test_cudnn_8_and_9_coexist_and_pip_copies_do_not_compete() -> None:
    snap = builders.h100_node(1)
    snap.cudnn.libraries = [
        library("cudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "8.9.7", cuda_version="12.2"),
        library("cudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "9.1.0", cuda_version="12.4"),
        library(
            "cudnn",
            f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",
            "9.5.1",
            "pip",
            package="nvidia-cudnn-cu12 9.5.1.17",
        ),
    ]
    f = the(snap, "cudnn.libraries")
    assert f.status is Status.PASS
    assert f.title == "cuDNN 8.9.7, 9.1.0, 9.5.1 found"
    assert any("built for CUDA 12.4" in e for e in f.evidence)


def test_cudnn_built_for_a_newer_cuda_major_than_the_driver_warns() -> None:
    snap = mb.driver_535_node(1)
    snap.cudnn.libraries = [
        library("cudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "9.13.0", cuda_version="13.0")
    ]
    f = the(snap, "cudnn.libraries")
    assert f.status is Status.WARN
    assert "built for CUDA 13.0, newer than the driver's CUDA 12.2" in f.title
    assert f.fix and "CUDA 12.x" in f.fix.text


def test_cudnn_for_a_newer_minor_runs_by_minor_version_compatibility() -> None:
    snap = mb.driver_535_node(1)
    snap.cudnn.libraries = [
        library("cudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "9.1.0", cuda_version="12.4")
    ]
    assert the(snap, "cudnn.libraries").status is Status.PASS


# --- fixes for every problem -------------------------------------------------------------------


def test_every_cuda_problem_across_these_fixtures_has_a_fix() -> None:
    snaps = [
        cuinit_fails(builders.h100_node(2), name)
        for name in ("CUDA_ERROR_SYSTEM_NOT_READY", "CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_UNKNOWN")
    ]
    snaps.append(with_nvcc(mb.driver_535_node(), "13.0.88"))
    snaps.append(with_nvcc(mb.driver_535_node(), "12.4.131"))
    problems = []
    for snap in snaps:
        problems += [f for f in run_checks(snap) if f.status in (Status.WARN, Status.FAIL)]
    assert problems
    assert all(f.fix and f.fix.text.strip() for f in problems)


def test_broken_pip_cudnn_is_reinstalled_into_its_own_environment() -> None:
    """The reinstall must land in the environment that holds the broken copy, not in
    whatever pip comes first on PATH."""
    from gpucheck.model.environments import PythonEnvironment

    site = "/home/me/venvs/train/lib/python3.11/site-packages"
    snap = builders.h100_node(1)
    snap.environments = [
        PythonEnvironment(
            python="/usr/bin/python3",
            origin="gpucheck",
            site_packages=["/usr/lib/python3/dist-packages"],
        ),
        PythonEnvironment(
            python="/home/me/venvs/train/bin/python", origin="virtualenv", site_packages=[site]
        ),
    ]
    snap.cudnn.libraries = [
        builders.library(
            "cudnn",
            f"{site}/nvidia/cudnn/lib/libcudnn.so.9",
            "9.1.0",
            origin="pip",
            package="nvidia-cudnn-cu12 9.1.0.70",
            load_error="crashed with SIGABRT in task x",
        )
    ]
    f = the(snap, "cudnn.libraries")
    assert f.status is Status.WARN
    assert f.fix and f.fix.commands == [
        "/home/me/venvs/train/bin/python -m pip install --force-reinstall "
        "nvidia-cudnn-cu12==9.1.0.70"
    ]
    assert f.fix.steps[0].environment == "/home/me/venvs/train/bin/python"


# --- cuda.driver-api on WSL2: which libcuda the loader finds ------------------------------------


def _wsl(cache: dict[str, list[str]] | None) -> Snapshot:
    """The workstation seen from WSL2 with the Windows driver working (NVML and cuInit)."""
    snap = builders.workstation()
    snap.system.wsl = True
    snap.cuda.driver.library_path = "/usr/lib/wsl/lib/libcuda.so.1"
    snap.cuda.libcuda_cache = cache
    return snap


def test_wsl_without_the_unversioned_libcuda_in_the_cache_warns_with_the_path() -> None:
    # WSL#8587: ldconfig -p lists libcuda.so.1 => /usr/lib/wsl/lib/libcuda.so.1, no libcuda.so.
    snap = _wsl({"libcuda.so.1": ["/usr/lib/wsl/lib/libcuda.so.1"], "libcuda.so": []})
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.WARN
    assert "ldconfig cache: no libcuda.so" in f.evidence
    assert f.fix and f.fix.commands == ["export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"]
    snap.system.env["LD_LIBRARY_PATH"] = "/usr/lib/wsl/lib"
    assert the(snap, "cuda.driver-api").status is Status.PASS


def test_wsl_with_a_linux_drivers_libcuda_first_fails() -> None:
    snap = _wsl(
        {
            "libcuda.so.1": [
                "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                "/usr/lib/wsl/lib/libcuda.so.1",
            ],
            "libcuda.so": ["/usr/lib/wsl/lib/libcuda.so"],
        }
    )
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert f.evidence[0] == "libcuda: /usr/lib/x86_64-linux-gnu/libcuda.so.1"
    assert f.fix and "sudo ldconfig" in f.fix.commands


def test_wsl_with_both_names_cached_passes() -> None:
    snap = _wsl(
        {
            "libcuda.so.1": ["/usr/lib/wsl/lib/libcuda.so.1"],
            "libcuda.so": ["/usr/lib/wsl/lib/libcuda.so"],
        }
    )
    assert the(snap, "cuda.driver-api").status is Status.PASS
