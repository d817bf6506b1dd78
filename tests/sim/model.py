"""A simulated machine's scenario as dataclasses: the driver and CUDA versions, each GPU's
properties, and faults (any function returning any error code, sleeping or crashing, for every
GPU or one; functions missing from the library), and the scenario file the fake libraries read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pynvml as nv

from sim.fabric import Fabric
from sim.fake_proc import HostProcess as HostProcess
from sim.network import Network

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
    # The kernel log /dev/kmsg holds (its NVRM lines since boot); None: no /dev/kmsg at all.
    kernel_log: list[str] | None = field(default_factory=list)
    # More files of the root by path (a DKMS tree, /etc/ld.so.conf.d, /etc/cdi:
    # sim/install_tree.py).
    files: dict[str, str] = field(default_factory=dict)
    network: Network | None = None  # RDMA, NICs, the PCIe tree, limits (sim/network.py)

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
