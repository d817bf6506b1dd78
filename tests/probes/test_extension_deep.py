"""The deep pass for extensions: probes/scripts/extension_deep.py run by the real child
machinery on stand-in modules (an import that fails as a mismatched extension does, one that
aborts, a TensorRT whose builder fails as it does on a driver too old), and XLA's devices
derived from what the framework listed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.environments import FrameworkRuntime
from gpucheck.model.finding import Status
from gpucheck.model.fix import Tool
from gpucheck.probes.frameworks import probe_extension, xla_devices

# The shape of what a flash-attn wheel built for another torch prints at import.
UNDEFINED = (
    "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"
)
# A TensorRT built for a CUDA newer than the driver: its logger's words, then pybind's.
TRT_STANDIN = """
__version__ = "10.3.0"
class _Severity:
    ERROR = 1
class ILogger:
    Severity = _Severity
    def __init__(self):
        pass
class NetworkDefinitionCreationFlag:
    EXPLICIT_BATCH = 0
def Builder(logger):
    logger.log(1, "[TRT] CUDA initialization failure with error: 35. Please check your CUDA "
               "installation: http://docs.nvidia.com/cuda/cuda-installation-guide-linux")
    raise TypeError("pybind11::init(): factory function returned nullptr")
"""


def run(tmp_path: Path, module: str, source: str, dist: str = "flash-attn"):  # type: ignore[no-untyped-def]
    (tmp_path / f"{module}.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return probe_extension(sys.executable, dist, module, 30, env)


def test_an_import_error_is_recorded_with_its_words(tmp_path: Path) -> None:
    found = run(tmp_path, "flash_attn", f"raise ImportError({UNDEFINED!r})")
    assert found.status == "import_error"
    assert found.error == f"ImportError: {UNDEFINED}"
    assert found.name == "flash-attn" and found.module == "flash_attn"


def test_an_import_that_kills_the_process_is_recorded_as_crashed(tmp_path: Path) -> None:
    found = run(tmp_path, "flash_attn", "import os\nos.abort()\n")
    assert found.status == "crashed"
    assert found.error is not None and "SIGABRT" in found.error


def test_a_working_import_is_ok(tmp_path: Path) -> None:
    found = run(tmp_path, "flash_attn", "VALUE = 1\n")
    assert found.status == "ok" and found.error is None and found.seconds is not None


def test_tensorrt_failing_to_build_keeps_its_loggers_words_and_is_mapped(tmp_path: Path) -> None:
    found = run(tmp_path, "tensorrt", TRT_STANDIN, dist="tensorrt")
    assert found.status == "error"
    assert found.error is not None
    assert found.error.startswith("engine: TypeError: pybind11::init(): factory function")
    assert "CUDA initialization failure with error: 35" in found.error
    env = fb.tensorrt(fb.environment(), "10.3.0")
    env.extension_imports.append(found)
    snap = builders.node([builders.h100(0)], driver="470.256.02", cuda=11040)
    f = the(fb.on(snap, env, deep=True), "frameworks.tensorrt.support")
    assert f.status is Status.FAIL
    assert "TensorRT 10.3.0 cannot start CUDA: the driver is too old for its CUDA build" in (
        f.evidence
    )
    assert f.fix is not None
    assert f.fix.text == (
        "Upgrade the NVIDIA driver to 525.60.13 or newer (CUDA 12.0's minimum on Linux): "
        "`sudo apt install nvidia-driver-525`"
    )
    [step] = f.fix.steps
    assert (step.tool, step.changes[0].name, step.changes[0].requirement) == (
        Tool.APT,
        "nvidia-driver-525",
        ">=525.60.13",
    )


def test_xla_devices_are_the_gpus_jax_and_tensorflow_list() -> None:
    jax = FrameworkRuntime(
        "jax", "ok", backend="gpu", device_count=2, devices=["cuda(id=0)", "cuda(id=1)"]
    )
    assert xla_devices(jax) == ["cuda(id=0)", "cuda(id=1)"]
    cpu_only = FrameworkRuntime("jax", "ok", backend="cpu", device_count=1, devices=["TFRT_CPU_0"])
    assert xla_devices(cpu_only) == []
    tf = FrameworkRuntime("tensorflow", "ok", device_count=1, devices=["/physical_device:GPU:0"])
    assert xla_devices(tf) == ["/physical_device:GPU:0"]
    assert xla_devices(FrameworkRuntime("torch", "ok", device_count=1)) is None


TORCHVISION_0_29_1 = Path(
    "/opt/pypi-more/files/torchvision-0.29.1-cp311-cp311-manylinux_2_28_x86_64.whl"
)


@pytest.mark.frameworks
@pytest.mark.skipif(not TORCHVISION_0_29_1.is_file(), reason="the real wheel is not here")
def test_the_real_torchvision_for_torch_2_14_in_the_real_torch_2_13(tmp_path: Path) -> None:
    """The whole real torchvision 0.29.1 wheel (built for torch >= 2.14) imported into the real
    torch 2.13.0+cpu environment: the error users meet, mapped to the torchvision for 2.13."""
    import zipfile

    from support import venvs

    python = venvs.require("torch-2.13.0")
    with zipfile.ZipFile(TORCHVISION_0_29_1) as wheel:
        wheel.extractall(tmp_path / "site")
    env_vars = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    found = probe_extension(str(python), "torchvision", "torchvision", 120, env_vars)
    assert found.status == "error"
    assert found.error == (
        "import torchvision: RuntimeError: operator torchvision::nms does not exist"
    )
    env = fb.with_torch(fb.environment(), "2.13.0+cpu", None)
    fb.add(env, "torchvision", "0.29.1", ["numpy", "torch>=2.14.0"])
    env.extension_imports.append(found)
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert "built against another torch" in f.title
    assert f.fix is not None
    assert "pip install torch==2.13.0 'torchvision==0.28.*' --index-url" in f.fix.text
