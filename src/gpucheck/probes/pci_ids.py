"""NVIDIA's PCI devices: one walk of /sys/bus/pci for the GPUs and the NVSwitches (the
system and fabric probes share it), and their names from the system's PCI ID database
(pci.ids), NVIDIA's section only.

A machine whose driver is broken can still say which GPU it holds; this is how.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from gpucheck.model.snapshot import PciDevice
from gpucheck.probes.files import read_text

NVIDIA_VENDOR = "0x10de"
# PCI class 0x03 = display controller: 0x0300 VGA, 0x0302 3D controller (most data-centre GPUs).
GPU_CLASSES = ("0x0300", "0x0302")
NVSWITCH_CLASS = "0x0680"  # bridge, other: what NVSwitch devices report

PCI_IDS_LOCATIONS = (
    "usr/share/misc/pci.ids",
    "usr/share/hwdata/pci.ids",
    "usr/share/pci.ids",
    "usr/share/misc/pciids/pci.ids",
)


@dataclass
class PciIds:
    path: Path
    devices: dict[str, str] = field(default_factory=dict)  # "2330" -> "GH100 [H100 SXM5 80GB]"
    subsystems: dict[tuple[str, str, str], str] = field(default_factory=dict)

    def name(
        self,
        device_id: str,
        subsystem_vendor: str | None = None,
        subsystem_device: str | None = None,
    ) -> str | None:
        dev = _hex4(device_id)
        if subsystem_vendor and subsystem_device:
            sub = self.subsystems.get((dev, _hex4(subsystem_vendor), _hex4(subsystem_device)))
            if sub:
                return sub
        return self.devices.get(dev)


def _hex4(value: str) -> str:
    return value.lower().removeprefix("0x").zfill(4)


def parse_pci_ids(path: Path, vendor: str = "10de") -> PciIds:
    """Read one vendor's devices and subsystems; the rest of the 1 MB file is skipped fast."""
    ids = PciIds(path=path)
    inside = False
    device = None
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not inside:
                if line.startswith(vendor + "  "):
                    inside = True
                continue
            if not line.strip() or line.startswith("#"):
                continue
            if not line.startswith("\t"):
                break  # the next vendor
            if line.startswith("\t\t"):
                parts = line.strip().split(None, 2)
                if device and len(parts) == 3:
                    ids.subsystems[(device, parts[0].lower(), parts[1].lower())] = parts[2]
                continue
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                device = parts[0].lower()
                ids.devices[device] = parts[1]
    return ids


def find_pci_ids(root: Path = Path("/")) -> PciIds | None:
    for rel in PCI_IDS_LOCATIONS:
        path = root / rel
        if path.is_file():
            try:
                return parse_pci_ids(path)
            except OSError:
                continue
    return None


def scan_pci(root: Path) -> tuple[bool, int, list[PciDevice], list[str]]:
    """(readable, devices seen, NVIDIA display/3D controllers, NVIDIA NVSwitch addresses)
    from /sys/bus/pci: one walk for the GPUs and the fabric probe's switches."""
    base = root / "sys/bus/pci/devices"
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return False, 0, [], []
    gpus = []
    switches = []
    for address in entries:
        dev = base / address
        vendor = (read_text(dev / "vendor") or "").strip().lower()
        cls = (read_text(dev / "class") or "").strip().lower()
        if vendor == NVIDIA_VENDOR and cls.startswith(NVSWITCH_CLASS):
            switches.append(address)
        if vendor != NVIDIA_VENDOR or not cls.startswith(GPU_CLASSES):
            continue
        driver = None
        with contextlib.suppress(OSError):
            driver = os.path.basename(os.readlink(dev / "driver"))
        gpus.append(
            PciDevice(
                address=address,
                vendor_id=vendor,
                device_id=(read_text(dev / "device") or "").strip().lower(),
                class_code=cls,
                subsystem_vendor_id=((read_text(dev / "subsystem_vendor") or "").strip().lower())
                or None,
                subsystem_device_id=((read_text(dev / "subsystem_device") or "").strip().lower())
                or None,
                driver=driver,
            )
        )
    return True, len(entries), gpus, switches
