"""More snapshot builders for the check tests, made the ways builders.py makes a GPU, a node
and an unloaded module: a T4, a driver 535 node, and broken states (evaluate.py runs the checks
on them).

Values come from the real outputs in tests/fixtures/nvsmi where a builder names one; the broken
states (an NVML init error, a container without its GPU) are the facts the probes record
for them: the pynvml exception's name and message, cuInit's CUresult name.
"""

from __future__ import annotations

from gpucheck.model.snapshot import (
    CudaDriverFacts,
    DeviceNode,
    GpuFacts,
    NvmlError,
    NvmlFacts,
    ProbeRun,
    Snapshot,
    SystemFacts,
)
from gpucheck.model.types import RunStatus
from support import builders

# pynvml's error codes and messages (NVML_ERROR_* and nvmlErrorString), by the name the NVML
# probe records (the exception class name without its NVMLError_ prefix).
NVML_ERRORS = {
    "NoPermission": (4, "Insufficient Permissions"),
    "DriverNotLoaded": (9, "Driver Not Loaded"),
    "LibraryNotFound": (12, "NVML Shared Library Not Found"),
    "GpuIsLost": (15, "GPU is lost"),
    "LibRmVersionMismatch": (18, "RM has detected an NVML/RM version mismatch."),
}

# cuInit's CUresult values (cuda.h) by name.
CU_RESULTS = {
    "CUDA_ERROR_NO_DEVICE": 100,
    "CUDA_ERROR_SYSTEM_NOT_READY": 802,
    "CUDA_ERROR_UNKNOWN": 999,
    "CUDA_ERROR_OPERATING_SYSTEM": 304,
}


def t4(index: int = 0) -> GpuFacts:
    """telegraf/tesla-t4.xml: Tesla T4 in a cloud VM (pass-through), driver 515.105.01, CUDA 11.7,
    persistence mode off, ECC on, PCIe gen 3 at x8 of x16, 1032 of 15360 MiB used."""
    return builders.idle_gpu(
        index,
        "Tesla T4",
        "GPU-d37e67a5-91dd-3774-a5cb-99096249601a",
        "00000000:00:1E.0",
        "NVIDIA",
        memory_mib=(15360, 1032),
        compute=("7.5", "Turing"),
        pcie=(3, 3, 8, 16),
        temperature_c=40,
        temperature_slowdown_c=93,
        **builders.NO_ECC_ERRORS,
        persistence_mode=False,
        display_active=False,
        mig_enabled=None,
        field_errors={"mig_enabled": "NotSupported", "remap_pending": "NotSupported"},
    )


def t4_vm() -> Snapshot:
    """A cloud VM with one Tesla T4 on driver 515.105.01 (CUDA 11.7); the banner's build date
    is illustrative (the capture has no /proc banner), only its format matters."""
    snap = builders.node([t4(0)], "515.105.01", 11070, built="Wed Mar  1 21:25:33 UTC 2023")
    snap.system.pci_gpus[0].device_id = "0x1eb8"
    return snap


def driver_535_node(count: int = 2) -> Snapshot:
    """H100s on the 535.104.05 driver (CUDA 12.2), the kernel module's proprietary banner."""
    gpus = [builders.h100(i) for i in range(count)]
    return builders.node(gpus, "535.104.05", 12020, built="Sat Aug 19 01:15:15 UTC 2023")


def nvml_fails(snap: Snapshot, name: str, library_path: str | None = None) -> Snapshot:
    """The NVML probe's record of an nvmlInit that raised NVMLError_<name>: no driver facts,
    no GPUs; libcuda's cuInit fails alongside it (the same driver)."""
    code, message = NVML_ERRORS[name]
    snap.nvml = NvmlFacts(
        binding_version=builders.BINDING,
        library_path=library_path if name != "LibraryNotFound" else None,
        init_error=NvmlError(code, name, message),
    )
    if name == "LibraryNotFound":
        snap.cuda.driver = CudaDriverFacts(
            load_error="libcuda.so.1: cannot open shared object file: No such file or directory"
        )
    else:
        snap.cuda.driver = _cuinit_unknown(builders.LIBCUDA)
    return snap


