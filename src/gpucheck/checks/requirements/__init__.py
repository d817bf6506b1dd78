"""The requirements layer: what the job asked of the machine (--min-gpus, --min-memory,
--min-compute-capability) against the GPUs it has (minimums.py)."""

from __future__ import annotations

from gpucheck.checks.declarations import LayerChecks
from gpucheck.model.layers import Layer

DECLARED = LayerChecks(
    Layer.REQUIREMENTS,
    __name__,
    checks=(
        ("requirements.min-gpus", "minimums"),
        ("requirements.min-memory", "minimums"),
        ("requirements.min-compute-capability", "minimums"),
    ),
    reads=("nvml",),
    prerequisites=("system.gpu-present", "driver.kernel-module", "driver.nvml"),
)
