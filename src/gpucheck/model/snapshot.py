"""The snapshot: every fact the probes gathered, and nothing they concluded.

It is the contract between probing and judging: `gpucheck snapshot` writes it, `doctor --from`
reads it back, and every check test is a small snapshot. `None` always means "unknown"
(not read, not supported, probe failed); the reason, where there is one, sits beside it
(`field_errors`, `init_error`, the probe runs).

Schema versions are "MAJOR.MINOR": a minor bump only adds optional fields, so any snapshot of
the same major is readable; a different major is refused with a clear message.
"""

# No `from __future__ import annotations`: msgspec would compile and evaluate every string
# annotation when it first decodes these records, on every `doctor --from`.
from typing import Any

import msgspec
from msgspec import Struct, field

from gpucheck.model.decoding import DecodeError, from_dict, refuse_repeats, to_dict, to_json
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.fabric import FabricHostFacts, GpuPair
from gpucheck.model.install_state import InstallStateFacts
from gpucheck.model.network import NetworkFacts
from gpucheck.model.processes import HostProcess as HostProcess
from gpucheck.model.processes import ProcessFacts as ProcessFacts
from gpucheck.model.types import ChildFailure, Count, Int, RunStatus
from gpucheck.version import __version__

SCHEMA_VERSION = "1.6"  # 1.1: frameworks (Python environments, static and deep facts)
# 1.2: the nvidia module on disk (what the next boot loads) and DKMS; every CUDA library
# soname's copies (cuda.libraries); the container host's toolkit, runtimes and CDI specs;
# libcuda's ldconfig cache entries; the kernel log's NVRM lines; system.host (identity);
# redacted; GPU holders from /proc (processes), process kinds and MIG instances, minor numbers
# 1.3: nova_core loaded; the nvidia runtime Docker's daemon.json registers and whether it
# exists; each GPU's SM clock (clock_sm_mhz)
# 1.4: system.fabric (NVSwitch, fabric manager, persistence daemon, IOMMU); per GPU fabric state
# and status and NVLink link states; nvml.pairs (P2P status and topology of each GPU pair)
# 1.4 also: the docker CLI's engine (context, endpoint, dockerd); conda's build strings, depends
# and CUDA libraries in environments. 1.5: network (RDMA devices and ports, NICs, GPU-NIC PCIe
# distances, IOMMU, peermem, /dev/shm, memlock, NCCL env); install_state (DKMS, loader, CDI)
# 1.6: environments[].compiled (kernel libraries' SASS/PTX); processes.sees_every_pid, init_name
SCHEMA_MAJOR = int(SCHEMA_VERSION.split(".")[0])
SNAPSHOT_LIMIT = 64 * 1024 * 1024  # bytes: far above any real snapshot or report, far below harm


FACT_GROUPS = ("system", "nvml", "cuda", "cudnn", "environments")  # each from its own probes


class SnapshotError(ValueError):
    """A snapshot file that cannot be read: the message is one line for the user."""


# --- probe bookkeeping -----------------------------------------------------------------------


class ProbeRun(Struct):
    """How one probe went: the facts it produced are in their own section."""

    name: str
    status: RunStatus  # skipped: deliberately not run (why: `error`)
    duration_ms: float
    error: str | None = None
    failure: ChildFailure | None = None  # a child that timed out, crashed or failed


# --- system -------------------------------------------------------------------------------


class PciDevice(Struct):
    address: str  # "0000:17:00.0"
    vendor_id: str  # "0x10de"
    device_id: str  # "0x2330"
    class_code: str  # "0x030200" (3D controller)
    subsystem_vendor_id: str | None = None
    subsystem_device_id: str | None = None
    name: str | None = None  # from the system's pci.ids, where it has one
    driver: str | None = None  # kernel driver bound to it: nvidia, nouveau, vfio-pci, ...


class DeviceNode(Struct):
    path: str
    exists: bool
    readable: bool = False
    writable: bool = False
    mode: str | None = None  # "crw-rw-rw-"
    owner_group: str | None = None


class ContainerHostFacts(Struct):
    """A host's side of GPU containers (read on hosts only; unknown inside a container)."""

    engines: list[str] = field(default_factory=list)  # docker, podman, ... installed
    toolkit: list[str] = field(default_factory=list)  # NVIDIA Container Toolkit programs found
    docker_runtimes: list[str] | None = None  # /etc/docker/daemon.json's runtimes; None: no file
    cdi_specs: list[str] = field(default_factory=list)  # /etc/cdi, /var/run/cdi
    # daemon.json's runtime named nvidia: its "path" as written (a bare name is looked up on
    # PATH; the GPU Operator registers /usr/local/nvidia/toolkit/...), and whether it exists.
    docker_nvidia_runtime_path: str | None = None
    docker_nvidia_runtime_found: bool | None = None
    dev_char_links: Count | None = None  # /dev/char links to nvidia nodes; None: unreadable
    cgroup_version: Count | None = None
    # The engine the docker CLI talks to, as the CLI resolves it (DOCKER_HOST, DOCKER_CONTEXT,
    # ~/.docker/config.json's currentContext, else "default"): its context name, where that
    # came from (DOCKER_HOST | DOCKER_CONTEXT | config | default) and its endpoint. Docker
    # Desktop's desktop-linux context runs containers in a VM without the host's GPUs.
    docker_context: str | None = None
    docker_context_source: str | None = None
    docker_endpoint: str | None = None
    dockerd: bool | None = None  # Docker Engine's daemon is installed on this host


