"""What the deep framework-probe tests share: running probes/scripts/framework_deep.py in a child
with fake framework packages first on PYTHONPATH, and reading its facts back."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

from gpucheck.child.run import ChildResult, run_script
from gpucheck.model.decoding import from_dict
from gpucheck.model.environments import FrameworkRuntime

SCRIPT = Path(__file__).resolve().parents[2] / "src/gpucheck/probes/scripts/framework_deep.py"
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
