"""The requirements layer: what the job asked of the machine (--min-gpus, --min-memory,
--min-compute-capability) against the GPUs it has (minimums.py)."""

from __future__ import annotations

from gpucheck.checks.declarations import declare

DECLARED = declare(
    __name__,
    checks=(("minimums", "min-gpus", "min-memory", "min-compute-capability"),),
    reads=("nvml",),
    prerequisites=("system.gpu-present", "driver.kernel-module", "driver.nvml"),
)
