"""The CUDA layer: libcuda and cuInit, the CUDA runtime libraries a process loads
(loading.py, with the known causes of a failing cuInit in causes.py), and the toolkit (nvcc)
against the driver and the GPUs (toolkit.py)."""

from __future__ import annotations

from gpucheck.checks.declarations import declare

DECLARED = declare(
    __name__,
    checks=(
        ("loading", "driver-api"),
        ("toolkit", "toolkit"),
        ("loading", "runtime-libraries"),
    ),
    reads=("cuda",),
    prerequisites=("system.gpu-present", "driver.kernel-module"),
)
