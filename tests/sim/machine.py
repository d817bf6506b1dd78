"""A simulated machine in one folder: its scenario file, the fake libraries and a fake root
(/proc, /sys, /dev, /etc) that gpucheck reads through GPUCHECK_ROOT. `Machine.create(scenario,
libraries, folder)` lays it out and gives the environment that makes the real `gpucheck`
command see it."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from sim.fake_proc import write_process, write_self
from sim.libraries import Libraries
from sim.model import ROOT_ENV, SCENARIO_ENV, TESTS, Scenario

# --- a machine: scenario file, libraries and fake root in one folder ------------------------

PCI_IDS = TESTS / "fixtures" / "pci.ids"
# Non-NVIDIA devices on the simulated bus (an Intel host bridge, ISA bridge, a NIC).
OTHER_PCI = (
    ("0000:00:00.0", "0x8086", "0x09a2", "0x060000"),
    ("0000:00:1f.0", "0x8086", "0x1bca", "0x060100"),
    ("0000:17:00.0", "0x15b3", "0x1021", "0x020000"),
)


@dataclass
class Machine:
    scenario: Scenario
    folder: Path
    root: Path  # the fake /
    lib_dir: Path  # libnvidia-ml.so.1 and libcuda.so.1
    scenario_file: Path

    @classmethod
    def create(cls, scenario: Scenario, libraries: Libraries, folder: Path) -> Machine:
        machine = cls(scenario, folder, folder / "root", folder / "lib", folder / "scenario.txt")
        folder.mkdir(parents=True, exist_ok=True)
        machine.scenario_file.write_text(scenario.text())
        machine._install_libraries(libraries)
        write_root(scenario, machine.root)
        return machine

    def _install_libraries(self, libraries: Libraries) -> None:
        # Copies, not links: the probes read the version from the path the loader mapped
        # (/proc/self/maps), which for a symlink is its target.
        self.lib_dir.mkdir(parents=True)
        version = self.scenario.lib_version
        for source, soname in (
            (libraries.nvml_without(self.scenario.missing), "libnvidia-ml.so"),
            (libraries.cuda, "libcuda.so"),
        ):
            real = self.lib_dir / f"{soname}.{version}"
            shutil.copyfile(source, real)
            (self.lib_dir / f"{soname}.1").symlink_to(real.name)

    @property
    def env(self) -> dict[str, str]:
        """Added to the environment of a gpucheck run to put it on this machine."""
        return {
            "LD_LIBRARY_PATH": str(self.lib_dir),
            SCENARIO_ENV: str(self.scenario_file),
            ROOT_ENV: str(self.root),
            # Not this machine's container or job settings: the simulated one has none.
            "container": "",
            "KUBERNETES_SERVICE_HOST": "",
            "CUDA_LAUNCH_BLOCKING": "",
        }


def _write(path: Path, text: str, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mode is not None:
        os.chmod(path, mode)


def module_banner(scenario: Scenario) -> str:
    """/proc/driver/nvidia/version as the driver writes it."""
    version = scenario.kernel_module_version
    if scenario.open_kernel_module:
        first = (
            f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release Build  "
            "(dvs-builder@U22-I3-AF03-09-1)  Mon Dec  1 23:55:06 UTC 2025"
        )
    else:
        first = (
            f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {version}  "
            "Fri Feb 21 20:37:25 UTC 2025"
        )
    return first + "\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04) \n"


def write_root(scenario: Scenario, root: Path) -> None:
    """The files gpucheck's system probe reads, as an Ubuntu 22.04 GPU node has them."""
    _write(
        root / "etc/os-release",
        'PRETTY_NAME="Ubuntu 22.04.5 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\n',
    )
    _write(
        root / "proc/version",
        "Linux version 5.15.0-185-generic (buildd@lcy02-amd64-059) (gcc (Ubuntu "
        "11.4.0-1ubuntu1~22.04) 11.4.0) #195-Ubuntu SMP Fri Aug 22 15:05:44 UTC 2025\n",
    )
    _write(root / "proc/1/cgroup", "0::/init.scope\n")
    _write(root / "proc/stat", "cpu  1 2 3 4\nbtime 1763880000\n")
    for proc in scenario.host_processes:
        write_process(root / "proc" / str(proc.pid), proc)
    write_self(
        root / "proc",
        scenario.own_nspid,
        scenario.own_cgroup,
        scenario.own_pid_ns,
        scenario.kernel_threads,
    )
    modules = ["ext4 1097728 1 - Live 0x0000000000000000", "mlx5_core 2097152 0 - Live 0x0"]
    if scenario.module_loaded:
        if scenario.uvm_loaded:
            modules.insert(0, "nvidia_uvm 1908736 0 - Live 0x0000000000000000 (POE)")
        modules[:0] = [
            "nvidia_drm 122880 0 - Live 0x0000000000000000 (POE)",
            "nvidia_modeset 1556480 1 nvidia_drm, Live 0x0000000000000000 (POE)",
            "nvidia 14376960 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)",
        ]
        _write(root / "proc/driver/nvidia/version", module_banner(scenario))
    _write(root / "proc/modules", "\n".join(modules) + "\n")
    devices = root / "sys/bus/pci/devices"
    for address, vendor, device, cls in OTHER_PCI:
        _pci_device(devices / address, vendor, device, cls, None, None)
    for gpu in scenario.gpus:
        _pci_device(
            devices / gpu.pci_address,
            "0x10de",
            f"{gpu.pci_device_id >> 16:#06x}",
            gpu.pci_class,
            (gpu.pci_subsystem_id & 0xFFFF, gpu.pci_subsystem_id >> 16),
            "nvidia" if scenario.module_loaded else None,
        )
    _write(root / "usr/share/misc/pci.ids", PCI_IDS.read_text())
    if scenario.module_loaded:
        mode = scenario.device_node_mode
        nodes = ["nvidiactl", *(f"nvidia{i}" for i in range(len(scenario.gpus)))]
        if scenario.uvm_loaded:
            nodes += ["nvidia-uvm", "nvidia-uvm-tools"]
        for name in nodes:
            _write(root / "dev" / name, "", mode)
    else:
        (root / "dev").mkdir(parents=True, exist_ok=True)
    if scenario.fabric is not None:
        scenario.fabric.write_root(root)
    if scenario.kernel_log is not None:
        # /dev/kmsg's records: "level,sequence,microseconds,flags;text", one a line.
        records = [f"4,{i},{i * 1000},-;{line}\n" for i, line in enumerate(scenario.kernel_log)]
        _write(root / "dev/kmsg", "".join(records))
    for path, text in scenario.files.items():
        _write(root / path.lstrip("/"), text)
    if scenario.network is not None:
        scenario.network.write_root(root)


def _pci_device(
    folder: Path,
    vendor: str,
    device: str,
    cls: str,
    subsystem: tuple[int, int] | None,
    driver: str | None,
) -> None:
    _write(folder / "vendor", vendor + "\n")
    _write(folder / "device", device + "\n")
    _write(folder / "class", cls + "\n")
    if subsystem is not None:
        _write(folder / "subsystem_vendor", f"{subsystem[0]:#06x}\n")
        _write(folder / "subsystem_device", f"{subsystem[1]:#06x}\n")
    if driver:
        (folder / "driver").symlink_to(f"../../../../bus/pci/drivers/{driver}")
