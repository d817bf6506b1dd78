"""The cuDNN layer: the copies of cuDNN on this machine load, agree and fit the driver
(libraries.py)."""

from __future__ import annotations

from gpucheck.checks.declarations import LayerChecks
from gpucheck.model.layers import Layer

DECLARED = LayerChecks(
    Layer.CUDNN,
    __name__,
    checks=(("cudnn.libraries", "libraries"),),
    reads=("cudnn",),
)
