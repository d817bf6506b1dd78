"""NVSwitch fabric, NVLink and peer-to-peer facts (snapshot schema 1.4).

The host's side (NVSwitch devices, the fabric manager and persistence daemons, the IOMMU) is
read from files; the GPUs' side (fabric state, link states, P2P status between each pair) from
NVML. `None` is unknown, as everywhere in the snapshot.
"""

# No `from __future__ import annotations`: msgspec would compile and evaluate every string
# annotation when it first decodes these records, on every `doctor --from`.
from msgspec import Struct, field

from gpucheck.model.types import Count

# Kernel arguments that leave peer-to-peer traffic untranslated: the IOMMU off, or passthrough.
PASSTHROUGH = ("iommu=pt", "iommu.passthrough=1", "intel_iommu=off", "amd_iommu=off")


class FabricHostFacts(Struct):
    """What the host's files say about NVSwitch, its fabric manager and the daemons around it."""

    # NVIDIA PCI devices of class 0x0680 (bridge, other): the NVSwitches of an HGX/DGX board.
    nvswitch_pci: list[str] = field(default_factory=list)
    nvswitch_nodes: list[str] = field(default_factory=list)  # /dev/nvidia-nvswitch*
    # The nvidia-fabricmanager package dpkg lists as installed (else, on an RPM system, the
    # nvidia-fabric-manager rpm lists), and its upstream version ("570.86.15", the Debian
    # revision or RPM release left out); None: not installed or not known.
    fabricmanager_package: str | None = None
    fabricmanager_version: str | None = None
    fabricmanager_unit: bool | None = None  # its systemd unit file exists
    fabricmanager_enabled: bool | None = None  # the unit is wanted at boot
    # A process named nv-fabricmanager / nvidia-persistenced in /proc; None: /proc not read
    # or not the host's (inside a container).
    fabricmanager_running: bool | None = None
    persistenced_running: bool | None = None
    # IOMMU groups in /sys/kernel/iommu_groups (None: unreadable), and the kernel command
    # line's IOMMU settings (intel_iommu=on, iommu=pt, ...): a translating IOMMU routes PCIe
    # peer-to-peer through the root complex, where NCCL's P2P transfers hang or crawl.
    iommu_groups: Count | None = None
    iommu_cmdline: list[str] = field(default_factory=list)


class GpuPair(Struct):
    """Two GPUs (NVML indices, a < b) as NVML sees the path between them."""

    gpu_a: Count
    gpu_b: Count
    # nvmlDeviceGetP2PStatus for read, write and NVLink: ok | chipset_not_supported |
    # gpu_not_supported | topology_not_supported | disabled_by_regkey | not_supported |
    # unknown; None: the call failed (its error in `errors`).
    p2p_read: str | None = None
    p2p_write: str | None = None
    p2p_nvlink: str | None = None
    # nvmlDeviceGetTopologyCommonAncestor: internal | single | multiple | hostbridge | node |
    # system (nvidia-smi topo's PIX-like levels, see report/topology.py).
    topology: str | None = None
    errors: dict[str, str] = field(default_factory=dict)  # field -> NVML error name
