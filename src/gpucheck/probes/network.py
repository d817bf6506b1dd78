"""A node's network readiness facts, read from files under `root` as the system probe reads
them (GPUCHECK_ROOT works): RDMA devices and ports (/sys/class/infiniband), network interfaces
(/sys/class/net), each GPU's and NIC's place in the PCIe tree (the targets of the
/sys/bus/pci/devices links) and the distance between them, the IOMMU units, nvidia_peermem,
the kernel release, /dev/shm's size, the locked-memory limit and NCCL's environment.

Every file read here is world-readable: no daemon, no root. PCIe ACS is in each bridge's
config space, which only root may read past its first 64 bytes; what any user can see of it is
the IOMMU groups (the kernel puts devices a switch does not isolate in one group), so that is
what `GpuNicDistance.acs_isolated` is made of.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
from collections.abc import Mapping
from pathlib import Path

from gpucheck.model.network import (
    GpuNicDistance,
    NetInterface,
    NetworkFacts,
    PciPlace,
    RdmaDevice,
    RdmaPort,
)
from gpucheck.probes.files import read_text

PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
HOST_BRIDGE = re.compile(r"pci[0-9a-f]{4}:[0-9a-f]{2}")
RATE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec")
# Settings whose values are interfaces, devices, levels or switches. Not NCCL_COMM_ID (a host
# and port) nor anything that could hold a secret; the text pass of --redact still replaces
# the host's names wherever they appear.
NCCL_ENV = (
    "NCCL_DEBUG",
    "NCCL_DEBUG_SUBSYS",
    "NCCL_SOCKET_IFNAME",
    "NCCL_SOCKET_FAMILY",
    "NCCL_IB_HCA",
    "NCCL_IB_DISABLE",
    "NCCL_IB_GID_INDEX",
    "NCCL_IB_ROCE_VERSION_NUM",
    "NCCL_NET",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_NET_GDR_READ",
    "NCCL_DMABUF_ENABLE",
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LEVEL",
    "NCCL_SHM_DISABLE",
    "NCCL_CUMEM_ENABLE",
    "NCCL_CUMEM_HOST_ENABLE",
    "NCCL_NVLS_ENABLE",
    "NCCL_CROSS_NIC",
    "NCCL_TOPO_FILE",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "FI_PROVIDER",  # libfabric (AWS EFA): efa
    "FI_EFA_USE_DEVICE_RDMA",
)
# A simulated or mounted root holds another machine's files: its /dev/shm size and its
# processes' memlock limit are not this process's. The test suite's simulated machines write
# them here ("shm_bytes N", "memlock_bytes N", -1 unlimited); otherwise they stay unknown.
ROOT_LIMITS = ".gpucheck-sim/limits"


def probe_network(
    root: Path, env: Mapping[str, str], gpu_addresses: list[str], linux: bool = True
) -> NetworkFacts:
    if not linux:
        return NetworkFacts()
    facts = NetworkFacts(scanned=True)
    facts.rdma = rdma_devices(root)
    facts.interfaces, facts.nics = net_interfaces(root)
    places = {a: pci_place(root / "sys/bus/pci/devices" / a) for a in gpu_addresses}
    nic_dirs = {d.name: root / "sys/class/infiniband" / d.name / "device" for d in facts.rdma}
    if not facts.rdma:  # no RDMA: NCCL's sockets go through the PCI network interfaces
        nic_dirs = {n.name: root / "sys/class/net" / n.name / "device" for n in facts.nics}
    nic_places = {name: pci_place(folder) for name, folder in nic_dirs.items()}
    facts.places = [p for p in [*places.values(), *nic_places.values()] if p is not None]
    for gpu in gpu_addresses:
        for nic_name, nic_place in nic_places.items():
            gpu_place = places[gpu]
            level = pci_level(gpu_place, nic_place) if gpu_place and nic_place else None
            isolated = (
                acs_isolated(gpu_place, nic_place, level) if gpu_place and nic_place else None
            )
            facts.distances.append(GpuNicDistance(gpu, nic_name, level, isolated))
    with contextlib.suppress(OSError):
        facts.iommu_units = sorted(os.listdir(root / "sys/class/iommu"))
    facts.peermem, facts.peermem_read = peermem(root)
    release = read_text(root / "proc/sys/kernel/osrelease")
    facts.kernel_release = release.strip() if release and release.strip() else None
    facts.shm_bytes, facts.memlock_bytes = limits(root)
    facts.nccl_env = {k: env[k] for k in NCCL_ENV if k in env}
    return facts


def rdma_devices(root: Path) -> list[RdmaDevice]:
    base = root / "sys/class/infiniband"
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []  # no RDMA core loaded: no devices
    devices = []
    for name in names:
        folder = base / name
        device = RdmaDevice(name)
        device.node_type = _line(folder / "node_type")
        device.fw_ver = _line(folder / "fw_ver")
        device.hca_type = _line(folder / "hca_type")
        device.board_id = _line(folder / "board_id")
        device.pci_address, device.driver = _pci_function(folder / "device")
        with contextlib.suppress(OSError):
            device.netdevs = sorted(os.listdir(folder / "device/net"))
        with contextlib.suppress(OSError):
            numbers = sorted(int(p) for p in os.listdir(folder / "ports") if p.isdigit())
            device.ports = [_port(folder / "ports" / str(n), n) for n in numbers]
        devices.append(device)
    return devices


def _port(folder: Path, number: int) -> RdmaPort:
    rate = _line(folder / "rate")
    match = RATE.match(rate or "")
    return RdmaPort(
        number,
        state=_line(folder / "state"),
        phys_state=_line(folder / "phys_state"),
        rate=rate,
        rate_gbps=float(match.group(1)) if match else None,
        link_layer=_line(folder / "link_layer"),
    )


def net_interfaces(root: Path) -> tuple[list[str], list[NetInterface]]:
    """Every interface's name, and the interfaces on a PCI device (a `device` link)."""
    base = root / "sys/class/net"
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return [], []
    nics = []
    for name in names:
        folder = base / name
        address, driver = _pci_function(folder / "device")
        if address is None:
            continue  # virtual: lo, docker0, bridges, bonds, veth
        speed = _number(folder / "speed")  # (reading it on a down link fails: unknown)
        nics.append(
            NetInterface(
                name,
                pci_address=address,
                driver=driver,
                type=_number(folder / "type"),
                speed_mbps=speed,
                mtu=_number(folder / "mtu"),
                operstate=_line(folder / "operstate"),
            )
        )
    return names, nics


