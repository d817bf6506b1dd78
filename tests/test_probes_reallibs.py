"""The probes against real NVIDIA libraries, on a machine without an NVIDIA GPU or driver.

The libraries are fetched by the test session itself (see reallibs.py): Debian bookworm's
libnvidia-ml1 and libcuda1 (the 535 driver branch), and the nvidia-cuda-runtime-cu12 and
nvidia-cudnn-cu12 pip wheels. Expected versions are the ones the fetch recorded (the .deb
file names and fields, the wheels' metadata), not constants.

Safety: as root, nvmlInit and cuInit with no kernel module loaded create /dev/nvidia* nodes
(or try to load the module). Calls that initialise the driver therefore run only in an
unprivileged user namespace (`unshare -U`), where the process is nobody; and every test checks
that /dev/nvidia* is the same after it as before.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import reallibs

from gpucheck.model.snapshot import LibraryCopy
from gpucheck.probes import child, native, nvml
from gpucheck.probes.libraries import SearchScope, find_copies

pytestmark = pytest.mark.reallibs

T = TypeVar("T")
TIMEOUT = 60.0  # seconds; each of these probes takes well under one
CUDA_ERROR_NO_DEVICE = 100  # cuda.h: what cuInit returns where no GPU can be opened
NVML_ERROR_DRIVER_NOT_LOADED = 9  # nvml.h
# cuDNN's own answer to cudnnGetCudartVersion(): the CUDA 12 build of cuDNN 9.28.0 is built
# against CUDA 12.9 (its major is also in the wheel's name, -cu12).
CUDNN_BUILT_FOR_CUDA = "12.9"


# --- fixtures ---------------------------------------------------------------------------------


def _obtain(fetch: Callable[[], T]) -> T:
    try:
        return fetch()
    except reallibs.Unavailable as exc:
        problem, unavailable = str(exc), True
    except reallibs.FetchError as exc:
        problem, unavailable = str(exc), False
    # Outside the except blocks, so that the report shows no chained traceback.
    if unavailable:
        pytest.skip(problem)
    if reallibs.offline():
        pytest.skip(f"{reallibs.OFFLINE_ENV}=1 and the fetch failed: {problem}")
    pytest.fail(
        f"could not fetch the real NVIDIA libraries: {problem}\n(set {reallibs.OFFLINE_ENV}=1 "
        "to skip these tests where the package mirrors cannot be reached)",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def debian() -> reallibs.DebianDriver:
    return _obtain(reallibs.debian_driver)


@pytest.fixture(scope="session")
def wheels() -> reallibs.PipSite:
    return _obtain(reallibs.pip_site)


def _device_nodes() -> set[str]:
    return set(glob.glob("/dev/nvidia*"))


@pytest.fixture(autouse=True)
def _no_device_nodes_created() -> Iterator[None]:
    before = _device_nodes()
    yield
    created = _device_nodes() - before
    assert not created, f"the test created device nodes: {sorted(created)}"


def _nvidia_on_this_machine() -> str | None:
    """Why this machine's own NVIDIA driver or GPU would change the answers; None if none."""
    if os.path.exists("/proc/driver/nvidia"):
        return "the nvidia kernel module is loaded"
    for vendor in glob.glob("/sys/bus/pci/devices/*/vendor"):
        try:
            if Path(vendor).read_text().strip().lower() == "0x10de":
                return f"an NVIDIA PCI device is at {Path(vendor).parent.name}"
        except OSError:
            continue
    return None


@pytest.fixture(scope="session")
def no_nvidia_here() -> None:
    reason = _nvidia_on_this_machine()
    if reason:
        pytest.skip(f"expects a machine without NVIDIA GPU or driver, but {reason}")


@pytest.fixture(scope="session")
def userns_python(tmp_path_factory: pytest.TempPathFactory, no_nvidia_here: None) -> str:
    """A `python` that runs in a new unprivileged user namespace, for run_script(python=...)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare not found: driver init is not run outside a user namespace")
    check = subprocess.run([unshare, "-U", "true"], capture_output=True, text=True, timeout=30)
    if check.returncode != 0:
        pytest.skip(f"unshare -U true fails here: {check.stderr.strip()}")
    wrapper = tmp_path_factory.mktemp("userns") / "python"
    wrapper.write_text(
        f'#!/bin/sh\nexec {shlex.quote(unshare)} -U {shlex.quote(sys.executable)} "$@"\n'
    )
    wrapper.chmod(0o755)
    uid = subprocess.run(
        [str(wrapper), "-c", "import os; print(os.geteuid())"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert int(uid) != 0, "the user-namespace wrapper still runs as root"
    return str(wrapper)


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without loader or GPU variables, plus `extra`."""
    drop = {"LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def _in_dir(path: str | None, directory: Path) -> bool:
    return path is not None and Path(path).resolve().parent == directory.resolve()


def _cuda_number(version: str) -> int:
    """'12.2' -> 12020, the encoding of cuDriverGetVersion and cudaRuntimeGetVersion."""
    major, minor = (int(p) for p in version.split(".")[:2])
    return major * 1000 + minor * 10


def _expected_driver_cuda(debian: reallibs.DebianDriver) -> int:
    assert debian.cuda_version, "libcuda1's Provides field lists no libcuda-X.Y-1"
    return _cuda_number(debian.cuda_version)


def _ldconfig_has(fragment: str) -> bool:
    ldconfig = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.access(p, os.X_OK)), None
    )
    if ldconfig is None:
        return False
    out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=30).stdout
    return fragment in out


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _three_parts(version: str) -> str:
    return ".".join(version.split(".")[:3])