class HostIdentity(Struct):
    """Which machine this is, stable across renames and reboots, to join a fleet's reports."""

    host_id: str | None = None  # --host-id, or "mid-" + a keyed hash of /etc/machine-id
    host_id_source: str | None = None  # option | machine-id
    fqdn: str | None = None
    boot_time: str | None = None  # ISO 8601, UTC
    cloud: str | None = None  # the provider, where the local files say (aws, gce, azure, ...)
    cloud_instance_id: str | None = None
    board_serial: str | None = None  # where readable (usually root only)


class SystemFacts(Struct):
    os: str = ""  # platform.system(): Linux, Windows, Darwin
    os_release: str | None = None  # /etc/os-release PRETTY_NAME
    kernel: str = ""
    arch: str = ""
    hostname: str = ""
    python_version: str = ""
    python_executable: str = ""
    container: str | None = None  # docker | podman | kubernetes | containerd | lxc | container
    container_evidence: str | None = None
    wsl: bool = False
    pci_scanned: bool = False  # False: /sys/bus/pci could not be read (no facts, not "no GPU")
    pci_device_count: Count = 0  # all PCI devices seen; 0 with pci_scanned means a hidden bus
    pci_gpus: list[PciDevice] = field(default_factory=list)
    pci_ids_path: str | None = None
    nvidia_module_loaded: bool | None = None
    nvidia_module_version: str | None = None
    nvidia_module_banner: str | None = None  # /proc/driver/nvidia/version, first line
    nvidia_modules: list[str] = field(default_factory=list)  # nvidia, nvidia_uvm, ... loaded
    # The nvidia.ko the next boot loads for this kernel (depmod's order: updates/ first), its
    # modinfo version, and why unknown; a version unlike the user-space driver survives reboot.
    nvidia_module_file: str | None = None
    nvidia_module_file_version: str | None = None
    nvidia_module_file_error: str | None = None
    dkms_nvidia_versions: list[str] | None = None  # /var/lib/dkms/nvidia/*; None: no DKMS
    container_host: ContainerHostFacts | None = None  # None: inside a container, or not Linux
    # The kernel log's NVRM lines since boot (Xid, RmInitAdapter); None: unreadable, and why.
    kernel_log_nvrm: list[str] | None = None
    kernel_log_error: str | None = None
    nouveau_loaded: bool | None = None
    nova_core_loaded: bool | None = None  # nouveau's Rust successor (Linux 6.15+), same effect
    secure_boot: bool | None = None
    device_nodes: list[DeviceNode] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # allowlisted variables only
    host: HostIdentity = field(default_factory=HostIdentity)
    fabric: FabricHostFacts | None = None  # None: not read (not Linux, or before 1.4)


# --- NVML ---------------------------------------------------------------------------------


class NvmlError(Struct):
    code: Int
    name: str  # the binding's error name without the prefix: "DriverNotLoaded"
    message: str = ""


class MigDevice(Struct):
    index: Count
    uuid: str | None = None
    name: str | None = None
    memory_total: Count | None = None


class GpuProcess(Struct):
    pid: Count  # as NVML reports it: in a container, usually the host's PID
    name: str | None = None
    used_memory: Count | None = None  # bytes; None where the driver does not say (WDDM, MIG)
    kind: str | None = None  # "compute" | "graphics"; None in snapshots before 1.2
    gpu_instance_id: Count | None = None  # MIG: the GPU instance the context lives in
    compute_instance_id: Count | None = None


