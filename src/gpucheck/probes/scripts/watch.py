"""The sampling child of `gpucheck watch`: one NVML session for the whole watch, one JSON line
per sample on stdout (flushed), and before each NVML call the call's name ("<call> gpu=<i>")
in a small shared memory page the parent reads when a sample hangs or the child dies: a
memory write per call, where a line on stderr cost a system call here and a wake-up and a
read in the parent (most of a sample's cost). Without a page ("step_fd" absent, the script
run by hand) the names go to stderr as "@ <call>" lines (see probes/child.py).

argv[1] is a JSON object: "interval" (seconds between samples), "fields" (the nvidia-smi
names to read), "gpus" (--gpu), "step_fd" (the page's file descriptor, STEP_SIZE bytes). The
parent decides when the watch ends and stops this process; a closed stdout (the parent gone)
ends it too. A field that fails costs that field in that sample; a GPU that falls off the bus
costs that GPU's sample, and the next sample tries it again.

A sample is {"kind": "sample", "t": <epoch seconds>, "gpus": [[index, values, errors,
error], ...]}: values in the order of the fields asked for (null for one that failed),
errors {field: NVML error name} or null, error the GPU's own (GpuIsLost) or null.

Standard library plus the nvidia-ml-py binding only; no gpucheck imports.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # this script runs on Python 3.8: the aliases exist for the checker only
    from collections.abc import Callable
    from typing import TypeAlias

    Reader: TypeAlias = Callable[[Any], tuple[Any, ...]]
    # Per call, in the order calls are made: the call, its page text, its reader, and where
    # its values go: (place in the sample's values, place in the reader's tuple, field name).
    Plan: TypeAlias = list[tuple[str, bytes, Reader, list[tuple[int, int, str]]]]

MIB = 1024 * 1024
STEP_SIZE = 64  # bytes of the shared page: a call's name and its GPU, NUL-padded
# Which NVML call answers each field, and its place in what the call's reader returns:
# fields sharing a call share one call per sample.
CALLS: dict[str, tuple[str, int]] = {
    "uuid": ("uuid", 0),
    "name": ("name", 0),
    "utilization.gpu": ("utilization", 0),
    "utilization.memory": ("utilization", 1),
    "memory.used": ("memory", 0),
    "memory.total": ("memory", 1),
    "temperature.gpu": ("temperature", 0),
    "power.draw": ("power", 0),
    "power.limit": ("power_limit", 0),
    "clocks.current.sm": ("clock_sm", 0),
    "clocks.current.memory": ("clock_mem", 0),
    "clocks_event_reasons.active": ("clocks_event", 0),
    "pcie.link.gen.current": ("pcie_gen", 0),
    "pcie.link.width.current": ("pcie_width", 0),
    "fan.speed": ("fan", 0),
    "pstate": ("pstate", 0),
    "ecc.errors.uncorrected.volatile.total": ("ecc", 0),
}
# Read once per GPU: a GPU lost later still says which one it was.
STATIC_CALLS = ("uuid", "name")
LOST = ("GpuIsLost", "GpuNotFound", "ResetRequired")


class Steps:
    """Where the child is: the shared page when the parent gave one, else stderr lines."""

    def __init__(self, fd: int | None) -> None:
        self.page: mmap.mmap | None = None
        if fd is not None:
            with contextlib.suppress(OSError, ValueError):
                self.page = mmap.mmap(fd, STEP_SIZE)

    @staticmethod
    def text(name: str, gpu: int | None = None) -> bytes:
        raw = (name if gpu is None else f"{name} gpu={gpu}").encode()[:STEP_SIZE]
        return raw + b"\0" * (STEP_SIZE - len(raw))

    def mark(self, text: bytes) -> None:
        if self.page is not None:
            self.page[0:STEP_SIZE] = text
        else:
            with contextlib.suppress(OSError):
                os.write(2, b"@ " + text.rstrip(b"\0") + b"\n")

    def __call__(self, name: str, gpu: int | None = None) -> None:
        self.mark(self.text(name, gpu))


def emit(record: dict[str, Any]) -> bool:
    try:
        sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        return False  # the parent is gone
    return True


def error_name(exc: BaseException) -> str:
    name = type(exc).__name__
    return name[len("NVMLError_") :] if name.startswith("NVMLError_") else name


def readers(nv: Any) -> dict[str, tuple[str, Reader]]:
    """Per call: the NVML function named on the page, and the values it gives."""

    def utilization(h: Any) -> tuple[Any, ...]:
        u = nv.nvmlDeviceGetUtilizationRates(h)
        return (int(u.gpu), int(u.memory))

    def memory(h: Any) -> tuple[Any, ...]:
        # nvidia-smi's memory.used leaves out what the driver reserves (v2): an idle H100
        # shows 0 MiB used and 479 MiB reserved (shared/nvsmi, R590). v1 before R510.
        try:
            m = nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2)
        except (nv.NVMLError_FunctionNotFound, AttributeError):
            m = nv.nvmlDeviceGetMemoryInfo(h)
        return (int(m.used) // MIB, int(m.total) // MIB)

    def clocks_event(h: Any) -> tuple[Any, ...]:
        try:
            bits = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
        except nv.NVMLError_FunctionNotFound:
            bits = nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)  # before R535
        return (int(bits),)

    sensor, sm, mem = nv.NVML_TEMPERATURE_GPU, nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM
    uncorrected, volatile = nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC
    return {
        "uuid": ("nvmlDeviceGetUUID", lambda h: (_text(nv.nvmlDeviceGetUUID(h)),)),
        "name": ("nvmlDeviceGetName", lambda h: (_text(nv.nvmlDeviceGetName(h)),)),
        "utilization": ("nvmlDeviceGetUtilizationRates", utilization),
        "memory": ("nvmlDeviceGetMemoryInfo", memory),
        "temperature": (
            "nvmlDeviceGetTemperature",
            lambda h: (int(nv.nvmlDeviceGetTemperature(h, sensor)),),
        ),
        "power": (
            "nvmlDeviceGetPowerUsage",
            lambda h: (round(nv.nvmlDeviceGetPowerUsage(h) / 1000.0, 2),),
        ),
        "power_limit": (
            "nvmlDeviceGetPowerManagementLimit",
            lambda h: (round(nv.nvmlDeviceGetPowerManagementLimit(h) / 1000.0, 2),),
        ),
        "clock_sm": ("nvmlDeviceGetClockInfo", lambda h: (int(nv.nvmlDeviceGetClockInfo(h, sm)),)),
        "clock_mem": (
            "nvmlDeviceGetClockInfo",
            lambda h: (int(nv.nvmlDeviceGetClockInfo(h, mem)),),
        ),
        "clocks_event": ("nvmlDeviceGetCurrentClocksEventReasons", clocks_event),
        "pcie_gen": (
            "nvmlDeviceGetCurrPcieLinkGeneration",
            lambda h: (int(nv.nvmlDeviceGetCurrPcieLinkGeneration(h)),),
        ),
        "pcie_width": (
            "nvmlDeviceGetCurrPcieLinkWidth",
            lambda h: (int(nv.nvmlDeviceGetCurrPcieLinkWidth(h)),),
        ),
        "fan": ("nvmlDeviceGetFanSpeed", lambda h: (int(nv.nvmlDeviceGetFanSpeed(h)),)),
        "pstate": (
            "nvmlDeviceGetPerformanceState",
            lambda h: (f"P{int(nv.nvmlDeviceGetPerformanceState(h))}",),
        ),
        "ecc": (
            "nvmlDeviceGetTotalEccErrors",
            lambda h: (int(nv.nvmlDeviceGetTotalEccErrors(h, uncorrected, volatile)),),
        ),
    }


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def plan_of(nv: Any, wanted: list[str], index: int) -> Plan:
    """The calls the fields need, each once, with their page text made now, not per sample."""
    table = readers(nv)
    plan: Plan = []
    places: dict[str, list[tuple[int, int, str]]] = {}
    for place, name in enumerate(wanted):
        call, at = CALLS[name]
        if call not in places:
            places[call] = []
            fn_name, read = table[call]
            plan.append((call, Steps.text(fn_name, index), read, places[call]))
        places[call].append((place, at, name))
    return plan


def sample_gpu(
    nv: Any, index: int, handle: Any, plan: Plan, width: int, static: dict[str, Any], steps: Steps
) -> list[Any]:
    values: list[Any] = [None] * width
    errors: dict[str, str] | None = None
    error: str | None = None
    for call, text, read, places in plan:
        got = static.get(call)
        if got is None:
            steps.mark(text)
            try:
                got = read(handle)
            except nv.NVMLError as exc:
                name = error_name(exc)
                errors = errors or {}
                for _, _, field in places:
                    errors[field] = name
                if name in LOST:
                    error = name  # the GPU is gone: skip its other calls this sample
                    break
                continue
            except Exception as exc:  # a binding bug costs this field, not the watch
                errors = errors or {}
                for _, _, field in places:
                    errors[field] = type(exc).__name__
                continue
            if call in STATIC_CALLS:
                static[call] = got
        for place, at, _ in places:
            values[place] = got[at]
    if error is not None:  # what was read before the GPU went is kept; its identity too
        for call, _, _, places in plan:
            got = static.get(call)
            if got is not None:
                for place, at, _ in places:
                    values[place] = got[at]
    return [index, values, errors, error]


def select(
    nv: Any, handles: dict[int, Any], count: int, wanted: list[str] | None, steps: Steps
) -> tuple[list[int], str | None]:
    """The indices --gpu names (indices, or UUIDs or their prefixes, as nvidia-smi -i takes
    them), and the first one that names no GPU."""
    if not wanted:
        return list(range(count)), None
    uuids: dict[int, str] = {}
    for index, handle in handles.items():
        steps("nvmlDeviceGetUUID", index)
        try:
            uuids[index] = _text(nv.nvmlDeviceGetUUID(handle))
        except nv.NVMLError:
            continue
    chosen: list[int] = []
    for token in wanted:
        if token.isdigit() and int(token) < count:
            hits = [int(token)]
        else:
            hits = [i for i, u in uuids.items() if token and u.lower().startswith(token.lower())]
        if len(hits) != 1:
            return [], token
        if hits[0] not in chosen:
            chosen.append(hits[0])
    return chosen, None


def main() -> None:
    options = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    interval = float(options.get("interval", 1.0))
    wanted = [f for f in options.get("fields", list(CALLS)) if f in CALLS]
    steps = Steps(options.get("step_fd"))
    header: dict[str, Any] = {"kind": "header", "init_error": None, "fields": wanted}
    try:
        import pynvml as nv
    except Exception as exc:
        header["init_error"] = {"name": "BindingMissing", "message": str(exc)}
        emit(header)
        return
    steps("nvmlInit")
    try:
        nv.nvmlInit()
        steps("nvmlDeviceGetCount")
        count = int(nv.nvmlDeviceGetCount())
        steps("nvmlSystemGetDriverVersion")
        header["driver_version"] = _text(nv.nvmlSystemGetDriverVersion())
    except nv.NVMLError as exc:
        header["init_error"] = {"name": error_name(exc), "message": _text(str(exc))}
        emit(header)
        return
    handles: dict[int, Any] = {}
    header["gpus"] = []
    for index in range(count):
        steps("nvmlDeviceGetHandleByIndex", index)
        try:
            handles[index] = nv.nvmlDeviceGetHandleByIndex(index)
            header["gpus"].append({"index": index, "error": None})
        except nv.NVMLError as exc:
            header["gpus"].append({"index": index, "error": error_name(exc)})
    header["device_count"] = count
    chosen, unknown = select(nv, handles, count, options.get("gpus"), steps)
    if unknown:
        header["selection_error"] = unknown
        emit(header)
        return
    header["selected"] = chosen
    if not emit(header):
        return
    width = len(wanted)
    plans = {index: plan_of(nv, wanted, index) for index in chosen}
    static: dict[int, dict[str, Any]] = {index: {} for index in chosen}
    sleeping = Steps.text("sleep")
    start = time.monotonic()
    n = 0
    while True:
        gpus = []
        for index in chosen:
            handle = handles.get(index)
            if handle is None:
                gpus.append([index, [None] * width, None, "GpuNotFound"])
                continue
            gpus.append(sample_gpu(nv, index, handle, plans[index], width, static[index], steps))
        steps.mark(sleeping)
        if not emit({"kind": "sample", "t": time.time(), "gpus": gpus}):
            break
        n += 1
        # On a fixed grid from the start: a slow sample does not shift the ones after it.
        delay = start + n * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            n = int((time.monotonic() - start) / interval)  # skip the missed slots
    with contextlib.suppress(Exception):
        nv.nvmlShutdown()


if __name__ == "__main__":
    main()
