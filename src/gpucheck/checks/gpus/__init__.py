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
        ("gpu.lost", "health"),
        ("gpu.ecc-errors", "health"),
        ("gpu.memory-remapping", "health"),
        ("gpu.throttling", "health"),
        ("gpu.pcie-link", "health"),
        ("gpu.nvlink", "interconnect"),
        ("gpu.p2p", "interconnect"),
        ("gpu.compute-mode", "sharing"),
        ("gpu.mig", "sharing"),
        ("gpu.memory-in-use", "sharing"),
    ),
    reads=("nvml",),
    prerequisites=("system.gpu-present", "driver.kernel-module", "driver.nvml"),
)
