"""A simulated machine's network (Scenario.network): RDMA devices and ports, network
interfaces, the PCIe tree the GPUs and NICs sit in, the IOMMU, nvidia_peermem, the kernel
release, and the /dev/shm size and memlock limit gpucheck cannot read from a fake root.

`Network.write_root(root)` lays out, as Linux's sysfs does:

    sys/devices/pci0000:HH/<root port>/<switch up>/<switch down>/<device>/  vendor, device,
        class, numa_node, driver -> .../drivers/<name>, iommu_group -> .../iommu_groups/<n>
    sys/bus/pci/devices/<device> -> ../../../devices/pci0000:HH/.../<device>  (a GPU's flat
        folder, written by machine.py, is moved into its place)
    sys/class/infiniband/<dev>/{node_type,fw_ver,hca_type,board_id}, device -> the PCI
        function, ports/<n>/{state,phys_state,rate,link_layer}
    sys/class/net/<iface>/{type,mtu,operstate,speed}, device -> the PCI function (none for
        a virtual interface); the PCI function's net/<iface>
    sys/class/iommu/<unit>, sys/module/nvidia_peermem/version, proc/sys/kernel/osrelease
    .gpucheck-sim/limits: "shm_bytes N" and "memlock_bytes N" (-1: unlimited), which the
        probe reads under a root that is not "/" (probes/network.py ROOT_LIMITS)
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

GIB = 1 << 30
NDR = "400 Gb/sec (4X NDR)"
HDR = "200 Gb/sec (4X HDR)"
ACTIVE = ("4: ACTIVE", "5: LinkUp")
POLLING = ("1: DOWN", "2: Polling")


@dataclass
class Place:
    """Where a PCI function sits: its host bridge, the bridges from the root port down, NUMA."""

    host_bridge: str  # "pci0000:14"
    bridges: tuple[str, ...]  # ("0000:14:01.0", "0000:15:00.0", "0000:16:00.0")
    numa_node: int = 0
    iommu_group: int | None = None


@dataclass
class Port:
    number: int = 1
    state: str = ACTIVE[0]
    phys_state: str = ACTIVE[1]
    rate: str = NDR
    link_layer: str = "InfiniBand"


@dataclass
class RdmaNic:
    """An RDMA device on its own PCI function (a ConnectX-7 in InfiniBand mode by default)."""

    name: str  # mlx5_0
    address: str  # its PCI function
    place: Place
    netdev: str  # its IPoIB or Ethernet interface
    driver: str = "mlx5_core"
    hca_type: str = "MT4129"  # ConnectX-7 (PCI device 0x1021)
    board_id: str = "MT_0000000838"
    fw_ver: str = "28.39.1002"
    vendor_device: tuple[str, str] = ("0x15b3", "0x1021")
    ports: list[Port] = field(default_factory=lambda: [Port()])


@dataclass
class Interface:
    """A network interface: on a PCI function (`address`, `place`), or virtual."""

    name: str
    address: str | None = None
    place: Place | None = None
    driver: str | None = None
    type: int = 1  # ARPHRD_ETHER
    speed: int | None = 25000
    mtu: int = 1500
    operstate: str = "up"


@dataclass
class Network:
    nics: list[RdmaNic] = field(default_factory=list)
    interfaces: list[Interface] = field(default_factory=list)
    gpu_places: dict[str, Place] = field(default_factory=dict)  # GPU PCI address -> place
    iommu_units: tuple[str, ...] = ()
    peermem: bool = True
    kernel_release: str = "5.15.0-185-generic"
    shm_bytes: int | None = 1024 * GIB
    memlock_bytes: int | None = -1

    def write_root(self, root: Path) -> None:
        for address, place in self.gpu_places.items():
            _function(root, address, place, None, None)
        for nic in self.nics:
            folder = _function(root, nic.address, nic.place, nic.driver, nic.vendor_device)
            ib = root / "sys/class/infiniband" / nic.name
            for name, value in (
                ("node_type", "1: CA"),
                ("fw_ver", nic.fw_ver),
                ("hca_type", nic.hca_type),
                ("board_id", nic.board_id),
            ):
                _write(ib / name, value + "\n")
            _link(ib / "device", folder)
            for port in nic.ports:
                for name, value in (
                    ("state", port.state),
                    ("phys_state", port.phys_state),
                    ("rate", port.rate),
                    ("link_layer", port.link_layer),
                ):
                    _write(ib / "ports" / str(port.number) / name, value + "\n")
            ipoib = nic.ports[0].link_layer == "InfiniBand"
            self._interface(
                root,
                Interface(nic.netdev, nic.address, nic.place, nic.driver, 32 if ipoib else 1),
                folder,
            )
        for iface in self.interfaces:
            self._interface(
                root,
                iface,
                _function(root, iface.address, iface.place, iface.driver, None)
                if iface.address is not None and iface.place is not None
                else None,
            )
        (root / "sys/class/iommu").mkdir(parents=True, exist_ok=True)
        for unit in self.iommu_units:
            (root / "sys/class/iommu" / unit).mkdir(exist_ok=True)
        (root / "sys/module").mkdir(parents=True, exist_ok=True)
        if self.peermem:
            _write(root / "sys/module/nvidia_peermem/version", "590.48.01\n")
            modules = root / "proc/modules"
            text = modules.read_text() if modules.exists() else ""
            _write(modules, "nvidia_peermem 16384 0 - Live 0x0 (POE)\n" + text)
        _write(root / "proc/sys/kernel/osrelease", self.kernel_release + "\n")
        limits = [f"shm_bytes {self.shm_bytes}"] if self.shm_bytes is not None else []
        limits += [f"memlock_bytes {self.memlock_bytes}"] if self.memlock_bytes is not None else []
        _write(root / ".gpucheck-sim/limits", "\n".join(limits) + "\n")

    @staticmethod
    def _interface(root: Path, iface: Interface, folder: Path | None) -> None:
        net = root / "sys/class/net" / iface.name
        net.mkdir(parents=True, exist_ok=True)
        _write(net / "type", f"{iface.type}\n")
        _write(net / "mtu", f"{iface.mtu}\n")
        _write(net / "operstate", iface.operstate + "\n")
        if iface.speed is not None:
            _write(net / "speed", f"{iface.speed}\n")
        if folder is not None:
            _link(net / "device", folder)
            (folder / "net" / iface.name).mkdir(parents=True, exist_ok=True)


def _function(
    root: Path,
    address: str,
    place: Place,
    driver: str | None,
    vendor_device: tuple[str, str] | None,
) -> Path:
    """The PCI function's folder in the tree, /sys/bus/pci/devices' link to it (a flat folder
    already there, a GPU's, is moved in)."""
    folder = root / "sys/devices" / place.host_bridge / Path(*place.bridges) / address
    flat = root / "sys/bus/pci/devices" / address
    if flat.is_dir() and not flat.is_symlink():
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(flat), str(folder))
    folder.mkdir(parents=True, exist_ok=True)
    if vendor_device is not None:
        _write(folder / "vendor", vendor_device[0] + "\n")
        _write(folder / "device", vendor_device[1] + "\n")
        _write(folder / "class", "0x020700\n")  # network controller, InfiniBand
    _write(folder / "numa_node", f"{place.numa_node}\n")
    if driver and not (folder / "driver").is_symlink():
        (folder / "driver").symlink_to(f"../../../../../../bus/pci/drivers/{driver}")
    if place.iommu_group is not None:
        (folder / "iommu_group").symlink_to(f"../../../../kernel/iommu_groups/{place.iommu_group}")
    _link(flat, folder)
    return folder


