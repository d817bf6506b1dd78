"""CUDA and cuDNN checks: libcuda/cuInit, the toolkit (nvcc) against the driver and the GPUs,
and the runtime/cuDNN copies on the loader path. Every driver-version fact the tests expect is
read from the compat data (gpucheck.compat / compat/cuda.toml), never copied from the code."""

from __future__ import annotations

import sys

import builders
import more_builders as mb
from builders import library
from more_builders import finding, run_checks, the
from packaging.version import Version

from gpucheck import compat
from gpucheck.model.finding import Fix, Status
from gpucheck.model.snapshot import CudaDriverFacts, NvccFacts, Snapshot

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]


def toml_min_driver(version: str) -> str:
    """The minimum Linux driver exactly as compat/cuda.toml (and NVIDIA's table) prints it."""
    data = tomllib.loads((compat.data_dir() / "cuda.toml").read_text(encoding="utf-8"))
    row = next(r for r in data["toolkit"] if r["version"] == version)
    return str(row["min_driver_linux"])


def upgrade_target(fix: Fix | None) -> object:
    """The driver version a fix's driver step asks for, parsed (so that 580.65.06 ==
    580.65.6)."""
    assert fix is not None
    wanted = [
        c.requirement for s in fix.steps for c in s.changes if c.name.startswith("nvidia-driver")
    ]
    assert wanted and wanted[0] and wanted[0].startswith(">="), fix
    return compat.parse_version(wanted[0][2:])


def with_nvcc(snap: Snapshot, version: str | None, path: str = "/usr/local/cuda/bin/nvcc"):  # type: ignore[no-untyped-def]
    snap.cuda.nvcc = NvccFacts(path=path, version=version)
    snap.cuda.cuda_home = "/usr/local/cuda"
    snap.cuda.cuda_home_source = "default"
    return snap


# --- cuda.driver-api ---------------------------------------------------------------------------


def test_driver_api_working_passes_with_cuda_version_and_devices() -> None:
    f = the(builders.h100_node(8), "cuda.driver-api")
    assert f.status is Status.PASS
    assert f.title == "CUDA driver API 13.1: 8 device(s)"  # 13010 -> 13.1
    assert "device 7: NVIDIA H100 80GB HBM3 (compute 9.0)" in f.evidence


def _cuinit_fails(snap: Snapshot, name: str) -> Snapshot:
    drv = snap.cuda.driver
    drv.init_result = mb.CU_RESULTS[name]
    drv.init_error_name = name
    drv.device_count = None
    drv.devices = []
    return snap


def test_cuinit_system_not_ready_names_the_fabric_manager() -> None:
    snap = _cuinit_fails(builders.h100_node(8), "CUDA_ERROR_SYSTEM_NOT_READY")
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert "fabric manager" in f.title
    assert "cuInit(0) = 802 (CUDA_ERROR_SYSTEM_NOT_READY)" in f.evidence
    assert "while NVML works (driver 590.48.01)" in f.evidence
    assert f.fix and "nvidia-fabricmanager" in f.fix.text


def test_cuinit_no_device_points_at_visibility() -> None:
    snap = _cuinit_fails(builders.h100_node(2), "CUDA_ERROR_NO_DEVICE")
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert f.title == "CUDA sees no device"
    assert "cuInit(0) = 100 (CUDA_ERROR_NO_DEVICE)" in f.evidence
    assert f.fix and "CUDA_VISIBLE_DEVICES" in f.fix.text and "/dev/nvidia-uvm" in f.fix.text


def test_cuinit_unlisted_error_still_fails_with_its_name() -> None:
    snap = builders.h100_node(1)
    snap.cuda.driver.init_result = 3
    snap.cuda.driver.init_error_name = "CUDA_ERROR_NOT_INITIALIZED"
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert "CUDA_ERROR_NOT_INITIALIZED" in f.title
    assert f.fix


def test_libcuda_missing_while_nvml_works_fails_naming_the_package() -> None:
    snap = builders.h100_node(1)
    snap.cuda.driver = CudaDriverFacts(
        load_error="libcuda.so.1: cannot open shared object file: No such file or directory"
    )
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert "libcuda.so.1" in f.title
    assert f.fix and "libnvidia-compute-590" in f.fix.text  # the running driver's branch


def test_libcuda_missing_in_a_container_says_compute_capability() -> None:
    snap = builders.h100_node(1)
    snap.system.container = "docker"
    snap.cuda.driver = CudaDriverFacts(load_error="libcuda.so.1: cannot open shared object file")
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert f.fix and "docker run --gpus all" in f.fix.text
    assert "export NVIDIA_DRIVER_CAPABILITIES=compute,utility" in f.fix.commands


def test_libcuda_missing_without_a_working_driver_skips_or_is_silent() -> None:
    snap = mb.nvml_fails(builders.h100_node(1), "LibraryNotFound")
    assert the(snap, "cuda.driver-api").status is Status.SKIP
    assert (
        finding(mb.nvml_fails(builders.no_gpu_machine(), "LibraryNotFound"), "cuda.driver-api")
        is None
    )