def _cuinit_unknown(library_path: str) -> CudaDriverFacts:
    """libcuda loaded, its cuInit failed with CUDA_ERROR_UNKNOWN."""
    return CudaDriverFacts(
        library_path=library_path,
        init_result=CU_RESULTS["CUDA_ERROR_UNKNOWN"],
        init_error_name="CUDA_ERROR_UNKNOWN",
    )


def module_not_loaded(snap: Snapshot) -> Snapshot:
    """The GPU is on the bus, the driver is installed, the kernel module is not loaded: the
    probes then skip nvmlInit and cuInit (as on builders.no_gpu_machine)."""
    sysf = builders.module_unloaded(snap.system)
    for dev in sysf.pci_gpus:
        dev.driver = None
    sysf.device_nodes = [DeviceNode(n.path, False) for n in sysf.device_nodes]
    library = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.590.48.01"
    snap.nvml, snap.cuda.driver = builders.inits_skipped(library, 13010)
    return snap


def container_without_gpu(kind: str = "docker", evidence: str = "/.dockerenv exists") -> Snapshot:
    """A container started without the GPU on an H100 host: the host's PCI bus and /proc/modules
    show through, but there are no /dev/nvidia* nodes and no driver libraries inside."""
    snap = builders.h100_node(1)
    sysf = snap.system
    sysf.container = kind
    sysf.container_evidence = evidence
    sysf.device_nodes = [DeviceNode(n.path, False) for n in sysf.device_nodes]
    return nvml_fails(snap, "LibraryNotFound")


def hidden_bus_container(kind: str = "docker", evidence: str = "/.dockerenv exists") -> Snapshot:
    """A sandboxed container: /sys/bus/pci lists nothing, no device nodes, no driver, and the
    host's modules are not visible either."""
    snap = container_without_gpu(kind, evidence)
    _no_bus(snap.system)
    return snap


def _no_bus(sysf: SystemFacts) -> None:
    """No PCI device visible and no kernel module inside (a sandbox, WSL2)."""
    sysf.pci_device_count = 0
    sysf.pci_gpus = []
    builders.module_unloaded(sysf)


def wsl_system(snap: Snapshot) -> Snapshot:
    """`snap` as WSL2 lays a machine out: GPUs paravirtualised through /dev/dxg, the Windows
    driver's libraries in /usr/lib/wsl/lib, no PCI GPU and no kernel module inside."""
    sysf = snap.system
    sysf.wsl = True
    sysf.kernel = "5.15.153.1-microsoft-standard-WSL2"
    _no_bus(sysf)
    sysf.device_nodes = [DeviceNode("/dev/dxg", True, True, True, "crw-rw-rw-", "root")]
    snap.nvml.library_path = "/usr/lib/wsl/lib/libnvidia-ml.so.1"
    snap.cuda.driver.library_path = "/usr/lib/wsl/lib/libcuda.so.1"
    return snap


def wsl_machine() -> Snapshot:
    """WSL2 (wsl_system) where the NVML probe did not get to answer (init_error Unknown)."""
    snap = wsl_system(builders.workstation())
    snap.nvml = NvmlFacts(
        binding_version=builders.BINDING,
        library_path="/usr/lib/wsl/lib/libnvidia-ml.so.1",
        init_error=NvmlError(999, "Unknown", "Unknown Error"),
    )
    snap.cuda.driver = _cuinit_unknown("/usr/lib/wsl/lib/libcuda.so.1")
    return snap


def probe(snap: Snapshot, name: str, status: RunStatus, error: str | None = None) -> Snapshot:
    """Replace one probe's run record."""
    snap.probes = [p for p in snap.probes if p.name != name]
    snap.probes.append(ProbeRun(name, status, 1000.0, error))
    return snap