# --- NVML ---------------------------------------------------------------------------------


def test_nvml_init_in_user_namespace_reports_driver_not_loaded(
    debian: reallibs.DebianDriver, userns_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    nvidiactl = os.path.exists("/dev/nvidiactl")
    monkeypatch.setattr(
        nvml, "run_script", functools.partial(child.run_script, python=userns_python)
    )
    facts, run = nvml.probe_nvml(TIMEOUT, _env(LD_LIBRARY_PATH=str(debian.lib_dir)), init=True)
    assert os.path.exists("/dev/nvidiactl") == nvidiactl
    assert run.status == "ok", run.error
    assert facts.init_error is not None
    assert (facts.init_error.name, facts.init_error.code) == (
        "DriverNotLoaded",
        NVML_ERROR_DRIVER_NOT_LOADED,
    )
    assert _in_dir(facts.library_path, debian.lib_dir)
    assert facts.init_skipped_reason is None
    assert facts.driver_version is None and facts.device_count is None and facts.gpus == []


def test_nvml_child_speaks_the_protocol_with_the_real_library(
    debian: reallibs.DebianDriver, userns_python: str
) -> None:
    """The raw records: the header comes out on stdout, the steps on stderr."""
    result = child.run_script(
        nvml.SCRIPT,
        [json.dumps({"init": True})],
        TIMEOUT,
        python=userns_python,
        env=_env(LD_LIBRARY_PATH=str(debian.lib_dir)),
    )
    assert result.ok, result.describe(TIMEOUT)
    assert [r.get("kind") for r in result.records] == ["header"]
    header = result.records[0]
    assert header["init_error"] == {
        "code": NVML_ERROR_DRIVER_NOT_LOADED,
        "name": "DriverNotLoaded",
        "message": "Driver Not Loaded",
    }
    assert result.last_step == "nvmlInit"
    assert _in_dir(str(header["library_path"]), debian.lib_dir)


def test_nvml_without_init_loads_the_debian_library(debian: reallibs.DebianDriver) -> None:
    from importlib.metadata import version

    facts, run = nvml.probe_nvml(TIMEOUT, _env(LD_LIBRARY_PATH=str(debian.lib_dir)), init=False)
    assert run.status == "ok", run.error
    assert facts.init_error is None
    assert facts.init_skipped_reason
    assert facts.library_path is not None
    assert _in_dir(facts.library_path, debian.lib_dir)
    assert os.path.realpath(facts.library_path).endswith(f"libnvidia-ml.so.{debian.version}")
    assert facts.binding_version == version("nvidia-ml-py")
    assert facts.driver_version is None and facts.gpus == []


def test_nvml_library_not_found(tmp_path: Path) -> None:
    if _ldconfig_has("libnvidia-ml"):
        pytest.skip("this machine's ldconfig cache has a libnvidia-ml")
    empty = tmp_path / "empty"
    empty.mkdir()
    facts, run = nvml.probe_nvml(TIMEOUT, _env(LD_LIBRARY_PATH=str(empty)), init=False)
    assert run.status == "ok", run.error
    assert facts.init_error is not None
    assert facts.init_error.name == "LibraryNotFound"
    assert facts.library_path is None


# --- CUDA driver API ------------------------------------------------------------------------


def test_cuda_driver_without_init(debian: reallibs.DebianDriver) -> None:
    facts, run = native.probe_cuda_driver(
        TIMEOUT, _env(LD_LIBRARY_PATH=str(debian.lib_dir)), init=False
    )
    assert run.status == "ok", run.error
    assert facts.load_error is None
    # cuDriverGetVersion needs no init: libcuda 535's own answer, the newest CUDA it runs,
    # which Debian's package also declares (Provides: libcuda-12.2-1 -> 12020).
    assert facts.driver_version == _expected_driver_cuda(debian)
    assert _in_dir(facts.library_path, debian.lib_dir)
    assert os.path.basename(facts.library_path or "") == f"libcuda.so.{debian.versions['libcuda1']}"
    assert facts.init_skipped_reason
    assert facts.init_result is None and facts.device_count is None


def test_cuda_driver_init_in_user_namespace_finds_no_device(
    debian: reallibs.DebianDriver, userns_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    nvidiactl = os.path.exists("/dev/nvidiactl")
    monkeypatch.setattr(
        native, "run_script", functools.partial(child.run_script, python=userns_python)
    )
    facts, run = native.probe_cuda_driver(
        TIMEOUT, _env(LD_LIBRARY_PATH=str(debian.lib_dir)), init=True
    )
    assert os.path.exists("/dev/nvidiactl") == nvidiactl
    assert run.status == "ok", run.error
    assert facts.init_result == CUDA_ERROR_NO_DEVICE
    assert facts.init_error_name == "CUDA_ERROR_NO_DEVICE"
    assert facts.init_skipped_reason is None
    assert facts.driver_version == _expected_driver_cuda(debian)
    assert _in_dir(facts.library_path, debian.lib_dir)
    assert facts.device_count is None and facts.devices == []


def test_cuda_driver_child_run_directly_under_unshare(
    debian: reallibs.DebianDriver, userns_python: str
) -> None:
    """The child script itself, as `unshare -U python scripts/native.py TASKS` runs it."""
    nvidiactl = os.path.exists("/dev/nvidiactl")
    task = [{"id": "d", "kind": "cuda_driver", "init": True}]
    proc = subprocess.run(
        ["unshare", "-U", sys.executable, str(native.SCRIPT), json.dumps(task)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(LD_LIBRARY_PATH=str(debian.lib_dir)),
        check=False,
    )
    assert os.path.exists("/dev/nvidiactl") == nvidiactl
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["id"] for r in records] == ["d"]
    result = records[0]["result"]
    assert result["init_result"] == CUDA_ERROR_NO_DEVICE
    assert result["init_error_name"] == "CUDA_ERROR_NO_DEVICE"
    assert "@ task d" in proc.stderr


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

    native.probe_library_versions([copy], TIMEOUT, _env())
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
    scope = SearchScope(env=_env(LD_LIBRARY_PATH=str(lib)), use_ldconfig=False, system_dirs=())
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
    assert (early.version, early.version_source) == (_major_minor(wheels.cudart_version), "call")
    assert (late.version, late.version_source) == (wheels.cudart_version, "metadata+call")


def test_cudart_version_call_itself(wheels: reallibs.PipSite) -> None:
    result = child.run_script(
        native.SCRIPT,
        [json.dumps([{"id": "r", "kind": "cudart", "path": str(wheels.libcudart)}])],
        TIMEOUT,
        env=_env(),
    )
    assert result.ok, result.describe(TIMEOUT)
    assert native._task_result(result) == {"version": _major_minor(wheels.cudart_version)}


def test_cudnn_from_pip_wheel(wheels: reallibs.PipSite) -> None:
    copy = _only(find_copies("cudnn", _site_scope(wheels.site)))
    assert copy.path == str(wheels.libcudnn)
    assert copy.origin == "pip"
    assert copy.package == f"nvidia-cudnn-cu12 {wheels.cudnn_version}"
    # The wheel ships include/cudnn_version.h beside lib/: read before anything is loaded.
    assert (copy.version, copy.version_source) == (_three_parts(wheels.cudnn_version), "header")

    native.probe_library_versions([copy], TIMEOUT, _env())
    assert copy.load_error is None
    assert copy.version == _three_parts(wheels.cudnn_version)
    assert copy.version_source == "header+call"  # the header, confirmed by the call
    assert copy.cuda_version == CUDNN_BUILT_FOR_CUDA


@pytest.fixture
def lone_cudnn(wheels: reallibs.PipSite, tmp_path: Path) -> Path:
    """A folder holding libcudnn.so.9 alone, without libcudnn_graph.so.9 beside it."""
    if _ldconfig_has("libcudnn_graph"):
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

    native.probe_library_versions([broken, whole], TIMEOUT, _env(LD_LIBRARY_PATH=str(lone_cudnn)))
    # cuDNN 9's loader calls abort(): "Invalid handle. Cannot load symbol cudnnGetVersion".
    assert broken.load_error is not None
    assert "SIGABRT" in broken.load_error
    assert "cudnnGetVersion" in broken.load_error
    assert broken.cuda_version is None
    # The crash cost that copy alone: this process, and the probe of the whole copy, carry on.
    assert whole.load_error is None
    assert (whole.version, whole.version_source) == (
        _three_parts(wheels.cudnn_version),
        "header+call",
    )


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
    assert (copy.version, copy.version_source) == (_three_parts(wheels.cudnn_version), "header")

    native.probe_library_versions([copy], TIMEOUT, _env(LD_LIBRARY_PATH=str(lone_cudnn)))
    assert copy.load_error is not None and "SIGABRT" in copy.load_error
    assert (copy.version, copy.version_source) == (_three_parts(wheels.cudnn_version), "header")


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
    assert _in_dir(nvml_facts["library_path"], debian.lib_dir)
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
    assert _in_dir(snap["nvml"]["library_path"], debian.lib_dir)
    assert snap["nvml"]["init_skipped_reason"]
    driver = snap["cuda"]["driver"]
    assert driver["driver_version"] == _expected_driver_cuda(debian)
    assert _in_dir(driver["library_path"], debian.lib_dir)
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