def test_fewer_cuda_devices_than_nvml_gpus_warns() -> None:
    snap = builders.h100_node(8)
    snap.cuda.driver.device_count = 7
    snap.cuda.driver.devices = snap.cuda.driver.devices[:7]
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.WARN
    assert f.title.startswith("CUDA sees 7 device(s), but the driver has 8 usable GPU(s)")
    assert f.fix and "CUDA_VISIBLE_DEVICES" in f.fix.text


def test_cuda_device_count_follows_cuda_visible_devices() -> None:
    snap = builders.h100_node(8)
    snap.system.env["CUDA_VISIBLE_DEVICES"] = "0,1"
    snap.cuda.driver.device_count = 2
    snap.cuda.driver.devices = snap.cuda.driver.devices[:2]
    assert the(snap, "cuda.driver-api").status is Status.PASS


def test_forward_compatibility_libcuda_is_noted() -> None:
    snap = mb.driver_535_node(1)
    snap.cuda.driver.driver_version = 12080
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.PASS
    assert any(
        "libcuda reports CUDA 12.8, NVML 12.2" in e and "forward-compatibility" in e
        for e in f.evidence
    )


def test_cuda_driver_probe_timeout_fails() -> None:
    snap = mb.probe(
        builders.h100_node(1), "cuda_driver", "timeout", "timed out after 10 s in cuInit"
    )
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert "timed out after 10 s" in f.title
    assert f.fix and "xid" in f.fix.text


def test_cuinit_not_tried_with_the_module_unloaded_skips() -> None:
    f = the(mb.module_not_loaded(builders.h100_node(1)), "cuda.driver-api")
    assert f.status is Status.SKIP


# --- cuda.toolkit ------------------------------------------------------------------------------


def test_nvcc_within_the_driver_passes() -> None:
    snap = with_nvcc(mb.driver_535_node(), "12.2.140")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.PASS
    assert f.title == "CUDA toolkit 12.2.140 runs on this driver (CUDA 12.2)"
    assert "CUDA home /usr/local/cuda (from default)" in f.evidence


def test_nvcc_newer_minor_warns_its_ptx_cannot_load_even_with_minor_version_compat() -> None:
    """nvcc 12.4 on a 535 driver (CUDA 12.2): the runtime starts through minor version
    compatibility, but what nvcc builds by default carries PTX for these GPUs, which the
    older driver cannot JIT (nvbandwidth#61, 13.2 on a 13.0 driver)."""
    snap = with_nvcc(mb.driver_535_node(), "12.4.131")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "cudaErrorUnsupportedPtxVersion" in f.evidence[1]
    assert f.fix and "nvcc -gencode arch=compute_90,code=sm_90 ..." in f.fix.text
    assert "12.4.131 is newer than the driver supports" in f.title
    why = f.evidence[0]
    assert "minor version compatibility" in why
    assert "(driver 535.104.05 >= 525)" in why  # cuda.toml minor_compat: CUDA 12 ">= 525"
    assert "PTX JIT" in why
    assert upgrade_target(f.fix) == compat.parse_version("550.54.14")  # cuda.toml, 12.4.0
    assert f.fix and "/usr/local/cuda-12.2" in f.fix.text


def test_nvcc_newer_major_warns_that_code_built_with_it_does_not_run() -> None:
    snap = with_nvcc(mb.driver_535_node(), "13.0.88")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "CUDA_ERROR_INSUFFICIENT_DRIVER" in f.evidence[0]
    assert upgrade_target(f.fix) == compat.parse_version("580.65.06")  # cuda.toml, 13.0.0


def test_driver_versions_in_toolkit_findings_are_printed_as_nvidia_prints_them() -> None:
    f = the(with_nvcc(mb.driver_535_node(), "13.0.88"), "cuda.toolkit")
    assert f.fix and f"to {toml_min_driver('13.0.0')} or newer" in f.fix.text  # "580.65.06"
    f = the(with_nvcc(mb.driver_535_node(), "12.4.131"), "cuda.toolkit")
    assert "driver 535.104.05 >= " in f.evidence[0]


def test_nvcc_newer_minor_below_the_minor_compat_floor_warns() -> None:
    """CUDA 11.0 GA's driver predates 11.x minor version compatibility's minimum."""
    snap = builders.node([mb.t4(0)], driver=toml_min_driver("11.0.1"), cuda=11000)
    # cuda.toml, [[minor_compat]] cuda_major = 11: min_driver_linux = "450.80.02"
    assert Version(toml_min_driver("11.0.1")) < Version("450.80.02")
    f = the(with_nvcc(snap, "11.4.152"), "cuda.toolkit")
    assert f.status is Status.WARN
    assert "CUDA 11.4 is newer than the driver's CUDA 11.0" in f.evidence[0]
    assert upgrade_target(f.fix) == compat.parse_version("470.42.01")  # cuda.toml, 11.4.0


