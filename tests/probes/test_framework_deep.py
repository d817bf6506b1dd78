"""The deep framework probe (`probes/scripts/framework_deep.py`): one framework imported in a
child. A real CPU build of PyTorch, installed by the test session into a cached virtual
environment, shows what a machine without a GPU looks like from inside the framework. Fake
packages named torch, put first on PYTHONPATH, play the failures that need a GPU to happen for
real: a missing cuDNN at import, a segfault in the driver, a kernel image missing for one GPU,
a library spewing bytes on both streams (TensorFlow, JAX, CuPy and the script itself:
test_framework_deep_others.py)."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest
from support import venvs
from support.deep_probe import (
    FAKE_TORCH,
    NO_KERNEL_IMAGE,
    TIMEOUT,
    TORCH_VERSION,
    fake_env,
    run_deep,
    runtime_of,
)

from gpucheck.model.decoding import from_dict
from gpucheck.model.environments import FrameworkRuntime

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
