"""NVML probe, run in a child process so that a hanging or crashing driver call cannot take
the doctor with it.

Protocol (see child/run.py): one JSON object per line on stdout as facts become known
(a "header" record, then one "gpu" record per GPU), and "@ <call> gpu=<i>" on stderr before
every NVML call, so that the parent can say where a crash or a hang happened. argv[1], if
given, is a JSON object: "skip", NVML function names not to call (ones that crashed on an
earlier try); "init": false to load the library without calling nvmlInit (which, run as root
with no kernel module, creates /dev/nvidiactl: diagnosis must not change the machine).

Standard library plus the nvidia-ml-py binding only; no gpucheck imports; runs on Python 3.8+.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py, which every child script shares)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

from . import protocol
from .nvml_links import probe_links, probe_pairs
from .nvml_names import ARCHITECTURES, BRANDS, CLOCK_EVENT_BITS, COMPUTE_MODES

TYPE_CHECKING = False  # mypy treats this name as True; typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import ModuleType
    from typing import Any, Literal, TypedDict, TypeVar

    T = TypeVar("T")

    class Options(TypedDict, total=False):
        skip: list[str]  # NVML functions that crashed an earlier try
        init: bool

    class ErrorRecord(TypedDict):
        code: int
        name: str
        message: str

    class HeaderBase(TypedDict):
        kind: Literal["header"]
        init_error: ErrorRecord | None

    class Header(HeaderBase, total=False):
        binding_version: str | None
        library_path: str | None
        init_skipped_reason: str
        # Left out when the call is in Options.skip; None when NVML returns an error.
        driver_version: str | None
        cuda_driver_version: int | None
        nvml_version: str | None
        device_count: int | None

    class GpuRecord(TypedDict):
        kind: Literal["gpu"]
        # GpuFacts: "index", "field_errors", then whichever fields NVML answered.
        facts: dict[str, object]

    class MigRecord(TypedDict):
        index: int
        uuid: str | None
        name: str | None
        memory_total: int | None

    class ProcessRecord(TypedDict):
        pid: int
        name: str | None
        used_memory: int | None
        kind: str  # compute | graphics
        gpu_instance_id: int | None
        compute_instance_id: int | None


OPTIONS: Options = protocol.arguments(sys.argv, {})
SKIP = set(OPTIONS.get("skip", []))
INIT = OPTIONS.get("init", True)
NO_INIT_REASON = (
    "nvmlInit not called: the nvidia kernel module is not loaded, and as root NVML would "
    "create device nodes for it"
)

emit = protocol.emit
step = protocol.step  # before each call: the last one names the call that hung or crashed


def text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


BINDING_MISSING: ErrorRecord = {
    "code": -1,
    "name": "BindingMissing",
    "message": "the nvidia-ml-py binding cannot be imported",
}
# As pynvml reports a library it cannot load (NVML_ERROR_LIBRARY_NOT_FOUND).
LIBRARY_NOT_FOUND: ErrorRecord = {
    "code": 12,
    "name": "LibraryNotFound",
    "message": "NVML Shared Library Not Found",
}


def error_record(exc: BaseException) -> ErrorRecord:
    name = protocol.nvml_error_name(exc)
    return {"code": int(getattr(exc, "value", -1) or -1), "name": name, "message": text(exc)}


def loaded_library() -> str | None:
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if "libnvidia-ml" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return None


class Gpu:
    """Collects one GPU's facts; every field is independent and optional."""

    def __init__(self, nvml: ModuleType, index: int, handle: object) -> None:
        self.nvml = nvml
        self.index = index
        self.handle = handle  # an opaque nvmlDevice_t from the binding
        # The same dict as facts["field_errors"]: filled in place, keeps its place in the JSON.
        self.field_errors: dict[str, str | None] = {}
        self.facts: dict[str, object] = {"index": index, "field_errors": self.field_errors}

    def call(self, field: str, names: Sequence[str], *args: object) -> Any:
        """Call the first of `names` the driver has; record the error under `field` on failure."""
        nvml = self.nvml
        last: str | None = None
        for name in names:
            if name in SKIP:
                last = "Crashed"
                continue
            step(name, self.index)
            try:
                return getattr(nvml, name)(self.handle, *args)
            except nvml.NVMLError as exc:
                last = error_record(exc)["name"]
                if last != "FunctionNotFound":
                    break
            except Exception as exc:  # a binding bug must not cost the other fields
                last = type(exc).__name__
                # nvidia-ml-py's unversioned wrappers (ComputeRunningProcesses -> _v3) raise
                # this, not NVMLError, when the driver lacks the versioned symbol.
                if last != "NVMLLibraryMismatchError":
                    break
                last = "FunctionNotFound"
        self.field_errors[field] = last
        return None

    def set(
        self,
        field: str,
        names: Sequence[str],
        convert: Callable[[Any], object] = lambda v: v,
        *args: object,
    ) -> None:
        value = self.call(field, names, *args)
        if value is not None:
            try:
                self.facts[field] = convert(value)
            except Exception as exc:
                self.field_errors[field] = "Unparsable:" + type(exc).__name__