class GpuFacts(Struct):
    index: Count
    name: str | None = None
    uuid: str | None = None
    serial: str | None = None
    pci_bus_id: str | None = None
    minor_number: Count | None = None  # N of its /dev/nvidiaN (not always the NVML index)
    brand: str | None = None  # "NVIDIA" (data centre), "Tesla", "GeForce", "Quadro", ...
    memory_total: Count | None = None  # bytes
    memory_used: Count | None = None
    memory_free: Count | None = None
    compute_capability: str | None = None  # "9.0"
    architecture: str | None = None  # "Hopper"
    utilization_gpu: Count | None = None  # percent
    temperature_c: Int | None = None
    temperature_slowdown_c: Count | None = None
    temperature_shutdown_c: Count | None = None
    fan_speed_pct: Count | None = None  # None on passively cooled (data-centre) GPUs
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    clock_sm_mhz: Count | None = None  # the SM clock now (bench follows it under load)
    clock_event_reasons: list[str] | None = None  # active reasons: "hw_slowdown", ...
    pcie_gen_current: Count | None = None
    pcie_gen_max: Count | None = None  # of the GPU and the slot together
    pcie_width_current: Count | None = None
    pcie_width_max: Count | None = None
    ecc_enabled: bool | None = None
    ecc_enabled_pending: bool | None = None
    ecc_uncorrected_volatile: Count | None = None
    ecc_uncorrected_aggregate: Count | None = None
    retired_pages_sbe: Count | None = None
    retired_pages_dbe: Count | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: Count | None = None
    remapped_rows_uncorrectable: Count | None = None
    remap_pending: bool | None = None
    remap_failed: bool | None = None
    persistence_mode: bool | None = None
    display_active: bool | None = None
    compute_mode: str | None = None  # default | exclusive_thread | prohibited | exclusive_process
    mig_enabled: bool | None = None
    mig_enabled_pending: bool | None = None
    mig_devices: list[MigDevice] = field(default_factory=list)
    processes: list[GpuProcess] | None = None
    # NVSwitch systems (Hopper, Blackwell): nvmlDeviceGetGpuFabricInfo(V)'s state
    # (not_supported | not_started | in_progress | completed) and status (an nvmlReturn_t)
    fabric_state: str | None = None
    fabric_status: Int | None = None
    nvlink_active: list[bool] | None = None  # per NVLink link; None: no NVLink or unknown
    handle_error: NvmlError | None = None  # the GPU could not be opened at all (lost, ...)
    field_errors: dict[str, str] = field(default_factory=dict)  # field -> NVML error name


class NvmlFacts(Struct):
    binding_version: str | None = None  # nvidia-ml-py
    library_path: str | None = None  # the libnvidia-ml really loaded
    init_error: NvmlError | None = None
    init_skipped_reason: str | None = None  # nvmlInit deliberately not called (read-only)
    driver_version: str | None = None
    cuda_driver_version: Count | None = None  # 12020 = CUDA 12.2
    nvml_version: str | None = None
    device_count: Count | None = None
    gpus: list[GpuFacts] = field(default_factory=list)
    pairs: list[GpuPair] | None = None  # each GPU pair's P2P and topology; None: not probed


# --- CUDA and cuDNN -------------------------------------------------------------------------


# Every other CUDA library a framework's wheels bring, by family (the soname's stem): any of
# them on LD_LIBRARY_PATH wins the loader race against the wheels' RUNPATH copies.
LIBRARY_FAMILIES = {
    "cublas": "libcublas",
    "cublasLt": "libcublasLt",
    "cufft": "libcufft",
    "curand": "libcurand",
    "cusolver": "libcusolver",
    "cusparse": "libcusparse",
    "nvjitlink": "libnvJitLink",
    "nvrtc": "libnvrtc",
    "cupti": "libcupti",
    "nccl": "libnccl",
}


class LibraryCopy(Struct):
    """One copy of a shared library found on disk (found, not necessarily loadable)."""

    name: str  # "cudart" | "cudnn" | "cublas" | "cusparse" | "nvjitlink" | ... (the family)
    path: str
    realpath: str
    origin: str  # ld_library_path | ldconfig | cuda_home | cuda_toolkit | pip | conda | system
    on_loader_path: bool  # would the dynamic loader find it by name (LD_LIBRARY_PATH, cache)?
    package: str | None = None  # "nvidia-cudnn-cu12 9.1.0.70" for pip/conda copies
    version: str | None = None  # "12.4.127", "9.1.0"
    version_source: str | None = None  # call | filename | library | header | metadata
    cuda_version: str | None = None  # for cuDNN: the CUDA runtime it was built for
    load_error: str | None = None


class CudaDevice(Struct):
    index: Count
    name: str | None = None
    compute_capability: str | None = None
    memory_total: Count | None = None


class CudaDriverFacts(Struct):
    library_path: str | None = None
    load_error: str | None = None  # libcuda could not be loaded at all
    init_result: Int | None = None  # cuInit's CUresult
    init_error_name: str | None = None  # "CUDA_ERROR_NO_DEVICE"
    init_skipped_reason: str | None = None
    driver_version: Count | None = None  # cuDriverGetVersion: 12020
    device_count: Count | None = None
    devices: list[CudaDevice] = field(default_factory=list)


class ToolVersion(Struct):
    """A CUDA command-line tool found on disk (ptxas, nvlink) and the version it printed."""

    name: str  # ptxas | nvlink
    path: str
    origin: str  # path | cuda_home | pip
    version: str | None = None  # "12.4.131"
    error: str | None = None


