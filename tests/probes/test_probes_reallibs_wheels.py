"""The CUDA runtime and cuDNN probes against the real libraries of NVIDIA's pip wheels, and the
command end to end with Debian's driver libraries (fixtures in reallibs_fixtures.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support import reallibs
from support.reallibs_fixtures import (
    CUDNN_BUILT_FOR_CUDA,
    TIMEOUT,
    child_env,
    device_nodes,
    expected_driver_cuda,
    in_dir,
    ldconfig_has,
    major_minor,
    three_parts,
)

from gpucheck.child import run as child
from gpucheck.model.snapshot import LibraryCopy
from gpucheck.probes import native
from gpucheck.probes.libraries import SearchScope, find_copies

pytestmark = pytest.mark.reallibs


@pytest.fixture(autouse=True)
def _no_device_nodes_created() -> Iterator[None]:
    before = device_nodes()
    yield
    created = device_nodes() - before
    assert not created, f"the test created device nodes: {sorted(created)}"


# --- CUDA runtime and cuDNN from pip wheels ---------------------------------------------------


def _site_scope(site: Path) -> SearchScope:
    return SearchScope(env={}, site_dirs=[site], use_ldconfig=False, system_dirs=())


def _only(copies: list[LibraryCopy]) -> LibraryCopy:
    assert len(copies) == 1, copies
    return copies[0]


def test_cudart_from_pip_wheel(wheels: reallibs.PipSite) -> None:
    copy = _only(find_copies("cudart", _site_scope(wheels.site)))
    assert copy.path == str(wheels.libcudart)
    assert copy.origin == "pip"
    assert copy.on_loader_path is False
    assert copy.package == f"nvidia-cuda-runtime-cu12 {wheels.cudart_version}"
    assert (copy.version, copy.version_source) == (wheels.cudart_version, "metadata")

    native.probe_library_versions([copy], TIMEOUT, child_env())
    assert copy.load_error is None
    # cudaRuntimeGetVersion says major.minor only ("12.9"); it agrees with the wheel's full
    # version, which is kept as the more precise one.
    assert copy.version == wheels.cudart_version
    assert copy.version_source == "metadata+call"


def test_copies_are_asked_before_and_after_the_site_folders_are_known(
    wheels: reallibs.PipSite, tmp_path: Path
) -> None:
    """--python: a copy outside the site folders is asked its version while the frameworks
    probe is still naming them; the wheel's copy once it has. Both answer."""
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(wheels.libcudart, lib / "libcudart.so.12")
    scope = SearchScope(env=child_env(LD_LIBRARY_PATH=str(lib)), use_ldconfig=False, system_dirs=())
    asked_for_sites: list[bool] = []

    def site_dirs() -> list[Path]:
        asked_for_sites.append(True)
        return [wheels.site]

    cuda, _, _ = native.probe_cuda_and_cudnn(scope, TIMEOUT, lambda: False, site_dirs)

    assert asked_for_sites == [True]
    by_path = {c.path: c for c in cuda.runtimes}
    early, late = by_path[str(lib / "libcudart.so.12")], by_path[str(wheels.libcudart)]
    assert (early.load_error, late.load_error) == (None, None)
    # The file name says "12"; the call says major.minor, which wins.
    assert (early.version, early.version_source) == (major_minor(wheels.cudart_version), "call")
    assert (late.version, late.version_source) == (wheels.cudart_version, "metadata+call")


def test_cudart_version_call_itself(wheels: reallibs.PipSite) -> None:
    result = child.run_script(
        native.SCRIPT,
        [json.dumps([{"id": "r", "kind": "cudart", "path": str(wheels.libcudart)}])],
        TIMEOUT,
        env=child_env(),
    )
    assert result.ok, result.describe(TIMEOUT)
    assert native._task_result(result) == {"version": major_minor(wheels.cudart_version)}


def test_cudnn_from_pip_wheel(wheels: reallibs.PipSite) -> None:
    copy = _only(find_copies("cudnn", _site_scope(wheels.site)))
    assert copy.path == str(wheels.libcudnn)
    assert copy.origin == "pip"
    assert copy.package == f"nvidia-cudnn-cu12 {wheels.cudnn_version}"
    # libcudnn_graph.so.9 beside it names the whole version: read before anything is loaded.
    assert (copy.version, copy.version_source) == (wheels.cudnn_version, "library")

    native.probe_library_versions([copy], TIMEOUT, child_env())
    assert copy.load_error is None
    assert copy.version == wheels.cudnn_version
    assert copy.version_source == "library+call"  # the file, confirmed by the call
    assert copy.cuda_version == CUDNN_BUILT_FOR_CUDA


