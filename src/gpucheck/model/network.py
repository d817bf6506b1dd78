"""Network readiness facts of one node: RDMA devices and their ports, Ethernet interfaces, where
each GPU and NIC sits in the PCIe tree (and how far apart, in `nvidia-smi topo -m` terms),
GPUDirect RDMA's kernel side, /dev/shm, the locked-memory limit and NCCL's environment.

All of it is read from sysfs and procfs, as any user may (no daemon, no root). `None` is
unknown, as everywhere in the snapshot.
"""

# No `from __future__ import annotations`: msgspec would compile and evaluate every string
# annotation when it first decodes these records, on every `doctor --from`.
from msgspec import Struct, field

from gpucheck.model.types import Count, Int

# How far apart two PCI devices are, nearest first, as `nvidia-smi topo -m` prints it (its
# legend): PIX at most one PCIe bridge (one switch), PXB several bridges but no host bridge, PHB
# through a PCIe host bridge (the CPU), NODE between host bridges of one NUMA node, SYS across
# the CPUs' interconnect (QPI/UPI, between NUMA nodes).
PCI_LEVELS = ("PIX", "PXB", "PHB", "NODE", "SYS")


class RdmaPort(Struct):
    """One port of an RDMA device, as /sys/class/infiniband/<dev>/ports/<n>/ gives it."""

    number: Count
    state: str | None = None  # "4: ACTIVE", "1: DOWN", "2: INIT"
    phys_state: str | None = None  # "5: LinkUp", "2: Polling", "3: Disabled"
    rate: str | None = None  # "400 Gb/sec (4X NDR)"
    rate_gbps: float | None = None  # the rate's number: 400.0
    link_layer: str | None = None  # InfiniBand | Ethernet (RoCE) | Unspecified (EFA)


class RdmaDevice(Struct):
    """An RDMA device (InfiniBand HCA, RoCE NIC, EFA) under /sys/class/infiniband."""

    name: str  # mlx5_0, efa_0, bnxt_re0, irdma0
    node_type: str | None = None  # "1: CA"
    fw_ver: str | None = None
    hca_type: str | None = None  # "MT4129" (ConnectX-7)
    board_id: str | None = None  # "MT_0000000838"
    pci_address: str | None = None  # the PCI function its `device` link names
    driver: str | None = None  # that function's driver: mlx5_core, efa, bnxt_en, irdma
    netdevs: list[str] = field(default_factory=list)  # its network interfaces (ib0, ens1f0np0)
    ports: list[RdmaPort] = field(default_factory=list)


class NetInterface(Struct):
    """A network interface on a PCI device (virtual ones, such as lo, docker0 or a bridge,
    are only named in `NetworkFacts.interfaces`)."""

    name: str
    pci_address: str | None = None
    driver: str | None = None
    type: Count | None = None  # ARPHRD: 1 Ethernet, 32 InfiniBand (IPoIB)
    speed_mbps: Int | None = None  # -1 or None: no link / unknown
    mtu: Count | None = None
    operstate: str | None = None  # up | down | unknown | lowerlayerdown


class PciPlace(Struct):
    """Where a GPU or NIC sits in the PCIe tree: /sys/bus/pci/devices/<address> links to
    /sys/devices/pci<domain>:<bus>/<root port>/.../<address>."""

    address: str
    host_bridge: str | None = None  # "pci0000:17"
    bridges: list[str] = field(default_factory=list)  # root port first, the device's parent last
    numa_node: Int | None = None  # -1: the firmware gives none (single-socket machines)
    iommu_group: str | None = None  # the group its iommu_group link names; None: no IOMMU


class GpuNicDistance(Struct):
    """How far a GPU (its PCI address) is from a NIC (its RDMA device or interface name)."""

    gpu: str
    nic: str
    level: str | None = None  # PCI_LEVELS; None: a place unknown
    # The two under one PCIe switch sit in different IOMMU groups: with the IOMMU on, the switch
    # isolates them (ACS), so their peer traffic goes up to the root complex. None: unknown.
    acs_isolated: bool | None = None


class NetworkFacts(Struct):
    scanned: bool = False  # False: not read (not Linux, a snapshot before this section)
    rdma: list[RdmaDevice] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)  # every name in /sys/class/net
    nics: list[NetInterface] = field(default_factory=list)  # those on a PCI device
    places: list[PciPlace] = field(default_factory=list)  # the GPUs' and the NICs'
    distances: list[GpuNicDistance] = field(default_factory=list)
    # IOMMU units the kernel registered (/sys/class/iommu: dmar0, ivhd0); None: unreadable.
    iommu_units: list[str] | None = None
    # GPUDirect RDMA's kernel side, as NCCL looks for it: /sys/module/nvidia_peermem, or the
    # older nv_peer_mem's /sys/kernel/mm/memory_peers/nv_mem*/. None: not read.
    peermem: str | None = None  # nvidia_peermem | nv_peer_mem; None: neither loaded (or unknown)
    peermem_read: bool = False
    # The running kernel's release (/proc/sys/kernel/osrelease): DMA-BUF needs 5.12 or later.
    kernel_release: str | None = None
    # /dev/shm's size in bytes (statvfs), and the probe's own RLIMIT_MEMLOCK soft limit in bytes
    # (-1: unlimited); None: unknown (another machine's root, not a mount point).
    shm_bytes: Count | None = None
    memlock_bytes: Int | None = None
    # NCCL's (and libfabric's) settings in the environment: only known names, whose values
    # are interfaces, devices, levels and switches (never NCCL_COMM_ID, which names a host).
    nccl_env: dict[str, str] = field(default_factory=dict)