def capability_text(capability: tuple[int, int]) -> str:
    major, minor = capability
    return f"{major:d}.{minor:d}"


def probe_gpu(nvml: ModuleType, index: int, handle: object) -> dict[str, object]:
    g = Gpu(nvml, index, handle)
    g.set("name", ["nvmlDeviceGetName"], text)
    g.set("uuid", ["nvmlDeviceGetUUID"], text)
    g.set("serial", ["nvmlDeviceGetSerial"], text)
    g.set("brand", ["nvmlDeviceGetBrand"], lambda b: BRANDS.get(b, f"brand {b:d}"))
    g.set("pci_bus_id", ["nvmlDeviceGetPciInfo"], lambda p: text(p.busId))
    g.set("minor_number", ["nvmlDeviceGetMinorNumber"], int)
    mem = g.call("memory_total", ["nvmlDeviceGetMemoryInfo"])
    if mem is not None:
        g.facts.update(
            memory_total=int(mem.total), memory_used=int(mem.used), memory_free=int(mem.free)
        )
    g.set("compute_capability", ["nvmlDeviceGetCudaComputeCapability"], capability_text)
    g.set(
        "architecture",
        ["nvmlDeviceGetArchitecture"],
        lambda a: ARCHITECTURES.get(a, f"architecture {a:d}"),
    )
    g.set("utilization_gpu", ["nvmlDeviceGetUtilizationRates"], lambda u: int(u.gpu))
    g.set("temperature_c", ["nvmlDeviceGetTemperature"], int, nvml.NVML_TEMPERATURE_GPU)
    g.set(
        "temperature_slowdown_c",
        ["nvmlDeviceGetTemperatureThreshold"],
        int,
        nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
    )
    g.set(
        "temperature_shutdown_c",
        ["nvmlDeviceGetTemperatureThreshold"],
        int,
        nvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN,
    )
    g.set("fan_speed_pct", ["nvmlDeviceGetFanSpeed"], int)
    g.set("power_draw_w", ["nvmlDeviceGetPowerUsage"], lambda mw: round(mw / 1000.0, 1))
    g.set("power_limit_w", ["nvmlDeviceGetEnforcedPowerLimit"], lambda mw: round(mw / 1000.0, 1))
    g.set("clock_sm_mhz", ["nvmlDeviceGetClockInfo"], int, nvml.NVML_CLOCK_SM)
    g.set(
        "clock_event_reasons",
        ["nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"],
        lambda bits: [n for b, n in sorted(CLOCK_EVENT_BITS.items()) if bits & b],
    )
    g.set("pcie_gen_current", ["nvmlDeviceGetCurrPcieLinkGeneration"], int)
    g.set("pcie_gen_max", ["nvmlDeviceGetMaxPcieLinkGeneration"], int)
    g.set("pcie_width_current", ["nvmlDeviceGetCurrPcieLinkWidth"], int)
    g.set("pcie_width_max", ["nvmlDeviceGetMaxPcieLinkWidth"], int)
    ecc = g.call("ecc_enabled", ["nvmlDeviceGetEccMode"])
    if ecc is not None:
        g.facts.update(ecc_enabled=bool(ecc[0]), ecc_enabled_pending=bool(ecc[1]))
    if g.facts.get("ecc_enabled"):
        unc = nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
        for field, counter in (
            ("volatile", nvml.NVML_VOLATILE_ECC),
            ("aggregate", nvml.NVML_AGGREGATE_ECC),
        ):
            g.set("ecc_uncorrected_" + field, ["nvmlDeviceGetTotalEccErrors"], int, unc, counter)
        g.set(
            "retired_pages_sbe",
            ["nvmlDeviceGetRetiredPages"],
            len,
            nvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
        )
        g.set(
            "retired_pages_dbe",
            ["nvmlDeviceGetRetiredPages"],
            len,
            nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
        )
        g.set("retired_pages_pending", ["nvmlDeviceGetRetiredPagesPendingStatus"], bool)
        rows = g.call("remap_pending", ["nvmlDeviceGetRemappedRows"])
        if rows is not None:
            g.facts.update(
                remapped_rows_correctable=int(rows[0]),
                remapped_rows_uncorrectable=int(rows[1]),
                remap_pending=bool(rows[2]),
                remap_failed=bool(rows[3]),
            )
    g.set("persistence_mode", ["nvmlDeviceGetPersistenceMode"], bool)
    g.set("display_active", ["nvmlDeviceGetDisplayActive"], bool)
    g.set(
        "compute_mode", ["nvmlDeviceGetComputeMode"], lambda m: COMPUTE_MODES.get(m, f"mode {m:d}")
    )
    mig = g.call("mig_enabled", ["nvmlDeviceGetMigMode"])
    g.facts["mig_devices"] = []
    if mig is not None:
        g.facts.update(mig_enabled=bool(mig[0]), mig_enabled_pending=bool(mig[1]))
        if mig[0]:
            g.facts["mig_devices"] = probe_mig(g)
    procs = g.call(
        "processes",
        ["nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetComputeRunningProcesses_v2"],
    )
    if procs is not None:
        records = [process_record(nvml, p, "compute") for p in procs]
        # Graphics contexts hold memory too (a desktop, a viewer); a failure here costs them
        # only, never the compute list.
        graphics = g.call(
            "graphics_processes",
            ["nvmlDeviceGetGraphicsRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses_v2"],
        )
        g.field_errors.pop("graphics_processes", None)
        seen = {(r["pid"], r["gpu_instance_id"]) for r in records}
        for p in graphics or []:
            record = process_record(nvml, p, "graphics")
            if (record["pid"], record["gpu_instance_id"]) not in seen:
                records.append(record)
        g.facts["processes"] = records
    probe_links(g)
    return g.facts


