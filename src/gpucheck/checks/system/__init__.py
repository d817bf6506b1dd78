"""The system layer: is there an NVIDIA GPU on this machine, and does this process (a
container, its environment variables) get to see it. machine.py holds the checks and the
container steps other layers' fixes reuse."""

from __future__ import annotations

from gpucheck.checks.declarations import LayerChecks
from gpucheck.model.layers import Layer

DECLARED = LayerChecks(
    Layer.SYSTEM,
    __name__,
    checks=(
        ("system.gpu-present", "machine"),
        ("system.container-gpu-access", "machine"),
        ("system.nouveau", "machine"),
        ("system.cuda-visible-devices", "machine"),
        ("system.cuda-launch-blocking", "machine"),
        ("system.probes", "machine"),
    ),
    reads=("system",),
)
