"""The GPUs layer: each GPU's health (health.py: lost GPUs, ECC, row remapping, clock
slowdown, the PCIe link), how GPUs reach each other (interconnect.py: NVLink, peer-to-peer)
and how they are shared (sharing.py: compute mode, MIG, memory other processes hold)."""

from __future__ import annotations

from gpucheck.checks.declarations import LayerChecks
from gpucheck.model.layers import Layer

DECLARED = LayerChecks(
    Layer.GPUS,
    __name__,
    checks=(
        ("gpus.lost", "health"),
        ("gpus.ecc-errors", "health"),
        ("gpus.memory-remapping", "health"),
        ("gpus.throttling", "health"),
        ("gpus.pcie-link", "health"),
        ("gpus.nvlink", "interconnect"),
        ("gpus.p2p", "interconnect"),
        ("gpus.compute-mode", "sharing"),
        ("gpus.mig", "sharing"),
        ("gpus.memory-in-use", "sharing"),
    ),
    reads=("nvml",),
    prerequisites=("system.gpu-present", "driver.kernel-module", "driver.nvml"),
)
