"""The network layer: what a multi-node job needs of each node. RDMA devices and their ports
(rdma.py: ports down or polling, unequal rates, none usable, GPUDirect RDMA), where the NICs sit
from the GPUs (topology.py: a far NIC, ACS and the IOMMU on the GPU-NIC path), the memory NCCL
needs (limits.py: /dev/shm, the locked-memory limit) and NCCL's own settings (nccl_env.py).

A node without RDMA devices, or with one GPU, gets no failure from any of it: a finding that
would fail a multi-GPU node is a warning on a single-GPU one."""

from __future__ import annotations

from gpucheck.checks.declarations import declare

DECLARED = declare(
    __name__,
    checks=(
        ("rdma", "rdma-ports", "rdma-rate", "rdma-usable", "gpudirect-rdma"),
        ("topology", "nic-affinity", "acs-iommu"),
        ("limits", "shm", "memlock"),
        ("nccl_env", "nccl-env"),
    ),
    reads=("system",),
    prerequisites=("system.gpu-present",),
)
