"""The cuDNN layer: the copies of cuDNN on this machine load, agree and fit the driver
(libraries.py)."""

from __future__ import annotations

from gpucheck.checks.declarations import declare

DECLARED = declare(
    __name__,
    checks=(("libraries", "libraries"),),
    reads=("cudnn",),
)