@pytest.fixture
def lone_cudnn(wheels: reallibs.PipSite, tmp_path: Path) -> Path:
    """A folder holding libcudnn.so.9 alone, without libcudnn_graph.so.9 beside it."""
    if ldconfig_has("libcudnn_graph"):
        pytest.skip("this machine's ldconfig cache has a libcudnn_graph: no trap to spring")
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy2(wheels.libcudnn, lib / "libcudnn.so.9")
    return lib


def test_cudnn_without_graph_library_aborts_the_child_not_the_parent(
    lone_cudnn: Path, wheels: reallibs.PipSite
) -> None:
    scope = SearchScope(
        env={"LD_LIBRARY_PATH": str(lone_cudnn)}, use_ldconfig=False, system_dirs=()
    )
    broken = _only(find_copies("cudnn", scope))
    assert broken.path == str(lone_cudnn / "libcudnn.so.9")
    assert broken.origin == "ld_library_path" and broken.on_loader_path
    whole = _only(find_copies("cudnn", _site_scope(wheels.site)))

    native.probe_library_versions(
        [broken, whole], TIMEOUT, child_env(LD_LIBRARY_PATH=str(lone_cudnn))
    )
    # cuDNN 9's loader calls abort(): "Invalid handle. Cannot load symbol cudnnGetVersion".
    assert broken.load_error is not None
    assert "SIGABRT" in broken.load_error
    assert "cudnnGetVersion" in broken.load_error
    assert broken.cuda_version is None
    # The crash cost that copy alone: this process, and the probe of the whole copy, carry on.
    assert whole.load_error is None
    assert (whole.version, whole.version_source) == (wheels.cudnn_version, "library+call")


def test_cudnn_version_from_header_beside_a_broken_copy(
    lone_cudnn: Path, wheels: reallibs.PipSite
) -> None:
    include = lone_cudnn.parent / "include"
    include.mkdir()
    shutil.copy2(wheels.cudnn_header, include / "cudnn_version.h")
    scope = SearchScope(
        env={"LD_LIBRARY_PATH": str(lone_cudnn)}, use_ldconfig=False, system_dirs=()
    )
    copy = _only(find_copies("cudnn", scope))
    assert (copy.version, copy.version_source) == (three_parts(wheels.cudnn_version), "header")

    native.probe_library_versions([copy], TIMEOUT, child_env(LD_LIBRARY_PATH=str(lone_cudnn)))
    assert copy.load_error is not None and "SIGABRT" in copy.load_error
    assert (copy.version, copy.version_source) == (three_parts(wheels.cudnn_version), "header")


def _ld_scope(folder: Path) -> SearchScope:
    return SearchScope(env={"LD_LIBRARY_PATH": str(folder)}, use_ldconfig=False, system_dirs=())


def test_cudnn_9_version_read_from_its_files_without_header_suffix_or_wheel(
    wheels: reallibs.PipSite, tmp_path: Path
) -> None:
    # A copy as a tarball or a hand-made folder leaves it: libcudnn.so.9 with no version in its
    # name, no cudnn_version.h, no pip RECORD. The expected version is the wheel's METADATA.
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):
        shutil.copy2(wheels.libcudnn.parent / name, tmp_path / name)
    copy = _only(find_copies("cudnn", _ld_scope(tmp_path)))
    assert (copy.version, copy.version_source) == (wheels.cudnn_version, "library")
    assert wheels.cudnn_version == "9.28.0.42"  # the version reallibs asks pip for


def test_cudnn_8_version_read_from_its_ops_library(
    cudnn8_wheel: reallibs.PipSite, tmp_path: Path
) -> None:
    lib = cudnn8_wheel.site / "nvidia" / "cudnn" / "lib"
    for name in ("libcudnn.so.8", "libcudnn_ops_infer.so.8"):
        shutil.copy2(lib / name, tmp_path / name)
    copy = _only(find_copies("cudnn", _ld_scope(tmp_path)))
    assert copy.version == cudnn8_wheel.versions["nvidia-cudnn-cu12"] == "8.9.2.26"
    assert copy.version_source == "library"