class NvccFacts(Struct):
    path: str
    version: str | None = None  # "12.4.131"
    toolkit: str | None = None  # the toolkit folder the nvcc belongs to (links followed)
    error: str | None = None


class CudaFacts(Struct):
    driver: CudaDriverFacts = field(default_factory=CudaDriverFacts)
    runtimes: list[LibraryCopy] = field(default_factory=list)
    # Every other CUDA library (cuBLAS, cuFFT, cuSPARSE, nvJitLink, NCCL, ...): each copy, its
    # version from its file name or wheel; a framework's needs are judged against the winner.
    libraries: list[LibraryCopy] = field(default_factory=list)
    nvcc: NvccFacts | None = None
    # ldconfig's cache: libcuda.so.1's and bare libcuda.so's (Triton's) paths; None: not read
    libcuda_cache: dict[str, list[str]] | None = None
    cuda_home: str | None = None
    cuda_home_source: str | None = None  # CUDA_HOME | CUDA_PATH | default
    cuda_home_nvcc: bool | None = None  # the CUDA home holds an executable bin/nvcc
    tensorrt: list[LibraryCopy] = field(default_factory=list)  # system libnvinfer copies
    ptxas: list[ToolVersion] = field(default_factory=list)  # ptxas/nvlink XLA may use


class CudnnFacts(Struct):
    libraries: list[LibraryCopy] = field(default_factory=list)


class Snapshot(Struct):
    schema_version: str = SCHEMA_VERSION
    gpucheck_version: str = __version__
    created_at: str = ""
    system: SystemFacts = field(default_factory=SystemFacts)
    nvml: NvmlFacts = field(default_factory=NvmlFacts)
    cuda: CudaFacts = field(default_factory=CudaFacts)
    cudnn: CudnnFacts = field(default_factory=CudnnFacts)
    environments: list[PythonEnvironment] = field(default_factory=list)
    processes: ProcessFacts = field(default_factory=ProcessFacts)
    install_state: InstallStateFacts | None = None  # None: not read (not Linux, older file)
    network: NetworkFacts = field(default_factory=NetworkFacts)  # (model/network.py)
    deep: bool = False  # frameworks were imported (doctor --deep)
    # Fact groups a saved snapshot did not carry (a partial or older file): unknown, not empty.
    absent_sections: list[str] = field(default_factory=list)
    probes: list[ProbeRun] = field(default_factory=list)
    redacted: bool = False  # identifying values replaced by tokens (--redact)

    def probe(self, name: str) -> ProbeRun | None:
        return next((p for p in self.probes if p.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Any) -> "Snapshot":
        if not isinstance(data, dict):
            raise SnapshotError("not a gpucheck snapshot: expected a JSON object")
        # A whole `doctor --json` report is accepted too: its snapshot is inside.
        if "snapshot" in data and "findings" in data and isinstance(data["snapshot"], dict):
            data = data["snapshot"]
        check_version(data.get("schema_version"))
        absent = [group for group in FACT_GROUPS if group not in data]
        try:
            snapshot = from_dict(cls, data)
            refuse_repeats("nvml.gpus", snapshot.nvml.gpus, "index", "uuid")
        except DecodeError as exc:
            raise SnapshotError(f"invalid snapshot: {exc}") from None
        snapshot.absent_sections = sorted({*snapshot.absent_sections, *absent})
        return snapshot


def check_version(version: object) -> None:
    """Raise SnapshotError unless `version` is a snapshot schema this gpucheck reads."""
    if not isinstance(version, str) or not _is_version(version):
        raise SnapshotError("not a gpucheck snapshot: no valid schema_version field")
    major = int(version.split(".")[0])
    if major != SCHEMA_MAJOR:
        raise SnapshotError(
            f"snapshot schema {version} is not readable by gpucheck {__version__} "
            f"(reads {SCHEMA_MAJOR}.x): use a gpucheck of the same major schema"
        )


def _is_version(text: str) -> bool:
    parts = text.split(".")
    return len(parts) == 2 and all(p.isascii() and p.isdigit() and len(p) < 6 for p in parts)


def loads(data: bytes | str) -> Snapshot:
    """A snapshot (or a whole `doctor --json` report) from JSON; SnapshotError says why not."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a BOM, as some Windows editors write
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SnapshotError("not a gpucheck snapshot (not UTF-8 text)") from None
        reason = str(exc).removeprefix("JSON is malformed: ")
        raise SnapshotError(f"not valid JSON: {reason}") from None
    except (RecursionError, ValueError) as exc:
        raise SnapshotError(f"not valid JSON: {exc}") from None
    return Snapshot.from_dict(value)


def dumps(snapshot: Snapshot) -> str:
    return to_json(snapshot).decode("utf-8") + "\n"
