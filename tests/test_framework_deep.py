"""The deep framework probe (`probes/scripts/framework_deep.py`): one framework imported in a child.

A real CPU build of PyTorch, installed by the test session into a cached virtual environment,
shows what a machine without a GPU looks like from inside the framework. Fake packages named
torch / tensorflow / jax / cupy, put first on PYTHONPATH, play the failures that need a GPU to
happen for real: a missing cuDNN at import, a segfault or a hang in the driver, a kernel image
missing for one GPU, TensorFlow's loader warnings, a library spewing bytes on both streams.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import venvs
from conftest import require_python38

from gpucheck.model.decoding import from_dict
from gpucheck.model.environments import FrameworkRuntime, SmokeTest
from gpucheck.probes.child import HERE, ChildResult, run_script
from gpucheck.probes.scripts import deep_capture as cap
from gpucheck.probes.scripts import framework_deep as deep

SCRIPT = HERE / "scripts/framework_deep.py"
TORCH_VERSION = "2.13.0"
TIMEOUT = 120.0  # seconds for one probe run; torch's CPU build imports in one or two


NO_KERNEL_IMAGE = "CUDA error: no kernel image is available for execution on the device"

# Real lines from TensorFlow's C++ loader on machines without a usable CUDA (TF 2.11-2.16).
TF_LOADER_LINES = (
    "2024-03-12 09:14:02.113520: I external/local_tsl/tsl/cuda/cudart_stub.cc:31] Could not "
    "find cuda drivers on your machine, GPU will not be used.",
    "2024-03-12 09:14:04.480716: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2256] "
    "Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above "
    "are installed properly if you would like to use GPU. Follow the guide at "
    "https://www.tensorflow.org/install/gpu for how to download and setup the required libraries "
    "for your platform.",
    "Skipping registering GPU devices...",
    "2023-01-05 10:01:02.345678: W tensorflow/compiler/xla/stream_executor/platform/default/"
    "dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: "
    "cannot open shared object file: No such file or directory",
)
TF_BANNER = (
    "2024-03-12 09:14:02.530102: I tensorflow/core/platform/cpu_feature_guard.cc:210] This "
    "TensorFlow binary is optimized to use available CPU instructions in performance-critical "
    "operations."
)


# --- helpers ----------------------------------------------------------------------------------


def fake_env(tmp_path: Path, name: str, body: str) -> dict[str, str]:
    """An environment whose PYTHONPATH holds a fake package `name` with this __init__.py."""
    site = tmp_path / "site"
    package = site / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    return env


def run_deep(
    framework: str,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    python: str | None = None,
) -> ChildResult:
    return run_script(SCRIPT, [framework], timeout, python=python, env=env)


def last_facts(result: ChildResult) -> dict[str, Any]:
    records = [r for r in result.records if r.get("kind") == "runtime"]
    assert records, f"no runtime record; stderr: {result.message}"
    facts = records[-1]["facts"]
    assert isinstance(facts, dict)
    return facts


def runtime_of(result: ChildResult) -> FrameworkRuntime:
    """The last record, decoded by gpucheck's own strict reader."""
    return from_dict(FrameworkRuntime, last_facts(result))


# --- a real torch: the CPU wheel ----------------------------------------------------------------


@pytest.fixture(scope="session")
def torch_python() -> Path:
    return venvs.require("torch-2.13.0")


def test_real_torch_cpu_build(torch_python: Path) -> None:
    start = time.monotonic()
    result = run_deep("torch", timeout=TIMEOUT, python=str(torch_python))
    elapsed = time.monotonic() - start
    assert result.ok, result.describe(TIMEOUT)
    runtime = runtime_of(result)
    assert runtime.framework == "torch"
    assert runtime.status == "ok" and runtime.error is None
    assert runtime.version == f"{TORCH_VERSION}+cpu"
    assert runtime.import_seconds is not None and 0 < runtime.import_seconds < elapsed
    assert runtime.cuda_available is False
    assert runtime.device_count == 0 and runtime.devices == []
    assert runtime.arch_list == []  # a CPU build compiles no CUDA architecture
    assert runtime.cuda_version is None
    assert runtime.cudnn_version is None and runtime.nccl_version is None
    assert runtime.smoke_tests == []
    assert runtime.loaded_libraries == []  # no CUDA library anywhere in a CPU build
    # One record after each stage, every one of them whole.
    records = [r for r in result.records if r.get("kind") == "runtime"]
    assert len(records) >= 3
    for record in records:
        assert from_dict(FrameworkRuntime, record["facts"]).version == f"{TORCH_VERSION}+cpu"
    assert result.last_step == "torch.backends.cudnn.version"


# --- fakes: failures at import ------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["torch", "tensorflow", "jax", "cupy"])
def test_missing_cuda_library_at_import_is_an_import_error(tmp_path: Path, framework: str) -> None:
    env = fake_env(
        tmp_path,
        framework,
        """
        raise ImportError("libcudnn.so.9: cannot open shared object file: No such file or directory")
        """,
    )
    result = run_deep(framework, env)
    assert result.ok, result.describe(60)
    runtime = runtime_of(result)
    assert runtime.framework == framework
    assert runtime.status == "import_error"
    assert runtime.error == (
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    )
    assert runtime.import_seconds is not None and runtime.import_seconds > 0
    assert runtime.version is None and runtime.smoke_tests == []
    assert result.last_step == f"import {framework}"


