"""The CUDA layer: libcuda and cuInit, the CUDA runtime libraries a process loads
(loading.py, with the known causes of a failing cuInit in causes.py), and the toolkit (nvcc)
against the driver and the GPUs (toolkit.py)."""

from __future__ import annotations

from gpucheck.checks.declarations import LayerChecks
from gpucheck.model.layers import Layer

DECLARED = LayerChecks(
    Layer.CUDA,
    __name__,
    checks=(
        ("cuda.driver-api", "loading"),
        ("cuda.toolkit", "toolkit"),
        ("cuda.runtime-libraries", "loading"),
    ),
    reads=("cuda",),
    prerequisites=("system.gpu-present", "driver.kernel-module"),
)
