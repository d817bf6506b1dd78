"""What the framework-check tests share: the checks they cover, and the newest builds and driver
minimums read off compat/*.toml by hand."""

from __future__ import annotations

from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import Snapshot
from support.evaluate import run_checks

H100_DRIVER = "590.48.01"
# Every framework check, in report order: what the test_checks_frameworks*.py modules cover.
FRAMEWORK_CHECKS = (
    "frameworks.torch.cpu-build",
    "frameworks.torch.cuda-driver",
    "frameworks.torch.arch-support",
    "frameworks.torch.python",
    "frameworks.torch.extension-toolkit",
    "frameworks.torch.extensions",
    "frameworks.tensorflow.cpu-build",
    "frameworks.tensorflow.legacy-gpu-package",
    "frameworks.tensorflow.windows-native",
    "frameworks.tensorflow.cuda-driver",
    "frameworks.tensorflow.arch-support",
    "frameworks.tensorflow.python",
    "frameworks.tensorflow.keras",
    "frameworks.tensorflow.cuda-libraries",
    "frameworks.jax.cpu-build",
    "frameworks.jax.cuda-driver",
    "frameworks.cupy.cuda-driver",
    "frameworks.library-shadowing",
    "frameworks.loader-cache",
    "frameworks.nvidia-conflicts",
    "frameworks.tensorrt.support",
    "frameworks.tensorrt.libraries",
    "frameworks.xla.compiler",
    "frameworks.numpy-abi",
    "frameworks.nvml-bindings",
    "frameworks.device-count",
    "frameworks.smoke-test",
)


def framework_findings(snap: Snapshot) -> list:  # type: ignore[type-arg]
    return [f for f in run_checks(snap) if f.section is Layer.FRAMEWORKS]


# The newest builds that fit, read off compat/torch.toml and compat/tensorflow.toml by hand:
# torch 2.15's variants are not published yet, but its PyPI wheel is CUDA 13.2 (driver 580+,
# Python 3.11+); 2.14 is the newest with published variants: cu132, and cu126, which runs on
# R535 and still has sm_61 (Pascal).
TORCH_215 = "pip install 'torch==2.15.*'"  # PyPI's own 2.15 wheel is CUDA 13.2 (torch.toml)
TORCH_214_CU132 = "pip install 'torch==2.14.*' --index-url https://download.pytorch.org/whl/cu132"
TORCH_214_CU126 = "pip install 'torch==2.14.*' --index-url https://download.pytorch.org/whl/cu126"
TF_221 = "pip install 'tensorflow[and-cuda]==2.21.*'"  # CUDA 12.5, cuDNN 9.3, Python 3.9-3.13
TF_214 = "pip install 'tensorflow[and-cuda]==2.14.*'"  # CUDA 11.8: the newest for R515


MIN_DRIVER = {"12.2": "535.54.03", "12.8": "570.26", "13.0": "580.65.06"}  # cuda.toml


def min_driver(cuda: str) -> str:
    return MIN_DRIVER[cuda]
