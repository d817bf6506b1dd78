"""The GPUs layer: each GPU's health (health.py: lost GPUs, ECC, row remapping, clock
slowdown, the PCIe link; xids.py: the kernel log's Xids, judged by NVIDIA's catalog), how
GPUs reach each other (interconnect.py: NVLink, peer-to-peer) and how they are shared
(sharing.py: compute mode, MIG, memory other processes hold)."""

from __future__ import annotations

from gpucheck.checks.declarations import declare

DECLARED = declare(
    __name__,
    checks=(
        ("health", "lost", "ecc-errors", "memory-remapping", "throttling", "pcie-link"),
        ("xids", "xid-events"),
        ("interconnect", "nvlink", "p2p"),
        ("sharing", "compute-mode", "mig", "memory-in-use"),
    ),
    reads=("nvml",),
    prerequisites=("system.gpu-present", "driver.kernel-module", "driver.nvml"),
)