def test_framework_not_installed(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path)  # nothing there; and .venv has no cupy
    runtime = runtime_of(run_deep("cupy", env))
    assert runtime.status == "import_error"
    assert runtime.error == "ModuleNotFoundError: No module named 'cupy'"


def test_oserror_and_other_exceptions_at_import(tmp_path: Path) -> None:
    env = fake_env(tmp_path, "jax", "raise OSError('libcuda.so.1: wrong ELF class: ELFCLASS32')")
    runtime = runtime_of(run_deep("jax", env))
    assert runtime.status == "import_error"
    assert runtime.error == "OSError: libcuda.so.1: wrong ELF class: ELFCLASS32"
    env = fake_env(
        tmp_path / "other",
        "jax",
        "raise RuntimeError('jaxlib is version 0.4.1, but this version\\nof jax requires 0.4.14')",
    )
    runtime = runtime_of(run_deep("jax", env))
    assert runtime.status == "error"
    assert runtime.error == "import jax: RuntimeError: jaxlib is version 0.4.1, but this version"


def test_unknown_framework() -> None:
    result = run_deep("mxnet")
    assert result.returncode == 2
    runtime = runtime_of(result)
    assert runtime.status == "error" and runtime.framework == "mxnet"
    assert runtime.error is not None and "unknown framework 'mxnet'" in runtime.error


# --- fakes: torch -------------------------------------------------------------------------------

FAKE_TORCH = """
import os, sys, types

__version__ = "2.5.1+cu124"
version = types.SimpleNamespace(cuda="12.4")
float32 = "float32"
DEVICES = ["NVIDIA H100 80GB HBM3", "Tesla K80"]
BROKEN = "cuda:1"  # sm_37: not in this build

class _C:
    @staticmethod
    def _cuda_getArchFlags():
        return "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90 compute_90"

    _nccl_version = object()

class device:
    def __init__(self, spec):
        self.spec = spec

class Tensor:
    def __init__(self, where="cpu"):
        self.where = where
    def reshape(self, *shape):
        return self
    def div(self, value):
        return self
    def t(self):
        return self
    def to(self, dev):
        return Tensor(dev.spec)
    def cpu(self):
        return Tensor("cpu")
    def matmul(self, other):
        if self.where == BROKEN:
            raise RuntimeError(
                "CUDA error: no kernel image is available for execution on the device\\n"
                "CUDA kernel errors might be asynchronously reported at some other API call"
            )
        return Tensor(self.where)

def arange(n, dtype=None):
    return Tensor()

def allclose(a, b, rtol=None, atol=None):
    return True

def _is_available():
    return True

cuda = types.SimpleNamespace(
    is_available=lambda: _is_available(),
    device_count=lambda: len(DEVICES),
    get_device_name=lambda i: DEVICES[i],
    nccl=types.SimpleNamespace(version=lambda: (2, 21, 5)),
)
backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 90100))
"""


