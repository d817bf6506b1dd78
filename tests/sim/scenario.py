"""Simulated GPU machines for the tests: scenarios as dataclasses, the scenario file the fake
libraries read, the fake libraries themselves (built from fake_nvml.c and fake_cuda.c), and
a fake root (/proc, /sys, /dev, /etc) that gpucheck reads through GPUCHECK_ROOT.

A scenario is a machine: the driver and CUDA versions, each GPU's properties, and faults
(any function returning any error code, sleeping or crashing, for every GPU or one; functions
missing from the library). `Machine.create(scenario, libraries, folder)` lays it out and
gives the environment that makes the real `gpucheck` command see it. See README.md.

GPU presets carry property values from the real nvidia-smi outputs in ../shared/nvsmi, named
beside each preset.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pynvml as nv
import reallibs

from sim.fabric import Fabric
from sim.fake_proc import HostProcess as HostProcess
from sim.fake_proc import write_process, write_self

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
SCENARIO_ENV = "GPUCHECK_SIM_SCENARIO"
ROOT_ENV = "GPUCHECK_ROOT"

# NVIDIA's nvml.h comes from this wheel (the CUDA 13.1 release, as the R590 driver).
NVML_DEV_DIST = "nvidia-nvml-dev"
NVML_DEV_VERSION = "13.1.115"

MIB = 1024**2
GIB = 1024**3

# cuda.h CUresult values the tests use (no cuda.h is fetched for these few numbers).
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_NOT_PERMITTED = 800
CUDA_ERROR_SYSTEM_NOT_READY = 802
CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803
CUDA_ERROR_UNKNOWN = 999


# --- scenarios --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """What one function does instead of answering: return `value` as its error code
    ("error"), sleep `value` seconds and then answer ("sleep"), or crash the process
    ("crash"). `function` is the binding's name ("nvmlInit", "nvmlDeviceGetCount") or the C
    symbol ("nvmlDeviceGetCount_v2"): a name covers its _vN variants. `gpu`: the NVML index
    the fault is for; None for every GPU and the calls about no GPU in particular."""

    function: str
    action: str
    value: int = 0
    gpu: int | None = None

    def line(self) -> str:
        who = "*" if self.gpu is None else str(self.gpu)
        return f"fault {self.function} {who} {self.action} {self.value}"


def error(function: str, code: int, gpu: int | None = None) -> Fault:
    return Fault(function, "error", code, gpu)


def sleep(function: str, seconds: int, gpu: int | None = None) -> Fault:
    return Fault(function, "sleep", seconds, gpu)


def crash(function: str, gpu: int | None = None) -> Fault:
    return Fault(function, "crash", 0, gpu)


@dataclass
class MigDevice:
    slot: int  # nvmlDeviceGetMigDeviceHandleByIndex's index
    name: str
    uuid: str
    memory: int  # bytes


@dataclass
class Process:
    pid: int
    name: str  # what nvmlSystemGetProcessName answers
    used: int  # bytes
    kind: str = "compute"  # or "graphics"
    gpu_instance: int | None = None  # MIG GPU instance id
    compute_instance: int | None = None

    def line(self, gpu: int) -> str:
        if self.kind == "compute" and self.gpu_instance is None:
            return f"gpu {gpu} process {self.pid} {self.used} {self.name}"
        gi = -1 if self.gpu_instance is None else self.gpu_instance
        ci = -1 if self.compute_instance is None else self.compute_instance
        return f"gpu {gpu} process_ex {self.kind} {gi} {ci} {self.pid} {self.used} {self.name}"


@dataclass(frozen=True)
class Step:
    """From the `sample`th sample of GPU `gpu` on (0 is the first), it is `state` (a whole Gpu,
    so processes and every property follow it): a scenario timeline for `gpucheck watch`."""

    sample: int
    gpu: int
    state: Gpu

    def lines(self) -> list[str]:
        prefix = f"step {self.sample} "
        own = [f"gpu {self.gpu} noprocess", *_gpu_lines(self.gpu, self.state)]
        return [prefix + line for line in own if not line.startswith(f"gpu {self.gpu} mig_device")]


@dataclass
class Gpu:
    """One GPU as NVML and CUDA describe it. A property set to None is not supported by this
    GPU: its NVML function(s) return NVML_ERROR_NOT_SUPPORTED (see UNSUPPORTED_WHEN_NONE)."""

    name: str
    uuid: str
    pci_bus_id: str  # "00000000:18:00.0", as NVML prints it
    pci_device_id: int  # 0x233010DE: device << 16 | vendor, as NVML reports it
    pci_subsystem_id: int  # 0x16C110DE: subsystem device << 16 | subsystem vendor
    memory_total: int  # bytes
    memory_used: int  # bytes, nvmlMemory_t.used (what the driver reserves included)
    compute_capability: tuple[int, int]
    brand: int = nv.NVML_BRAND_NVIDIA
    architecture: int = nv.NVML_DEVICE_ARCH_HOPPER
    pci_class: str = "0x030200"  # 3D controller; consumer cards are VGA (0x030000)
    memory_reserved: int = 0
    serial: str | None = None
    utilization: int | None = 0  # percent
    temperature: int | None = 35  # °C
    temperature_thresholds: tuple[int, int] | None = None  # (slowdown, shutdown) °C
    power_draw_mw: int | None = 60_000
    power_limit_mw: int | None = 300_000
    fan: int | None = None  # percent
    clock_event_reasons: int = nv.nvmlClocksEventReasonGpuIdle
    pcie: tuple[int, int, int, int] | None = (4, 4, 16, 16)  # gen, max gen, width, max width
    ecc: tuple[bool, bool] | None = None  # (enabled, enabled after reset)
    ecc_uncorrected: tuple[int, int] = (0, 0)  # (volatile, aggregate)
    retired_pages: tuple[int, int, bool] | None = None  # (single-bit, double-bit, pending)
    remapped_rows: tuple[int, int, bool, bool] | None = None  # (corr, unc, pending, failed)
    persistence: bool | None = False
    display_active: bool | None = False
    compute_mode: int = nv.NVML_COMPUTEMODE_DEFAULT
    mig: tuple[bool, bool] | None = None  # (enabled, enabled after reset)
    mig_max: int = 7  # nvmlDeviceGetMaxMigDeviceCount
    mig_devices: list[MigDevice] = field(default_factory=list)
    processes: list[Process] = field(default_factory=list)
    cuda_hidden: bool = False  # CUDA does not enumerate it (fallen off the bus)
    clocks: tuple[int, int] | None = (1980, 2619)  # SM, memory MHz
    pstate: int | None = 0  # P0
    lost: bool = False  # every NVML call about it answers GPU_IS_LOST

    @property
    def pci_address(self) -> str:
        """The sysfs name: 0000:18:00.0."""
        return self.pci_bus_id[-12:].lower()


UNSUPPORTED_WHEN_NONE: dict[str, tuple[str, ...]] = {
    "serial": ("nvmlDeviceGetSerial",),
    "utilization": ("nvmlDeviceGetUtilizationRates",),
    "temperature": ("nvmlDeviceGetTemperature",),
    "temperature_thresholds": ("nvmlDeviceGetTemperatureThreshold",),
    "power_draw_mw": ("nvmlDeviceGetPowerUsage",),
    "power_limit_mw": ("nvmlDeviceGetEnforcedPowerLimit",),
    "fan": ("nvmlDeviceGetFanSpeed",),
    "pcie": (
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetMaxPcieLinkWidth",
    ),
    "ecc": ("nvmlDeviceGetEccMode", "nvmlDeviceGetTotalEccErrors"),
    "retired_pages": ("nvmlDeviceGetRetiredPages", "nvmlDeviceGetRetiredPagesPendingStatus"),
    "remapped_rows": ("nvmlDeviceGetRemappedRows",),
    "persistence": ("nvmlDeviceGetPersistenceMode",),
    "display_active": ("nvmlDeviceGetDisplayActive",),
    "clocks": ("nvmlDeviceGetClockInfo",),
    "pstate": ("nvmlDeviceGetPerformanceState",),
    "mig": (
        "nvmlDeviceGetMigMode",
        "nvmlDeviceGetMaxMigDeviceCount",
        "nvmlDeviceGetMigDeviceHandleByIndex",
    ),
}


@dataclass
class Scenario:
    gpus: list[Gpu]
    driver: str = "590.48.01"
    cuda: int = 13010  # as NVML and cuDriverGetVersion report it: 13010 = CUDA 13.1
    nvml_version: str | None = None  # default "13.590.48.01"
    library_version: str | None = None  # libnvidia-ml.so.<this>, libcuda.so.<this>; = driver
    module_version: str | None = None  # the kernel module's; = driver
    module_loaded: bool = True
    open_kernel_module: bool = True
    uvm_loaded: bool = True
    device_node_mode: int = 0o666
    faults: list[Fault] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # C symbols left out of libnvidia-ml
    timeline: list[Step] = field(default_factory=list)
    live_processes: bool = False  # a listed process that no longer runs frees its memory
    host_processes: list[HostProcess] = field(default_factory=list)  # the fake /proc's
    # gpucheck's own view: this /proc is the host's (kernel threads show), gpucheck's NSpid
    # in it (two entries: the host's /proc seen from a container), its cgroup (None: the test
    # runner's, which its children share) and PID namespace link.
    kernel_threads: bool = True
    own_nspid: list[int] = field(default_factory=lambda: [4_000_000])
    own_cgroup: str | None = None
    own_pid_ns: str | None = None
    fabric: Fabric | None = None  # NVSwitch, NVLink, P2P and daemons (sim/fabric.py)

    @property
    def lib_version(self) -> str:
        return self.library_version or self.driver

    @property
    def kernel_module_version(self) -> str | None:
        return (self.module_version or self.driver) if self.module_loaded else None

    def text(self) -> str:
        """The scenario file: one fact per line, `key values...`, strings last on a line."""
        lines = ["# gpucheck simulated machine (tests/sim/README.md)", f"driver {self.driver}"]
        lines.append(f"cuda {self.cuda}")
        if self.nvml_version:
            lines.append(f"nvml {self.nvml_version}")
        lines.append(f"gpus {len(self.gpus)}")
        if self.live_processes:
            lines.append("live_processes 1")
        implicit: list[Fault] = []
        for i, g in enumerate(self.gpus):
            lines += _gpu_lines(i, g)
            for prop, functions in UNSUPPORTED_WHEN_NONE.items():
                if getattr(g, prop) is None:
                    implicit += [error(fn, nv.NVML_ERROR_NOT_SUPPORTED, i) for fn in functions]
        # Explicit faults first: among faults for the same GPU, the first one wins.
        lines += [f.line() for f in [*self.faults, *implicit]]
        lines += [f"missing {name}" for name in self.missing]
        lines += [line for step in self.timeline for line in step.lines()]
        lines += self.fabric.lines() if self.fabric else []
        return "\n".join(lines) + "\n"


def _gpu_lines(i: int, g: Gpu) -> list[str]:
    def flag(value: bool | None) -> int:
        return int(bool(value))

    temp_limits = g.temperature_thresholds or (0, 0)
    pcie = g.pcie or (0, 0, 0, 0)
    ecc = g.ecc or (False, False)
    retired = g.retired_pages or (0, 0, False)
    rows = g.remapped_rows or (0, 0, False, False)
    mig = g.mig or (False, False)
    out = [
        f"gpu {i} name {g.name}",
        f"gpu {i} uuid {g.uuid}",
        f"gpu {i} serial {g.serial or ''}".rstrip(),
        f"gpu {i} pci {g.pci_bus_id} {g.pci_device_id:#010x} {g.pci_subsystem_id:#010x}",
        f"gpu {i} brand {g.brand}",
        f"gpu {i} arch {g.architecture}",
        f"gpu {i} memory {g.memory_total} {g.memory_used} {g.memory_reserved}",
        f"gpu {i} cc {g.compute_capability[0]} {g.compute_capability[1]}",
        f"gpu {i} util {g.utilization or 0} 0",
        f"gpu {i} temp {g.temperature or 0} {temp_limits[0]} {temp_limits[1]}",
        f"gpu {i} power {g.power_draw_mw or 0} {g.power_limit_mw or 0}",
        f"gpu {i} fan {g.fan or 0}",
        f"gpu {i} clocks_event {g.clock_event_reasons:#x}",
        f"gpu {i} pcie {pcie[0]} {pcie[1]} {pcie[2]} {pcie[3]}",
        f"gpu {i} ecc {flag(ecc[0])} {flag(ecc[1])}",
        f"gpu {i} ecc_errors {g.ecc_uncorrected[0]} {g.ecc_uncorrected[1]}",
        f"gpu {i} retired {retired[0]} {retired[1]} {flag(retired[2])}",
        f"gpu {i} remap {rows[0]} {rows[1]} {flag(rows[2])} {flag(rows[3])}",
        f"gpu {i} persistence {flag(g.persistence)}",
        f"gpu {i} display {flag(g.display_active)}",
        f"gpu {i} compute_mode {g.compute_mode}",
        f"gpu {i} mig {flag(mig[0])} {flag(mig[1])} {g.mig_max}",
    ]
    out += [f"gpu {i} mig_device {m.slot} {m.memory} {m.uuid} {m.name}" for m in g.mig_devices]
    clocks = g.clocks or (0, 0)
    out += [f"gpu {i} clocks {clocks[0]} {clocks[1]}", f"gpu {i} pstate {g.pstate or 0}"]
    out.append(f"gpu {i} lost {int(g.lost)}")
    out += [p.line(i) for p in g.processes]
    if g.cuda_hidden:
        out.append(f"gpu {i} cuda_hidden 1")
    return out


# --- GPU presets, from real nvidia-smi outputs ----------------------------------------------

# A DGX/HGX H100 board's bus numbers, GPU 0 to 7.
HGX_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


def h100(index: int = 0) -> Gpu:
    """nvidia_gpu_exporter/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt, idle `-q`.
    R590 on Hopper reports temperature limits only as T.Limit margins (the absolute
    thresholds are not supported), and retired pages are N/A (row remapping replaced them).
    UUIDs and serials are masked in the capture; these keep its masked form, made unique."""
    return Gpu(
        name="NVIDIA H100 80GB HBM3",
        uuid=f"GPU-{index:08d}-0000-0000-0000-000000000000",
        serial=f"165{index:010d}",
        pci_bus_id=f"00000000:{HGX_BUSES[index % 8]:02X}:00.0",
        pci_device_id=0x233010DE,
        pci_subsystem_id=0x16C110DE,
        brand=nv.NVML_BRAND_NVIDIA,
        architecture=nv.NVML_DEVICE_ARCH_HOPPER,
        memory_total=81559 * MIB,
        memory_used=479 * MIB,
        memory_reserved=479 * MIB,
        compute_capability=(9, 0),
        utilization=0,
        temperature=41,
        temperature_thresholds=None,
        power_draw_mw=69_620,
        power_limit_mw=700_000,
        fan=None,
        clock_event_reasons=nv.nvmlClocksEventReasonGpuIdle,
        pcie=(5, 5, 16, 16),
        ecc=(True, True),
        retired_pages=None,
        remapped_rows=(0, 0, False, False),
        persistence=True,
        display_active=False,
        mig=(False, False),
    )


def a100_mig() -> Gpu:
    """telegraf/a100-sxm4-v12.xml (driver 535.54.03): A100-SXM4-80GB with MIG on and four
    1g.20gb MIG devices (GPU instances 3-6, 19968 MiB each; the XML lists no MIG UUIDs, so
    these are made up in NVIDIA's format). Utilisation is N/A with MIG on; persistence off."""
    return Gpu(
        name="NVIDIA A100-SXM4-80GB",
        uuid="GPU-513536b6-7d19-9063-b049-1e69664bb298",
        serial="1650522003820",
        pci_bus_id="00000000:01:00.0",
        pci_device_id=0x20B210DE,
        pci_subsystem_id=0x147F10DE,
        brand=nv.NVML_BRAND_NVIDIA,
        architecture=nv.NVML_DEVICE_ARCH_AMPERE,
        memory_total=81920 * MIB,
        memory_used=50 * MIB,
        compute_capability=(8, 0),
        utilization=None,
        temperature=27,
        temperature_thresholds=(89, 92),
        power_draw_mw=67_030,
        power_limit_mw=500_000,
        fan=None,
        pcie=(4, 4, 16, 16),
        ecc=(True, True),
        retired_pages=None,
        remapped_rows=(0, 0, False, False),
        persistence=False,
        mig=(True, True),
        mig_devices=[
            MigDevice(
                slot=i,
                name="NVIDIA A100-SXM4-80GB MIG 1g.20gb",
                uuid=f"MIG-1b3c{i}f2a-5d6e-5f70-8a9b-0c1d2e3f4a5{i}",
                memory=19968 * MIB,
            )
            for i in range(4)
        ],
    )


def rtx_3060() -> Gpu:
    """telegraf/rtx-3060-v12.xml (driver 570.124.04, CUDA 12.8): a consumer card idling at
    PCIe gen 1 of 4; ECC, row remapping, MIG and the serial number are N/A."""
    return Gpu(
        name="NVIDIA GeForce RTX 3060",
        uuid="GPU-d6889ff6-2523-9142-ca3c-1ca3f396a625",
        serial=None,
        pci_bus_id="00000000:2D:00.0",
        pci_device_id=0x248710DE,
        pci_subsystem_id=0x36583842,
        pci_class="0x030000",
        brand=nv.NVML_BRAND_GEFORCE,
        architecture=nv.NVML_DEVICE_ARCH_AMPERE,
        memory_total=12288 * MIB,
        memory_used=116 * MIB,
        compute_capability=(8, 6),
        utilization=0,
        temperature=42,
        temperature_thresholds=(95, 98),
        power_draw_mw=11_630,
        power_limit_mw=170_000,
        fan=0,
        pcie=(1, 4, 16, 16),
        ecc=None,
        retired_pages=None,
        remapped_rows=None,
        persistence=True,
        mig=None,
    )


def rtx_4080_super() -> Gpu:
    """nvidia_gpu_exporter/linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt, idle."""
    return Gpu(
        name="NVIDIA GeForce RTX 4080 SUPER",
        uuid="GPU-00000000-0000-0000-0000-000000004080",
        serial=None,
        pci_bus_id="00000000:01:00.0",
        pci_device_id=0x270210DE,
        pci_subsystem_id=0x51101462,
        pci_class="0x030000",
        brand=nv.NVML_BRAND_GEFORCE,
        architecture=nv.NVML_DEVICE_ARCH_ADA,
        memory_total=16376 * MIB,
        memory_used=596 * MIB,
        compute_capability=(8, 9),
        temperature=43,
        temperature_thresholds=(96, 101),
        power_draw_mw=27_740,
        power_limit_mw=320_000,
        fan=0,
        pcie=(1, 4, 16, 16),
        display_active=True,
        mig=None,
    )


def rtx_2080_super() -> Gpu:
    """nvidia_gpu_exporter/linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt, idle."""
    return Gpu(
        name="NVIDIA GeForce RTX 2080 SUPER",
        uuid="GPU-00000000-0000-0000-0000-000000002080",
        serial=None,
        pci_bus_id="00000000:0C:00.0",
        pci_device_id=0x1E8110DE,
        pci_subsystem_id=0x40051458,
        pci_class="0x030000",
        brand=nv.NVML_BRAND_GEFORCE,
        architecture=nv.NVML_DEVICE_ARCH_TURING,
        memory_total=8192 * MIB,
        memory_used=214 * MIB,
        compute_capability=(7, 5),
        temperature=40,
        temperature_thresholds=(97, 100),
        power_draw_mw=37_620,
        power_limit_mw=250_000,
        fan=38,
        pcie=(1, 3, 16, 16),
        display_active=True,
        mig=None,
    )


def gt_1030() -> Gpu:
    """telegraf/gt-1030.xml (driver 470.74, CUDA 11.4): a Pascal card on an x4 link; power
    draw N/A. The capture's processes are graphics ones; a compute process is added here."""
    return Gpu(
        name="NVIDIA GeForce GT 1030",
        uuid="GPU-857c6374-f681-cf3a-f99f-9063a87b8ac0",
        serial=None,
        pci_bus_id="00000000:2D:00.0",
        pci_device_id=0x1D0110DE,
        pci_subsystem_id=0x8C981462,
        pci_class="0x030000",
        brand=nv.NVML_BRAND_GEFORCE,
        architecture=nv.NVML_DEVICE_ARCH_PASCAL,
        memory_total=1998 * MIB,
        memory_used=875 * MIB,
        compute_capability=(6, 1),
        temperature=36,
        temperature_thresholds=(99, 102),
        power_draw_mw=None,
        power_limit_mw=30_000,
        fan=35,
        pcie=(3, 3, 4, 4),
        display_active=True,
        mig=None,
        processes=[Process(2211, "/usr/bin/python3", 300 * MIB)],
    )


def h100_node(count: int = 8, **changes: Any) -> Scenario:
    """A healthy HGX H100 node on driver 590.48.01 (CUDA 13.1), open kernel module."""
    return Scenario(gpus=[h100(i) for i in range(count)], **changes)


def replace(gpu: Gpu, **changes: Any) -> Gpu:
    return dataclasses.replace(gpu, **changes)


# --- the libraries ----------------------------------------------------------------------------


def find_compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc")


def nvml_include_dir(cache: Path | None = None) -> Path:
    """The folder holding NVIDIA's nvml.h, from the nvidia-nvml-dev wheel, fetched once into
    the test cache (reallibs' conventions: a lock, a marker after a complete fetch)."""
    base = (cache or reallibs.cache_root()) / "nvml-dev"
    with reallibs._locked(base):
        marker = reallibs._read_marker(base)
        include = base / "include"
        if (
            marker is not None
            and marker.get("version") == NVML_DEV_VERSION
            and (include / "nvml.h").is_file()
        ):
            return include
        reallibs._wipe(base, keep={".lock"})
        wheels = base / "wheels"
        wheels.mkdir()
        wheel = reallibs._download_wheel(NVML_DEV_DIST, NVML_DEV_VERSION, wheels)
        try:
            with zipfile.ZipFile(wheel) as zf:
                headers = [n for n in zf.namelist() if n.endswith("/include/nvml.h")]
                if len(headers) != 1:
                    raise reallibs.FetchError(f"{wheel.name} holds no single nvml.h: {headers}")
                include.mkdir()
                (include / "nvml.h").write_bytes(zf.read(headers[0]))
        except (zipfile.BadZipFile, OSError) as exc:
            raise reallibs.FetchError(f"{wheel.name}: cannot extract nvml.h: {exc}") from exc
        shutil.rmtree(wheels)
        reallibs._write_marker(
            base, {"version": NVML_DEV_VERSION, "wheel": wheel.name, "header": headers[0]}
        )
        return include


class BuildError(Exception):
    pass


def _cc(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stderr}")


@dataclass(frozen=True)
class Libraries:
    """The fake libraries, built once per test session; per-scenario variants link fast."""

    build_dir: Path
    compiler: str
    nvml_object: Path  # fake_nvml.o, linked into each libnvidia-ml variant
    nvml: Path  # every function
    cuda: Path

    @classmethod
    def build(cls, include: Path, build_dir: Path, compiler: str) -> Libraries:
        build_dir.mkdir(parents=True, exist_ok=True)
        obj = build_dir / "fake_nvml.o"
        flags = ["-fPIC", "-O1", "-Wall", "-Wextra"]
        _cc([compiler, "-c", *flags, f"-I{include}", str(HERE / "fake_nvml.c"), "-o", str(obj)])
        libs = cls(build_dir, compiler, obj, build_dir / "libnvidia-ml.so", build_dir / "cuda.so")
        libs._link_nvml(libs.nvml, [])
        _cc(
            [
                compiler,
                "-shared",
                *flags,
                "-Wl,-soname,libcuda.so.1",
                str(HERE / "fake_cuda.c"),
                "-o",
                str(libs.cuda),
            ]
        )
        return libs

    def _link_nvml(self, out: Path, missing: list[str]) -> None:
        cmd = [self.compiler, "-shared", "-Wl,-soname,libnvidia-ml.so.1"]
        if missing:
            # Exact names in `local:` win over the `global: *` wildcard: these are not exported.
            script = out.with_suffix(".map")
            script.write_text(f"{{\n  global: *;\n  local: {'; '.join(missing)};\n}};\n")
            cmd.append(f"-Wl,--version-script={script}")
        _cc([*cmd, str(self.nvml_object), "-o", str(out)])

    def nvml_without(self, missing: list[str]) -> Path:
        """libnvidia-ml lacking `missing` (an older driver), linked once per distinct set."""
        if not missing:
            return self.nvml
        key = hashlib.sha256(" ".join(sorted(missing)).encode()).hexdigest()[:12]
        out = self.build_dir / f"libnvidia-ml-without-{key}.so"
        if not out.exists():
            self._link_nvml(out, sorted(missing))
        return out


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