def _link(link: Path, target: Path) -> None:
    """A relative symlink, as sysfs has them (so that the fake root can move)."""
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink():
        link.unlink()
    link.symlink_to(os.path.relpath(target, link.parent))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# --- presets -----------------------------------------------------------------------------------

# The HGX H100 GPUs' buses (presets.HGX_BUSES): four on each CPU socket.
HGX_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


def _pair(bus: int, numa: int) -> tuple[Place, Place]:
    """A GPU (bus `bus`) and a NIC (bus + 1) under one PCIe switch below their own root port
    and host bridge: nvidia-smi topo -m shows them PIX."""
    hb = bus - 4
    switch = (f"0000:{hb:02x}:01.0", f"0000:{hb + 1:02x}:00.0")
    gpu = Place(f"pci0000:{hb:02x}", (*switch, f"0000:{hb + 2:02x}:00.0"), numa)
    nic = Place(f"pci0000:{hb:02x}", (*switch, f"0000:{hb + 2:02x}:01.0"), numa)
    return gpu, nic


def dgx_network(count: int = 8, **changes: object) -> Network:
    """A DGX-like node: each of `count` GPUs shares a PCIe switch with one ConnectX-7 (400G
    InfiniBand NDR, mlx5_N, one port), four GPU/NIC pairs per CPU socket, a 25G management
    Ethernet port (eno1) and the virtual lo and docker0; nvidia_peermem loaded, the IOMMU
    off, /dev/shm 1 TiB, memlock unlimited."""
    network = Network()
    for i, bus in enumerate(HGX_BUSES[:count]):
        gpu, nic = _pair(bus, 0 if i < 4 else 1)
        network.gpu_places[f"0000:{bus:02x}:00.0"] = gpu
        network.nics.append(
            RdmaNic(f"mlx5_{i}", f"0000:{bus + 1:02x}:00.0", nic, f"ibp{bus + 1}s0")
        )
    mgmt = Place("pci0000:c0", ("0000:c0:03.1",), numa_node=1)
    network.interfaces = [
        Interface("eno1", "0000:c1:00.0", mgmt, "bnxt_en"),
        Interface("lo", type=772, speed=None, mtu=65536, operstate="unknown"),
        Interface("docker0", speed=None, operstate="down"),
    ]
    for key, value in changes.items():
        setattr(network, key, value)
    return network


def port(network: Network, nic: int, **changes: object) -> Network:
    """`network` with the first port of RDMA NIC `nic` changed (state, phys_state, rate)."""
    device = network.nics[nic]
    device.ports = [replace(device.ports[0], **changes), *device.ports[1:]]  # type: ignore[arg-type]
    return network


def second_ports(network: Network, **changes: object) -> Network:
    """`network` with each RDMA NIC a dual-port card as mlx5 shows one: the second port is its
    own device on function 1 of the same slot, with its own port 1 (mlx5_0 on 0000:19:00.0 and
    mlx5_8 on 0000:19:00.1), left unplugged (DOWN, Polling) unless `changes` say otherwise."""
    count = len(network.nics)
    for i, nic in enumerate(list(network.nics)):
        unused = Port(state=POLLING[0], phys_state=POLLING[1], rate="10 Gb/sec (4X SDR)")
        network.nics.append(
            replace(
                nic,
                name=f"mlx5_{count + i}",
                address=nic.address.rpartition(".")[0] + ".1",
                netdev=nic.netdev + "f1",
                ports=[replace(unused, **changes)],  # type: ignore[arg-type]
            )
        )
    return network