def probe_mig(g: Gpu) -> list[MigRecord]:
    count = g.call("mig_devices", ["nvmlDeviceGetMaxMigDeviceCount"]) or 0
    devices: list[MigRecord] = []
    for i in range(int(count)):
        handle = g.call("mig_devices", ["nvmlDeviceGetMigDeviceHandleByIndex"], i)
        if handle is None:
            g.field_errors.pop("mig_devices", None)  # NotFound: an empty slot
            continue
        mig = Gpu(g.nvml, g.index, handle)
        uuid = text(mig.call("uuid", ["nvmlDeviceGetUUID"]) or "") or None
        name = mig.call("name", ["nvmlDeviceGetName"])
        name_text = text(name) if name is not None else None
        mem = mig.call("memory_total", ["nvmlDeviceGetMemoryInfo"])
        memory_total = int(mem.total) if mem is not None else None
        devices.append({"index": i, "uuid": uuid, "name": name_text, "memory_total": memory_total})
    return devices


NO_INSTANCE = 0xFFFFFFFF  # NVML's "no MIG instance" in nvmlProcessInfo_t


def instance_id(proc: Any, name: str) -> int | None:
    value = getattr(proc, name, None)
    return None if value is None or int(value) == NO_INSTANCE else int(value)


def process_record(nvml: ModuleType, proc: Any, kind: str) -> ProcessRecord:
    pid = int(proc.pid)
    used = getattr(proc, "usedGpuMemory", None)
    name: str | None = None
    try:
        step("nvmlSystemGetProcessName")
        name = text(nvml.nvmlSystemGetProcessName(pid))
    except Exception:
        try:
            with open(f"/proc/{pid}/comm") as comm:
                name = comm.read().strip()
        except OSError:
            pass
    return {
        "pid": pid,
        "name": name,
        "used_memory": int(used) if used is not None else None,
        "kind": kind,
        "gpu_instance_id": instance_id(proc, "gpuInstanceId"),
        "compute_instance_id": instance_id(proc, "computeInstanceId"),
    }


