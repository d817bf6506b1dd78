"""The probes against real NVIDIA libraries, on a machine without an NVIDIA GPU or driver: NVML
and the CUDA driver API here, the runtime, cuDNN and the command end to end in
test_probes_reallibs_wheels.py (the fixtures in reallibs_fixtures.py).

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
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import reallibs
from support.reallibs_fixtures import (
    CUDA_ERROR_NO_DEVICE,
    NVML_ERROR_DRIVER_NOT_LOADED,
    TIMEOUT,
    child_env,
    device_nodes,
    expected_driver_cuda,
    in_dir,
    ldconfig_has,
)

from gpucheck.child import run as child
from gpucheck.probes import native, nvml

pytestmark = pytest.mark.reallibs


@pytest.fixture(autouse=True)
def _no_device_nodes_created() -> Iterator[None]:
    before = device_nodes()
    yield
    created = device_nodes() - before
    assert not created, f"the test created device nodes: {sorted(created)}"


# --- NVML ---------------------------------------------------------------------------------


def test_nvml_init_in_user_namespace_reports_driver_not_loaded(
    debian: reallibs.DebianDriver, userns_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    nvidiactl = os.path.exists("/dev/nvidiactl")
    monkeypatch.setattr(
        nvml, "run_script", functools.partial(child.run_script, python=userns_python)
    )
    facts, run = nvml.probe_nvml(TIMEOUT, child_env(LD_LIBRARY_PATH=str(debian.lib_dir)), init=True)
    assert os.path.exists("/dev/nvidiactl") == nvidiactl
    assert run.status == "ok", run.error
    assert facts.init_error is not None
    assert (facts.init_error.name, facts.init_error.code) == (
        "DriverNotLoaded",
        NVML_ERROR_DRIVER_NOT_LOADED,
    )
    assert in_dir(facts.library_path, debian.lib_dir)
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
        env=child_env(LD_LIBRARY_PATH=str(debian.lib_dir)),
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
    assert in_dir(str(header["library_path"]), debian.lib_dir)


def test_nvml_without_init_loads_the_debian_library(debian: reallibs.DebianDriver) -> None:
    from importlib.metadata import version

    facts, run = nvml.probe_nvml(
        TIMEOUT, child_env(LD_LIBRARY_PATH=str(debian.lib_dir)), init=False
    )
    assert run.status == "ok", run.error
    assert facts.init_error is None
    assert facts.init_skipped_reason
    assert facts.library_path is not None
    assert in_dir(facts.library_path, debian.lib_dir)
    assert os.path.realpath(facts.library_path).endswith(f"libnvidia-ml.so.{debian.version}")
    assert facts.binding_version == version("nvidia-ml-py")
    assert facts.driver_version is None and facts.gpus == []


def test_nvml_library_not_found(tmp_path: Path) -> None:
    if ldconfig_has("libnvidia-ml"):
        pytest.skip("this machine's ldconfig cache has a libnvidia-ml")
    empty = tmp_path / "empty"
    empty.mkdir()
    facts, run = nvml.probe_nvml(TIMEOUT, child_env(LD_LIBRARY_PATH=str(empty)), init=False)
    assert run.status == "ok", run.error
    assert facts.init_error is not None
    assert facts.init_error.name == "LibraryNotFound"
    assert facts.library_path is None


# --- CUDA driver API ------------------------------------------------------------------------


def test_cuda_driver_without_init(debian: reallibs.DebianDriver) -> None:
    facts, run = native.probe_cuda_driver(
        TIMEOUT, child_env(LD_LIBRARY_PATH=str(debian.lib_dir)), init=False
    )
    assert run.status == "ok", run.error
    assert facts.load_error is None
    # cuDriverGetVersion needs no init: libcuda 535's own answer, the newest CUDA it runs,
    # which Debian's package also declares (Provides: libcuda-12.2-1 -> 12020).
    assert facts.driver_version == expected_driver_cuda(debian)
    assert in_dir(facts.library_path, debian.lib_dir)
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
        TIMEOUT, child_env(LD_LIBRARY_PATH=str(debian.lib_dir)), init=True
    )
    assert os.path.exists("/dev/nvidiactl") == nvidiactl
    assert run.status == "ok", run.error
    assert facts.init_result == CUDA_ERROR_NO_DEVICE
    assert facts.init_error_name == "CUDA_ERROR_NO_DEVICE"
    assert facts.init_skipped_reason is None
    assert facts.driver_version == expected_driver_cuda(debian)
    assert in_dir(facts.library_path, debian.lib_dir)
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
        env=child_env(LD_LIBRARY_PATH=str(debian.lib_dir)),
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