def test_nvcc_minor_compat_on_windows_uses_the_windows_minimum() -> None:
    snap = with_nvcc(mb.driver_535_node(1), "12.4.131", path="C:\\CUDA\\v12.4\\bin\\nvcc.exe")
    snap.system.os = "Windows"
    snap.nvml.driver_version = "537.13"  # a Windows driver of the CUDA 12.2 era
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN  # PTX JIT; the runtime itself starts:
    assert "runs through minor version compatibility (driver 537.13 >= " in f.evidence[0]
    assert upgrade_target(f.fix) == compat.parse_version("551.61")  # cuda.toml, 12.4.0 windows
    assert f.fix and "on Windows" in f.fix.text


def test_cuda_home_pointing_at_nothing_warns() -> None:
    snap = builders.h100_node(1)
    snap.system.env["CUDA_HOME"] = "/opt/cuda-12.4"
    snap.cuda.cuda_home = "/opt/cuda-12.4"
    snap.cuda.cuda_home_source = "CUDA_HOME"
    snap.cuda.nvcc = None
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "CUDA_HOME points to a folder without a CUDA toolkit" in f.title
    assert f.evidence == ["CUDA_HOME=/opt/cuda-12.4 has no bin/nvcc; no nvcc on PATH either"]
    assert f.fix and f.fix.commands == ["export CUDA_HOME=/usr/local/cuda-X.Y", "unset CUDA_HOME"]


def test_cuda_home_without_a_toolkit_warns_even_with_nvcc_on_path() -> None:
    """Issue 8: CUDA_HOME=/nope with a working nvcc on PATH was reported as fine, but builds
    (torch extensions, CMake) take the toolkit from CUDA_HOME."""
    snap = builders.h100_node(1)
    snap.system.env["CUDA_HOME"] = "/nope"
    snap.cuda.cuda_home = "/nope"
    snap.cuda.cuda_home_source = "CUDA_HOME"
    snap.cuda.cuda_home_nvcc = False
    snap.cuda.nvcc = NvccFacts(
        path="/usr/local/bin/nvcc", version="12.4.131", toolkit="/usr/local/cuda-12.4"
    )
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert f.evidence == ["CUDA_HOME=/nope has no bin/nvcc; nvcc on PATH is /usr/local/bin/nvcc"]
    assert f.fix and f.fix.commands[0] == "export CUDA_HOME=/usr/local/cuda-12.4"
    assert f.subjects.paths == ["/nope"]


def test_cuda_path_pointing_at_nothing_warns_even_with_an_empty_cuda_home() -> None:
    snap = builders.h100_node(1)
    snap.system.env["CUDA_HOME"] = ""
    snap.system.env["CUDA_PATH"] = "/opt/cuda-12.4"
    snap.cuda.cuda_home = "/opt/cuda-12.4"  # what probes.libraries.cuda_homes records
    snap.cuda.cuda_home_source = "CUDA_PATH"
    snap.cuda.nvcc = None
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "CUDA_PATH" in f.title


def test_no_toolkit_is_info() -> None:
    f = the(builders.h100_node(1), "cuda.toolkit")
    assert f.status is Status.INFO
    assert "No CUDA toolkit" in f.title


def test_nvcc_without_a_version_warns() -> None:
    snap = builders.h100_node(1)
    snap.cuda.nvcc = NvccFacts("/usr/local/cuda/bin/nvcc", None, "exited with status 127")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert f.fix and "/usr/local/cuda/bin/nvcc --version" in f.fix.text


def test_kepler_gpu_with_nvcc_12_warns_about_architectures() -> None:
    gpu = builders.h100(0)
    gpu.name, gpu.compute_capability, gpu.architecture = "Tesla K80", "3.7", "Kepler"
    snap = with_nvcc(builders.node([gpu], driver="535.104.05", cuda=12020), "12.2.140")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "cannot build for 1 of the GPUs" in f.title
    # cuda.toml [[toolkit_arch]] cuda = "12.0" (in force for 12.2): min_cc 5.0, max_cc 9.0
    assert (
        "GPU 0 Tesla K80: compute capability 3.7, this toolkit builds for 5.0 to 9.0"
    ) in f.evidence
    assert f.fix and "compat/cuda.toml" in f.fix.text


def test_hopper_gpu_with_an_old_nvcc_warns_about_architectures() -> None:
    snap = with_nvcc(builders.h100_node(2), "11.7.99")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "cannot build for 2 of the GPUs" in f.title
    # cuda.toml [[toolkit_arch]] cuda = "11.4" (in force for 11.7): 3.5 to 8.7, no sm_90
    assert any("this toolkit builds for 3.5 to 8.7" in line for line in f.evidence), f.evidence


def test_toolkit_without_a_running_driver_is_info() -> None:
    snap = with_nvcc(mb.module_not_loaded(builders.h100_node(1)), "12.4.131")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.INFO
    assert "no driver to run it" in f.title


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
        _cuinit_fails(builders.h100_node(2), name)
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