# --- the command, end to end ----------------------------------------------------------------


FAIL_LINE = re.compile(r"^  (✗|x) (.*)$")


def test_doctor_json_with_debian_driver_libraries(
    debian: reallibs.DebianDriver,
    no_nvidia_here: None,
    gpucheck: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    proc = gpucheck("doctor", "--json", env={"LD_LIBRARY_PATH": str(debian.lib_dir)})
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    findings = {f["id"]: f for f in report["findings"]}
    first_fail = next(f for f in report["findings"] if f["status"] == "fail")
    assert first_fail["id"] == "system.gpu-present"
    assert "no nvidia gpu" in first_fail["title"].lower()
    assert findings["driver.nvml"]["status"] == "skip"
    nvml_facts = report["snapshot"]["nvml"]
    assert in_dir(nvml_facts["library_path"], debian.lib_dir)
    assert nvml_facts["init_error"] is None


def test_doctor_text_with_debian_driver_libraries(
    debian: reallibs.DebianDriver,
    no_nvidia_here: None,
    gpucheck: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    proc = gpucheck("doctor", env={"LD_LIBRARY_PATH": str(debian.lib_dir), "COLUMNS": "200"})
    assert proc.returncode == 1, proc.stderr
    failing = [m.group(2) for line in proc.stdout.splitlines() if (m := FAIL_LINE.match(line))]
    assert failing, proc.stdout
    assert failing[0].endswith("[system.gpu-present]"), proc.stdout
    assert "no nvidia gpu" in failing[0].lower()
    assert not any("driver.nvml" in line for line in failing), proc.stdout


def test_snapshot_with_debian_driver_libraries(
    debian: reallibs.DebianDriver,
    no_nvidia_here: None,
    gpucheck: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    proc = gpucheck("snapshot", env={"LD_LIBRARY_PATH": str(debian.lib_dir)})
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(proc.stdout)
    assert in_dir(snap["nvml"]["library_path"], debian.lib_dir)
    assert snap["nvml"]["init_skipped_reason"]
    driver = snap["cuda"]["driver"]
    assert driver["driver_version"] == expected_driver_cuda(debian)
    assert in_dir(driver["library_path"], debian.lib_dir)
    assert driver["init_skipped_reason"]


def test_deep_pass_is_not_run_where_cuda_init_would_change_the_machine(
    debian: reallibs.DebianDriver, no_nvidia_here: None, gpucheck: Any
) -> None:
    """A real libcuda is loadable but no kernel module is loaded: importing a framework and
    asking for its GPUs would run cuInit (as root: load modules, create nodes), so --deep
    records why it did not run, and the default pass still does."""
    result = gpucheck("doctor", "--json", "--deep", env={"LD_LIBRARY_PATH": str(debian.lib_dir)})
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["snapshot"]["deep"] is False
    run = next(p for p in data["snapshot"]["probes"] if p["name"] == "frameworks_deep")
    assert run["status"] == "skipped"
    assert "kernel module is not loaded" in run["error"]
    assert all(e["runtimes"] == [] for e in data["snapshot"]["environments"])


def test_python_option_scans_that_environments_pip_libraries(
    wheels: reallibs.PipSite, tmp_path: Path, gpucheck: Any
) -> None:
    """`--python` points at another environment: its pip nvidia-* libraries are the ones that
    matter, and gpucheck's own environment's are not scanned."""
    import sys as _sys

    venv = tmp_path / "env"
    subprocess.run([_sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python3*/site-packages")
    (site / "nvidia").symlink_to(wheels.site / "nvidia", target_is_directory=True)
    for dist_info in wheels.site.glob("*.dist-info"):
        shutil.copytree(dist_info, site / dist_info.name)
    result = gpucheck("snapshot", "--python", str(venv / "bin" / "python"))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    pip = [c for c in data["cudnn"]["libraries"] if c["origin"] == "pip"]
    assert [c["package"] for c in pip] == [f"nvidia-cudnn-cu12 {wheels.cudnn_version}"]
    assert pip[0]["path"].startswith(str(site))
    runtimes = [c["package"] for c in data["cuda"]["runtimes"] if c["origin"] == "pip"]
    assert runtimes == [f"nvidia-cuda-runtime-cu12 {wheels.cudart_version}"]