def pci_place(device_dir: Path) -> PciPlace | None:
    """The PCIe path of the device a sysfs link names: None when it does not resolve to a PCI
    function; bridges empty where the path holds no host bridge (a flat, simulated bus)."""
    try:
        target = Path(os.path.realpath(device_dir))
    except (OSError, ValueError):
        return None
    if not PCI_ADDRESS.fullmatch(target.name) or not target.exists():
        return None
    place = PciPlace(target.name)
    parts = target.parts
    roots = [i for i, p in enumerate(parts) if HOST_BRIDGE.fullmatch(p)]
    if roots:
        place.host_bridge = parts[roots[-1]]
        place.bridges = [p for p in parts[roots[-1] + 1 : -1] if PCI_ADDRESS.fullmatch(p)]
    place.numa_node = _number(target / "numa_node")
    with contextlib.suppress(OSError):
        place.iommu_group = os.path.basename(os.readlink(target / "iommu_group"))
    return place


def pci_level(a: PciPlace, b: PciPlace) -> str | None:
    """How far apart two PCI devices are, in `nvidia-smi topo -m`'s words (model/network.py
    PCI_LEVELS): below one switch (each at most one bridge below their deepest common one) PIX,
    deeper PXB, different root ports PHB, different host bridges NODE or, across NUMA nodes,
    SYS. None where either's path is unknown."""
    if a.host_bridge is None or b.host_bridge is None:
        return None
    if a.host_bridge != b.host_bridge:
        known = a.numa_node is not None and b.numa_node is not None
        if not known:
            return None
        return "NODE" if a.numa_node == b.numa_node else "SYS"
    common = 0
    for x, y in zip(a.bridges, b.bridges, strict=False):
        if x != y:
            break
        common += 1
    if common == 0:
        return "PHB"
    below = max(len(a.bridges) - common, len(b.bridges) - common)
    return "PIX" if below <= 1 else "PXB"


def acs_isolated(a: PciPlace, b: PciPlace, level: str | None) -> bool | None:
    """Whether a PCIe switch both sit under isolates them (ACS): the kernel groups devices a
    switch lets talk to each other directly, so two in different IOMMU groups are isolated.
    None: not under one switch, or no IOMMU groups (IOMMU off: nothing is redirected)."""
    if level not in ("PIX", "PXB") or a.iommu_group is None or b.iommu_group is None:
        return None
    return a.iommu_group != b.iommu_group


def peermem(root: Path) -> tuple[str | None, bool]:
    """The GPUDirect RDMA peer-memory module loaded, by the files NCCL itself tests
    (src/transport/net_ib/gdr.cc), and whether /sys/module could be read at all."""
    if (root / "sys/module/nvidia_peermem/version").exists():
        return "nvidia_peermem", True
    for legacy in ("nv_mem", "nv_mem_nc"):
        if (root / "sys/kernel/mm/memory_peers" / legacy / "version").exists():
            return "nv_peer_mem", True
    return None, (root / "sys/module").is_dir()


def limits(root: Path) -> tuple[int | None, int | None]:
    """(/dev/shm's size in bytes, RLIMIT_MEMLOCK's soft limit in bytes, -1 unlimited)."""
    if root != Path("/"):
        given = _root_limits(root)
        shm = given.get("shm_bytes")
        if shm is None and os.path.ismount(root / "dev/shm"):
            shm = _statvfs_bytes(root / "dev/shm")
        return shm, given.get("memlock_bytes")
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    memlock = -1 if soft == resource.RLIM_INFINITY else soft
    return _statvfs_bytes(Path("/dev/shm")), memlock


def _root_limits(root: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for line in (read_text(root / ROOT_LIMITS) or "").splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            found[key.strip()] = int(value.strip())
    return found


def _statvfs_bytes(path: Path) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


def _pci_function(link: Path) -> tuple[str | None, str | None]:
    """The PCI address a `device` link names, and its driver's name."""
    try:
        target = os.path.realpath(link)
    except (OSError, ValueError):
        return None, None
    name = os.path.basename(target)
    if not PCI_ADDRESS.fullmatch(name) or not os.path.exists(target):
        return None, None
    try:
        driver: str | None = os.path.basename(os.readlink(os.path.join(target, "driver")))
    except OSError:
        driver = None
    return name, driver


def _line(path: Path) -> str | None:
    text = read_text(path, 4096)
    return text.strip() if text and text.strip() else None


def _number(path: Path) -> int | None:
    text = _line(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