def test_smoke_test_fails_on_one_device_only(tmp_path: Path) -> None:
    env = fake_env(tmp_path, "torch", FAKE_TORCH)
    result = run_deep("torch", env)
    assert result.ok, result.describe(60)
    runtime = runtime_of(result)
    assert runtime.status == "ok" and runtime.error is None
    assert runtime.version == "2.5.1+cu124" and runtime.cuda_version == "12.4"
    assert runtime.cuda_available is True and runtime.device_count == 2
    assert runtime.devices == ["NVIDIA H100 80GB HBM3", "Tesla K80"]
    assert runtime.arch_list == [
        *("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "compute_90")
    ]
    assert runtime.cudnn_version == "9.1.0" and runtime.nccl_version == "2.21.5"
    assert [(t.device, t.ok, t.error) for t in runtime.smoke_tests] == [
        ("cuda:0", True, None),
        ("cuda:1", False, f"RuntimeError: {NO_KERNEL_IMAGE}"),
    ]
    assert all(t.seconds is not None and t.seconds >= 0 for t in runtime.smoke_tests)
    assert result.last_step == "smoke cuda:1"
    # The smoke tests are recorded one by one: a crash in the second keeps the first.
    records = [from_dict(FrameworkRuntime, r["facts"]) for r in result.records]
    assert [len(r.smoke_tests) for r in records][-2:] == [1, 2]


def test_wrong_result_is_a_failed_smoke_test(tmp_path: Path) -> None:
    body = FAKE_TORCH + textwrap.dedent(
        """
        BROKEN = None
        def allclose(a, b, rtol=None, atol=None):
            return a.where != "cpu" or b.where != "cpu"  # nonsense on purpose: False
        class _Diff:
            def abs(self): return self
            def max(self): return self
            def __float__(self): return 37.5
        def abs(t): return t.abs()  # torch.abs
        Tensor.__sub__ = lambda self, other: _Diff()
        """
    )
    runtime = runtime_of(run_deep("torch", fake_env(tmp_path, "torch", body)))
    assert [(t.ok, t.error) for t in runtime.smoke_tests] == [
        (False, "the result differs from the CPU's (largest difference 37.5)")
    ] * 2


def test_segfault_in_is_available_keeps_the_import_facts(tmp_path: Path) -> None:
    body = FAKE_TORCH + textwrap.dedent(
        """
        import ctypes
        def _is_available():
            ctypes.string_at(0)  # what a driver bug looks like from Python
        """
    )
    result = run_deep("torch", fake_env(tmp_path, "torch", body))
    assert result.status == "crashed"
    problem = result.describe(60) or ""
    assert "SIGSEGV" in problem and "torch.cuda.is_available" in problem
    assert result.last_step == "torch.cuda.is_available"
    runtime = runtime_of(result)
    assert runtime.status == "ok"  # as far as the child got: the parent says how it ended
    assert runtime.version == "2.5.1+cu124"
    assert runtime.import_seconds is not None and runtime.import_seconds > 0
    assert runtime.cuda_available is None and runtime.smoke_tests == []


def test_abort_message_reaches_the_parent(tmp_path: Path) -> None:
    """cuDNN 9 without its sub-libraries says why on stderr and calls abort(): the parent must
    see that line although the child's stderr is being captured."""
    body = FAKE_TORCH + textwrap.dedent(
        """
        def _cudnn_version():
            os.write(2, b"Could not load library libcudnn_graph.so.9. Error: libcudnn_graph.so.9: "
                        b"cannot open shared object file: No such file or directory\\n")
            os.abort()
        backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=_cudnn_version))
        """
    )
    result = run_deep("torch", fake_env(tmp_path, "torch", body))
    assert result.status == "crashed"
    assert result.last_step == "torch.backends.cudnn.version"
    problem = result.describe(60) or ""
    assert "SIGABRT" in problem and "Could not load library libcudnn_graph.so.9" in problem
    runtime = runtime_of(result)
    assert runtime.devices == ["NVIDIA H100 80GB HBM3", "Tesla K80"]  # listed before it died


def test_exception_in_a_stage_is_recorded_and_the_rest_runs(tmp_path: Path) -> None:
    body = FAKE_TORCH + textwrap.dedent(
        """
        def _is_available():
            raise RuntimeError("CUDA driver initialization failed, you might not have a CUDA gpu.")
        def _name(i):
            raise AssertionError("Torch not compiled with CUDA enabled")
        cuda.get_device_name = _name
        """
    )
    result = run_deep("torch", fake_env(tmp_path, "torch", body))
    assert result.ok
    runtime = runtime_of(result)
    assert runtime.status == "error"
    assert runtime.error == (
        "torch.cuda.is_available: RuntimeError: CUDA driver initialization failed, you might "
        "not have a CUDA gpu."
    )
    assert runtime.device_count == 2 and runtime.devices == []
    assert "torch.cuda.get_device_name 0: AssertionError: Torch not compiled with CUDA enabled" in (
        runtime.warnings
    )
    assert runtime.cudnn_version == "9.1.0"  # later stages still ran
    assert len(runtime.smoke_tests) == 2


def test_garbage_on_stdout_and_stderr(tmp_path: Path) -> None:
    body = FAKE_TORCH + textwrap.dedent(
        """
        sys.stdout.write("no newline after this {")
        sys.stdout.flush()
        os.write(1, b"\\xff\\xfe\\x00binary{\\"kind\\": \\"runtime\\"")  # half a record, no newline
        os.write(2, b"\\xff\\xfe\\x00 raw bytes on stderr \\x1b[31mred\\x1b[0m\\n")
        os.write(2, b"progress 10%\\rprogress 100%")  # a line left open on stderr
        print("{not json")
        sys.stdout.write("more text without a newline")  # left in Python's buffer
        def _is_available():
            os.write(1, b"\\x00\\x01\\x02 driver chatter")
            os.write(2, b"@ a step the framework made up\\n")
            sys.stderr.buffer.write(b"\\xc3\\x28 invalid utf-8\\n")
            return True
        """
    )
    result = run_deep("torch", fake_env(tmp_path, "torch", body))
    assert result.ok, result.describe(60)
    runtime = runtime_of(result)
    assert runtime.status == "ok" and runtime.device_count == 2
    assert len(runtime.smoke_tests) == 2
    # Every record survived, each one whole.
    records = [r for r in result.records if r.get("kind") == "runtime"]
    assert len(records) >= 5
    assert result.last_step == "smoke cuda:1"  # the framework cannot fake a step
    assert any("raw bytes on stderr" in w for w in runtime.warnings)
    assert "progress 100%" in runtime.warnings  # carriage returns end lines too
    assert not any("gpucheck-sync" in w for w in runtime.warnings)
    assert "gpucheck-sync" not in result.message and "progress 100%" in result.message
    assert all(w.isprintable() for w in runtime.warnings)


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