def system_value(nvml: ModuleType, name: str, convert: Callable[[Any], T]) -> T | None:
    step(name)
    try:
        return convert(getattr(nvml, name)())
    except nvml.NVMLError:
        return None


def binding_version() -> str | None:
    """nvidia-ml-py's installed version, as importlib.metadata.version("nvidia-ml-py") says
    it (the first on sys.path), read with dist_info.py's header reader: importing
    importlib.metadata costs 30 ms, half of this child's run."""
    from . import dist_info

    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or os.curdir))
        except OSError:
            continue
        for name in names:
            low = name.lower()
            if not (
                low.startswith(("nvidia_ml_py-", "nvidia-ml-py-"))
                and low.endswith((".dist-info", ".egg-info"))
            ):
                continue
            try:
                version = dist_info.read_headers(os.path.join(entry, name)).get("version")
            except (OSError, UnicodeDecodeError):
                continue
            if version:
                return str(version[0]).strip()
    return None


def main() -> None:
    header: Header = {"kind": "header", "init_error": None}
    try:
        header["binding_version"] = binding_version()
    except Exception:
        header["binding_version"] = None
    if not INIT:
        # Linux with no nvidia module: only whether the library loads (what pynvml's own
        # loader does, by the same name), without importing pynvml (~0.1 s) for it.
        import importlib.util

        if importlib.util.find_spec("pynvml") is None:
            header["init_error"] = BINDING_MISSING
            emit(header)
            return
        step("load")
        try:
            ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            header["init_error"] = LIBRARY_NOT_FOUND
        header["library_path"] = loaded_library()
        header["init_skipped_reason"] = NO_INIT_REASON
        emit(header)
        return
    try:
        import pynvml as nvml
    except Exception as exc:
        header["init_error"] = {
            **BINDING_MISSING,
            "message": f"{BINDING_MISSING['message']}: {exc}",
        }
        emit(header)
        return
    step("nvmlInit")
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        header["init_error"] = error_record(exc)
        header["library_path"] = loaded_library()
        emit(header)
        return
    header["library_path"] = loaded_library()
    # One statement per key, not a loop over names: each key keeps its own type.
    if "nvmlSystemGetDriverVersion" not in SKIP:
        header["driver_version"] = system_value(nvml, "nvmlSystemGetDriverVersion", text)
    if "nvmlSystemGetCudaDriverVersion" not in SKIP:
        header["cuda_driver_version"] = system_value(nvml, "nvmlSystemGetCudaDriverVersion", int)
    if "nvmlSystemGetNVMLVersion" not in SKIP:
        header["nvml_version"] = system_value(nvml, "nvmlSystemGetNVMLVersion", text)
    if "nvmlDeviceGetCount" not in SKIP:
        header["device_count"] = system_value(nvml, "nvmlDeviceGetCount", int)
    emit(header)
    handles: list[tuple[int, object]] = []  # for the pairs record, after every GPU's own
    for index in range(header.get("device_count") or 0):
        step("nvmlDeviceGetHandleByIndex", index)
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except nvml.NVMLError as exc:
            emit({"kind": "gpu", "facts": {"index": index, "handle_error": error_record(exc)}})
            continue
        emit({"kind": "gpu", "facts": probe_gpu(nvml, index, handle)})
        handles.append((index, handle))
    if len(handles) > 1:
        emit(probe_pairs(nvml, handles, SKIP))
    with contextlib.suppress(Exception):
        nvml.nvmlShutdown()


if __name__ == "__main__":
    main()
