"""A fabricated root tree for the system probe (sysfs, procfs, /dev, /etc laid out as the kernel
lays them out, with real banner and module texts), and the probe run against it."""

from __future__ import annotations

from pathlib import Path

from gpucheck.probes.system import (
    probe_system,
)

PCI_IDS = Path(__file__).resolve().parents[1] / "fixtures" / "pci.ids"

BANNER_PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n"
)
# The two banner formats (proprietary and open kernel module); the open one's build time after
# "Mon Dec  8" is filled in for the test, as are the GCC lines.
BANNER_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  590.48.01  Release Build  "
    "(dvs-builder@U22-I3-AE18-23-3)  Mon Dec  8 13:45:31 UTC 2025\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
)
PROC_MODULES = (
    "nvidia_uvm 1544192 0 - Live 0x0000000000000000 (POE)\n"
    "nvidia_drm 77824 0 - Live 0x0000000000000000 (POE)\n"
    "nvidia_modeset 1314816 1 nvidia_drm, Live 0x0000000000000000 (POE)\n"
    "nvidia 56799232 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
    "ext4 1003520 2 - Live 0x0000000000000000\n"
)
OS_RELEASE = (
    'PRETTY_NAME="Ubuntu 22.04.5 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
    'VERSION="22.04.5 LTS (Jammy Jellyfish)"\nID=ubuntu\n'
)


class Tree:
    """A fabricated root file system."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, rel: str, content: str | bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return path

    def pci(
        self,
        address: str,
        vendor: str,
        device: str,
        cls: str,
        subsystem: tuple[str, str] | None = None,
        driver: str | None = None,
    ) -> None:
        """sysfs as the kernel has it: the device under /sys/devices, a symlink to it from
        /sys/bus/pci/devices, and its `driver` a symlink into /sys/bus/pci/drivers."""
        real = self.root / "sys/devices/pci0000:00" / address
        real.mkdir(parents=True)
        for name, value in (("vendor", vendor), ("device", device), ("class", cls)):
            (real / name).write_text(value + "\n")
        if subsystem:
            (real / "subsystem_vendor").write_text(subsystem[0] + "\n")
            (real / "subsystem_device").write_text(subsystem[1] + "\n")
        bus = self.root / "sys/bus/pci/devices"
        bus.mkdir(parents=True, exist_ok=True)
        (bus / address).symlink_to(f"../../../devices/pci0000:00/{address}")
        if driver:
            drivers = self.root / "sys/bus/pci/drivers" / driver
            drivers.mkdir(parents=True, exist_ok=True)
            (real / "driver").symlink_to(f"../../../bus/pci/drivers/{driver}")

    def h100_host(self) -> None:
        """Two H100 SXM5 GPUs bound to nvidia, beside other devices on the bus."""
        self.pci("0000:00:00.0", "0x8086", "0x09a2", "0x060000")  # Intel host bridge
        self.pci("0000:17:00.0", "0x10de", "0x2330", "0x030200", ("0x10de", "0x16c1"), "nvidia")
        self.pci("0000:2a:00.0", "0x10de", "0x2330", "0x030200", ("0x10de", "0x16c1"), "nvidia")
        self.pci("0000:3d:00.0", "0x15b3", "0x1021", "0x020700", driver="mlx5_core")  # NIC
        self.write("proc/modules", PROC_MODULES)
        self.write("proc/driver/nvidia/version", BANNER_PROPRIETARY)
        self.write("dev/nvidiactl", "")
        self.write("dev/nvidia0", "")
        self.write("dev/nvidia1", "")
        self.write("dev/nvidia-uvm", "")
        self.write("etc/os-release", OS_RELEASE)


def probe(tree: Tree, env: dict[str, str] | None = None, **kw):  # type: ignore[no-untyped-def]
    return probe_system(root=tree.root, env=env or {}, **kw)
