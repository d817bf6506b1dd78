"""The deep framework probe on fake tensorflow, jax and cupy packages (TensorFlow's loader
warnings, a hang in device listing, devices named), and the child script itself: process maps,
bounded warnings, Python 3.8, the standard library only."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import require_python38
from support.deep_probe import (
    FAKE_TORCH,
    SCRIPT,
    TF_BANNER,
    TF_LOADER_LINES,
    fake_env,
    run_deep,
    runtime_of,
)

from gpucheck.model.environments import SmokeTest
from gpucheck.probes.scripts import deep_capture as cap
from gpucheck.probes.scripts import framework_deep as deep

# --- fakes: tensorflow ----------------------------------------------------------------------------

FAKE_TENSORFLOW = """
import os, time, types

__version__ = "2.15.1"

def _devices(kind):
    return []

config = types.SimpleNamespace(
    list_physical_devices=lambda kind=None: _devices(kind),
    set_soft_device_placement=lambda value: None,
)
sysconfig = types.SimpleNamespace(
    get_build_info=lambda: {
        "cuda_version": "12.2",
        "cudnn_version": "8",
        "cuda_compute_capabilities": ["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"],
        "is_cuda_build": True,
    }
)
test = types.SimpleNamespace(is_built_with_cuda=lambda: True)
"""


def test_tensorflow_loader_warnings_are_captured(tmp_path: Path) -> None:
    lines = "".join(f"os.write(2, {(line + chr(10)).encode()!r})\n" for line in TF_LOADER_LINES)
    banner = f"os.write(2, {(TF_BANNER + chr(10)).encode()!r})\n"
    body = FAKE_TENSORFLOW + banner + lines
    env = fake_env(tmp_path, "tensorflow", body)
    result = run_deep("tensorflow", env)
    assert result.ok, result.describe(60)
    runtime = runtime_of(result)
    assert runtime.status == "ok" and runtime.version == "2.15.1"
    assert runtime.cuda_available is False and runtime.device_count == 0
    assert runtime.devices == [] and runtime.smoke_tests == []
    assert runtime.cuda_version == "12.2" and runtime.cudnn_version == "8"
    assert runtime.arch_list == ["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"]
    assert runtime.warnings == list(TF_LOADER_LINES)  # the banner is dropped
    # The parent still sees them as the child's own stderr too.
    assert "Skipping registering GPU devices..." in result.message


def test_tensorflow_cpu_build_has_no_cuda_version(tmp_path: Path) -> None:
    body = FAKE_TENSORFLOW + "test.is_built_with_cuda = lambda: False\n"
    runtime = runtime_of(run_deep("tensorflow", fake_env(tmp_path, "tensorflow", body)))
    assert runtime.status == "ok"
    assert runtime.cuda_version is None and runtime.cudnn_version is None
    assert runtime.arch_list == []


def test_hang_in_device_listing_is_cut_at_the_timeout(tmp_path: Path) -> None:
    body = FAKE_TENSORFLOW + textwrap.dedent(
        """
        def _devices(kind):
            time.sleep(120)  # cuInit waiting on a GPU that fell off the bus
        """
    )
    start = time.monotonic()
    result = run_deep("tensorflow", fake_env(tmp_path, "tensorflow", body), timeout=3)
    assert time.monotonic() - start < 30
    assert result.status == "timeout"
    assert result.last_step == "tf.config.list_physical_devices"
    assert result.describe(3) == "timed out after 3 s in tf.config.list_physical_devices"
    runtime = runtime_of(result)
    assert runtime.version == "2.15.1" and runtime.cuda_version is None  # import record only


def test_tensorflow_gpus_are_listed(tmp_path: Path) -> None:
    """With GPUs the smoke test needs numpy; without it each test fails with a clear line."""
    body = FAKE_TENSORFLOW + textwrap.dedent(
        """
        class _Gpu:
            def __init__(self, i):
                self.name = "/physical_device:GPU:%d" % i
        def _devices(kind):
            return [_Gpu(0), _Gpu(1)] if kind == "GPU" else []
        """
    )
    env = fake_env(tmp_path, "tensorflow", body)
    (tmp_path / "site" / "numpy").mkdir()
    (tmp_path / "site" / "numpy" / "__init__.py").write_text("raise ImportError('no numpy here')")
    runtime = runtime_of(run_deep("tensorflow", env))
    assert runtime.devices == ["/physical_device:GPU:0", "/physical_device:GPU:1"]
    assert runtime.cuda_available is True and runtime.device_count == 2
    assert [(t.device, t.ok, t.error) for t in runtime.smoke_tests] == [
        ("/GPU:0", False, "ImportError: no numpy here"),
        ("/GPU:1", False, "ImportError: no numpy here"),
    ]


# --- fakes: jax and cupy --------------------------------------------------------------------------


def test_jax_on_cpu(tmp_path: Path) -> None:
    body = """
    import logging, types
    __version__ = "0.4.30"
    class _Device:
        platform = "cpu"
        def __str__(self):
            return "TFRT_CPU_0"
    def default_backend():
        logging.getLogger("jax._src.xla_bridge").warning(
            "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not "
            "installed. Falling back to cpu.")
        return "cpu"
    def devices():
        return [_Device()]
    """
    result = run_deep("jax", fake_env(tmp_path, "jax", body))
    assert result.ok, result.describe(60)
    runtime = runtime_of(result)
    assert runtime.status == "ok" and runtime.version == "0.4.30"
    assert runtime.backend == "cpu" and runtime.cuda_available is False
    assert runtime.devices == ["TFRT_CPU_0"] and runtime.device_count == 1
    assert runtime.smoke_tests == []  # CPU devices are not smoke-tested
    assert any("CUDA-enabled jaxlib is not installed" in w for w in runtime.warnings)


def test_cupy_versions_and_no_device(tmp_path: Path) -> None:
    body = """
    import types
    __version__ = "13.3.0"
    class CUDARuntimeError(RuntimeError):
        pass
    def _count():
        raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
    cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(
        runtimeGetVersion=lambda: 12040,
        driverGetVersion=lambda: 12020,
        getDeviceCount=_count,
    ))
    """
    result = run_deep("cupy", fake_env(tmp_path, "cupy", body))
    assert result.ok, result.describe(60)
    runtime = runtime_of(result)
    assert runtime.version == "13.3.0"
    assert runtime.cuda_version == "12.4" and runtime.driver_version == "12.2"
    assert runtime.status == "error"
    assert runtime.error == (
        "cupy.cuda.runtime.getDeviceCount: CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable "
        "device is detected"
    )
    assert runtime.cuda_available is False and runtime.device_count is None
    assert runtime.smoke_tests == []


def test_cupy_devices_are_named(tmp_path: Path) -> None:
    body = """
    import types
    __version__ = "13.3.0"
    cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(
        runtimeGetVersion=lambda: 12060,
        driverGetVersion=lambda: 0,  # no driver
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda i: {"name": b"NVIDIA A100-SXM4-40GB", "major": 8},
    ))
    """
    env = fake_env(tmp_path, "cupy", body)
    (tmp_path / "site" / "numpy").mkdir()
    (tmp_path / "site" / "numpy" / "__init__.py").write_text("raise ImportError('no numpy here')")
    runtime = runtime_of(run_deep("cupy", env))
    assert runtime.cuda_version == "12.6" and runtime.driver_version is None
    assert runtime.devices == ["NVIDIA A100-SXM4-40GB"] and runtime.cuda_available is True
    assert [t.device for t in runtime.smoke_tests] == ["cuda:0"]
    assert runtime.smoke_tests[0] == SmokeTest(
        device="cuda:0",
        ok=False,
        error="ImportError: no numpy here",
        seconds=runtime.smoke_tests[0].seconds,
    )


# --- the script itself ----------------------------------------------------------------------------


def test_loaded_libraries_come_from_the_process_maps(tmp_path: Path) -> None:
    """Files named like CUDA libraries, mapped by the fake at import, are named; others not."""
    if not Path("/proc/self/maps").exists():
        pytest.skip("needs /proc/self/maps (Linux)")
    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    names = ("libcudart.so.12", "libcublasLt.so.12", "libcudnn_graph.so.9", "libm-not-cuda.so")
    for name in names:
        (lib_dir / name).write_bytes(b"\x7fELF" + b"\0" * 4092)
    paths = [str(lib_dir / name) for name in names]
    body = FAKE_TORCH + textwrap.dedent(
        f"""
        import mmap
        _MAPS = []
        for _path in {paths!r}:
            with open(_path, "rb") as _file:
                _MAPS.append(mmap.mmap(_file.fileno(), 0, prot=mmap.PROT_READ))
        """
    )
    runtime = runtime_of(run_deep("torch", fake_env(tmp_path, "torch", body)))
    assert sorted(runtime.loaded_libraries) == sorted(paths[:3])


def test_warnings_are_bounded_and_keep_what_matters() -> None:
    noise = [f"I0000 chatter line {i}" for i in range(200)]
    relevant = [f"W could not load dynamic library 'libcudnn_{i}.so.9'" for i in range(30)]
    text = "\n".join(noise[:100] + relevant + noise[100:] + [TF_BANNER, "", "x" * 2000])
    kept = cap.select_warnings(text)
    assert len(kept) == cap.MAX_WARNINGS
    assert all(line in kept for line in relevant)
    assert TF_BANNER not in kept
    assert max(len(line) for line in kept) <= 500  # characters: one line of an error
    many = cap.select_warnings("\n".join(f"GPU line {i}" for i in range(80)))
    assert many[:25] == [f"GPU line {i}" for i in range(25)]
    assert many[25:] == [f"GPU line {i}" for i in range(55, 80)]
    assert cap.select_warnings("same\nsame\n\x00odd\x07\n") == ["same", "?odd?"]


def test_version_texts() -> None:
    assert deep.version_text(12040) == "12.4" and deep.version_text(11080) == "11.8"
    assert deep.version_text(0) is None and deep.version_text(None) is None
    assert deep.cudnn_text(8907) == "8.9.7" and deep.cudnn_text(90100) == "9.1.0"
    assert deep.cudnn_text(None) is None
    assert deep.nccl_text((2, 18, 1)) == "2.18.1" and deep.nccl_text(2708) == "2.7.8"
    assert deep.nccl_text(21903) == "2.19.3"


def test_runs_on_python_3_8(tmp_path: Path) -> None:
    env = fake_env(tmp_path, "torch", FAKE_TORCH)
    result = run_deep("torch", env, python=require_python38())
    assert result.ok, f"{result.describe(60)}\n{result.message}"
    runtime = runtime_of(result)
    assert runtime.status == "ok" and runtime.devices == ["NVIDIA H100 80GB HBM3", "Tesla K80"]
    assert [t.ok for t in runtime.smoke_tests] == [True, False]
    tf_env = fake_env(
        tmp_path / "tf",
        "tensorflow",
        FAKE_TENSORFLOW
        + "os.write(2, b'Could not find cuda drivers on your machine, GPU will not be used.\\n')\n",
    )
    tf = runtime_of(run_deep("tensorflow", tf_env, python=require_python38()))
    assert tf.warnings == ["Could not find cuda drivers on your machine, GPU will not be used."]


def test_child_uses_only_the_standard_library() -> None:
    text = SCRIPT.read_text()
    imports = [line for line in text.splitlines() if line.startswith(("import", "from"))]
    assert not any("gpucheck" in line for line in imports)
    check = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import ast; ast.parse(open({str(SCRIPT)!r}).read(), feature_version=(3, 8))",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr


def test_a_flood_on_stderr_is_passed_on_and_bounded(tmp_path: Path) -> None:
    """Megabytes of stderr reach the parent whole; the record keeps MAX_WARNINGS lines of it."""
    body = FAKE_TORCH + textwrap.dedent(
        """
        for _i in range(100000):
            sys.stderr.write("W0000 flood line %d about the GPU driver\\n" % _i)
        sys.stderr.flush()
        """
    )
    start = time.monotonic()
    result = run_deep("torch", fake_env(tmp_path, "torch", body))
    assert time.monotonic() - start < 20  # no emit waits for a marker it cannot see
    assert result.ok, result.describe(60)
    assert result.message.endswith("W0000 flood line 99999 about the GPU driver")
    runtime = runtime_of(result)
    assert len(runtime.warnings) == cap.MAX_WARNINGS
    assert runtime.warnings[0] == "W0000 flood line 0 about the GPU driver"
    assert len(runtime.smoke_tests) == 2
