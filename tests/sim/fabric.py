"""NVSwitch, NVLink, peer-to-peer and daemon facts of a simulated machine (Scenario.fabric).

`Fabric.lines()` adds to the scenario file (read by fake_nvml.c):

    gpu <i> fabric <state> <status>     nvmlDeviceGetGpuFabricInfo(V): nvmlGpuFabricState_t and
                                        the nvmlReturn_t of its training; no line: NOT_SUPPORTED
    gpu <i> nvlinks <count> <hex mask>  nvmlDeviceGetNvLinkState: links, active ones as bits
    p2p <a> <b> <read> <write> <nvlink> nvmlDeviceGetP2PStatus (nvmlGpuP2PStatus_t), both ways
    topo <a> <b> <level>                nvmlDeviceGetTopologyCommonAncestor (nvmlGpuTopologyLevel_t)

`Fabric.write_root(root)` lays out the host's side: NVSwitch PCI devices (class 0x068000) and
/dev/nvidia-nvswitch* nodes, dpkg's status entry (or, with fabricmanager_rpm, a real RPM
database: sim/rpmdb.py) and the unit file of nvidia-fabricmanager,
the daemons' processes (/proc/<pid>/comm), IOMMU groups and /proc/cmdline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pynvml as nv

from sim import rpmdb

# An HGX H100 board's four NVSwitches (bus numbers as `lspci` shows them on a DGX H100).
HGX_NVSWITCHES = ("0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0")
FABRICMANAGER_PID = 2101
PERSISTENCED_PID = 2102


@dataclass
class Fabric:
    # Per GPU index: (nvmlGpuFabricState_t, nvmlReturn_t status); absent: not NVSwitch-attached.
    gpu_fabric: dict[int, tuple[int, int]] = field(default_factory=dict)
    nvlinks: dict[int, tuple[int, int]] = field(default_factory=dict)  # index: (count, mask)
    # (a, b): (read, write, nvlink) statuses; absent pairs answer NOT_SUPPORTED (unknown)
    p2p: dict[tuple[int, int], tuple[int, int, int]] = field(default_factory=dict)
    topology: dict[tuple[int, int], int] = field(default_factory=dict)
    nvswitches: tuple[str, ...] = ()
    fabricmanager_package: str | None = None  # "nvidia-fabricmanager-590"
    fabricmanager_version: str | None = None  # dpkg's Version: "590.48.01-1"
    # Installed as an RPM (a real RPM database under /var/lib/rpm) instead of in dpkg's status
    fabricmanager_rpm: bool = False
    fabricmanager_unit: bool = False
    fabricmanager_enabled: bool = False
    fabricmanager_running: bool = False
    persistenced_running: bool = False
    iommu_groups: int = 0
    cmdline: str = "BOOT_IMAGE=/vmlinuz-5.15.0-185-generic root=/dev/sda1 ro quiet"

    def lines(self) -> list[str]:
        out = [f"gpu {i} fabric {st} {rc}" for i, (st, rc) in sorted(self.gpu_fabric.items())]
        out += [f"gpu {i} nvlinks {n} {mask:#x}" for i, (n, mask) in sorted(self.nvlinks.items())]
        out += [f"p2p {a} {b} {r} {w} {n}" for (a, b), (r, w, n) in sorted(self.p2p.items())]
        out += [f"topo {a} {b} {level}" for (a, b), level in sorted(self.topology.items())]
        return out

    def write_root(self, root: Path) -> None:
        for address in self.nvswitches:
            folder = root / "sys/bus/pci/devices" / address
            _write(folder / "vendor", "0x10de\n")
            _write(folder / "device", "0x22a3\n")  # NVSwitch (Hopper generation)
            _write(folder / "class", "0x068000\n")
        for i in range(len(self.nvswitches)):
            _write(root / f"dev/nvidia-nvswitch{i}", "")
        if self.nvswitches:
            _write(root / "dev/nvidia-nvswitchctl", "")
        if self.fabricmanager_package and self.fabricmanager_version and self.fabricmanager_rpm:
            rpmdb.install(root, self.fabricmanager_package, self.fabricmanager_version)
        elif self.fabricmanager_package and self.fabricmanager_version:
            _write(
                root / "var/lib/dpkg/status",
                "Package: libc6\nStatus: install ok installed\nVersion: 2.35-0ubuntu3.8\n\n"
                f"Package: {self.fabricmanager_package}\nStatus: install ok installed\n"
                f"Priority: optional\nVersion: {self.fabricmanager_version}\n"
                "Description: Fabric Manager for NVSwitch based systems.\n",
            )
        unit = "nvidia-fabricmanager.service"
        if self.fabricmanager_unit:
            _write(root / "lib/systemd/system" / unit, "[Service]\nType=forking\n")
        if self.fabricmanager_enabled:
            _write(root / "etc/systemd/system/multi-user.target.wants" / unit, "")
        if self.fabricmanager_running:
            _write(root / f"proc/{FABRICMANAGER_PID}/comm", "nv-fabricmanage\n")
        if self.persistenced_running:
            _write(root / f"proc/{PERSISTENCED_PID}/comm", "nvidia-persiste\n")
        groups = root / "sys/kernel/iommu_groups"
        groups.mkdir(parents=True, exist_ok=True)
        for i in range(self.iommu_groups):
            (groups / str(i)).mkdir(exist_ok=True)
        _write(root / "proc/cmdline", self.cmdline + "\n")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def hgx_fabric(count: int = 8, driver: str = "590.48.01", **changes: object) -> Fabric:
    """A healthy HGX H100 node's fabric: four NVSwitches, the fabric manager of the driver's
    version installed, enabled and running, every GPU's fabric trained, 18 NVLinks each up,
    P2P over NVLink between every pair (nvidia-smi topo -m: NV18)."""
    pairs = [(a, b) for a in range(count) for b in range(a + 1, count)]
    ok = nv.NVML_P2P_STATUS_OK
    fabric = Fabric(
        gpu_fabric={i: (nv.NVML_GPU_FABRIC_STATE_COMPLETED, nv.NVML_SUCCESS) for i in range(count)},
        nvlinks={i: (18, (1 << 18) - 1) for i in range(count)},
        p2p={pair: (ok, ok, ok) for pair in pairs},
        topology={
            (a, b): nv.NVML_TOPOLOGY_SYSTEM if (a < 4) != (b < 4) else nv.NVML_TOPOLOGY_NODE
            for a, b in pairs
        },
        nvswitches=HGX_NVSWITCHES,
        fabricmanager_package=f"nvidia-fabricmanager-{driver.split('.')[0]}",
        fabricmanager_version=f"{driver}-1",
        fabricmanager_unit=True,
        fabricmanager_enabled=True,
        fabricmanager_running=True,
        persistenced_running=True,
    )
    for key, value in changes.items():
        setattr(fabric, key, value)
    return fabric
