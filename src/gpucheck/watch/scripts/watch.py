"""The sampling child of `gpucheck watch`: one NVML session for the whole watch, one JSON line
per sample on stdout (flushed), and before each NVML call the call's name ("<call> gpu=<i>")
in a small shared memory page the parent reads when a sample hangs or the child dies: a
memory write per call, where a line on stderr cost a system call here and a wake-up and a
read in the parent (most of a sample's cost). Without a page ("step_fd" absent, the script
run by hand) the names go to stderr as "@ <call>" lines (see child/run.py).

argv[1] is a JSON object: "interval" (seconds between samples), "fields" (the nvidia-smi
names to read), "gpus" (--gpu), "step_fd" (the page's file descriptor, STEP_SIZE bytes),
"csv" (send each sample's CSV rows, as the log has them), "values" (send the values too),
"log_socket" (with "csv": a socket on which the parent sends the log's file descriptor once
NVML answered; the child then writes the rows there itself, counting them on the page, and
stops after "count" samples or on SIGTERM, never in the middle of a row). The
parent decides when the watch ends and stops this process; a closed stdout (the parent gone)
ends it too. A field that fails costs that field in that sample; a GPU that falls off the bus
costs that GPU's sample, and the next sample tries it again.

A sample is a line {"kind": "sample", "t": <epoch seconds>, "gpus": [[index, values, errors,
error], ...], "csv": <bytes>}, then that many bytes of CSV rows: values in the order of the
fields asked for (null for one that failed), errors {field: NVML error name} or null, error
the GPU's own (GpuIsLost) or null; "gpus" only with "values", "csv" only with "csv".

Standard library plus the nvidia-ml-py binding only; no gpucheck imports (watch_shared.py,
beside it, is imported as a file of this folder: the rows and the step page it shares).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # this script runs on Python 3.8: the aliases exist for the checker only
    from collections.abc import Callable
    from typing import TypeAlias

    Reader: TypeAlias = Callable[[Any], Any]  # a value; a tuple for the calls in MULTI
    # Per call, in the order calls are made: the call, its step code, its reader, the place
    # of its value in a sample's values (-1: several values), and where each goes: (place in
    # the sample's values, place in the reader's tuple, field name).
    Plan: TypeAlias = list[tuple[str, int, Reader, int, list[tuple[int, int, str]]]]

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py, which every child script shares)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

from . import protocol
from .watch_shared import IDENTITY, STEP_CODE, CsvRows, Steps

MIB = 1024 * 1024
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
# --- sampling -------------------------------------------------------------------------------

# Read once per GPU: a GPU lost later still says which one it was.
STATIC_CALLS = ("uuid", "name")
MULTI = ("utilization", "memory")  # calls that answer several fields (a tuple)
LOST = ("GpuIsLost", "GpuNotFound", "ResetRequired")


def receive_log(fd: int | None) -> int | None:
    """The log's file descriptor, sent by the parent over the socket `fd` once NVML answered
    (the log is opened only then: without a GPU no file is created). None: write to stdout."""
    if fd is None:
        return None
    with socket.socket(fileno=fd) as sock:
        _, ancillary, _, _ = sock.recvmsg(1, socket.CMSG_SPACE(4))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS and len(data) >= 4:
            return int.from_bytes(data[:4], sys.byteorder)
    return None


emit = protocol.emit  # False once the parent is gone
step = protocol.step
error_name = protocol.nvml_error_name


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

    def clocks_event(h: Any) -> int:
        try:
            bits = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
        except nv.NVMLError_FunctionNotFound:
            bits = nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)  # before R535
        return int(bits)

    # The binding answers Python ints (a ctypes value's .value): the calls that need no more
    # are its own functions, with no wrapper between.
    sensor, sm, mem = nv.NVML_TEMPERATURE_GPU, nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM
    uncorrected, volatile = nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC
    return {
        "uuid": ("nvmlDeviceGetUUID", lambda h: _text(nv.nvmlDeviceGetUUID(h))),
        "name": ("nvmlDeviceGetName", lambda h: _text(nv.nvmlDeviceGetName(h))),
        "utilization": ("nvmlDeviceGetUtilizationRates", utilization),
        "memory": ("nvmlDeviceGetMemoryInfo", memory),
        "temperature": (
            "nvmlDeviceGetTemperature",
            lambda h: nv.nvmlDeviceGetTemperature(h, sensor),
        ),
        "power": (
            "nvmlDeviceGetPowerUsage",
            lambda h: round(nv.nvmlDeviceGetPowerUsage(h) / 1000.0, 2),
        ),
        "power_limit": (
            "nvmlDeviceGetPowerManagementLimit",
            lambda h: round(nv.nvmlDeviceGetPowerManagementLimit(h) / 1000.0, 2),
        ),
        "clock_sm": ("nvmlDeviceGetClockInfo", lambda h: nv.nvmlDeviceGetClockInfo(h, sm)),
        "clock_mem": ("nvmlDeviceGetClockInfo", lambda h: nv.nvmlDeviceGetClockInfo(h, mem)),
        "clocks_event": ("nvmlDeviceGetCurrentClocksEventReasons", clocks_event),
        "pcie_gen": ("nvmlDeviceGetCurrPcieLinkGeneration", nv.nvmlDeviceGetCurrPcieLinkGeneration),
        "pcie_width": ("nvmlDeviceGetCurrPcieLinkWidth", nv.nvmlDeviceGetCurrPcieLinkWidth),
        "fan": ("nvmlDeviceGetFanSpeed", nv.nvmlDeviceGetFanSpeed),
        "pstate": (
            "nvmlDeviceGetPerformanceState",
            lambda h: f"P{nv.nvmlDeviceGetPerformanceState(h)}",
        ),
        "ecc": (
            "nvmlDeviceGetTotalEccErrors",
            lambda h: nv.nvmlDeviceGetTotalEccErrors(h, uncorrected, volatile),
        ),
    }


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def plan_of(nv: Any, wanted: list[str]) -> Plan:
    """The calls the fields need, each once, in the order of the fields."""
    table = readers(nv)
    plan: Plan = []
    places: dict[str, list[tuple[int, int, str]]] = {}
    for place, name in enumerate(wanted):
        call, at = CALLS[name]
        if call not in places:
            places[call] = []
            fn_name, read = table[call]
            single = place if call not in MULTI else -1
            plan.append((call, STEP_CODE[fn_name], read, single, places[call]))
        places[call].append((place, at, name))
    return plan


class Gpu:
    """One GPU's sampling: its calls, and the values read once (name, UUID) kept in the row
    every sample starts from; a call read once leaves the plan."""

    def __init__(self, index: int, handle: Any, plan: Plan, width: int) -> None:
        self.index = index
        self.handle = handle
        self.plan = list(plan)
        self.base: list[Any] = [None] * width

    def sample(self, nv: Any, steps: Steps) -> list[Any]:
        values = self.base.copy()
        errors: dict[str, str] | None = None
        error: str | None = None
        handle = self.handle
        page = steps.page
        steps.at_gpu(self.index)
        read_once = None
        for entry in self.plan:
            call, code, read, single, places = entry
            if page is not None:
                page[0] = code
            else:
                steps.mark(code)
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
            if single >= 0:
                values[single] = got
            else:
                for place, at, _ in places:
                    values[place] = got[at]
            if call in STATIC_CALLS:
                read_once = [*(read_once or []), entry]
        for entry in read_once or ():
            for place, _, _ in entry[4]:
                self.base[place] = values[place]
            self.plan.remove(entry)
        return [self.index, values, errors, error]


def select(
    nv: Any, handles: dict[int, Any], count: int, wanted: list[str] | None, steps: Steps
) -> tuple[list[int], str | None, list[list[Any]]]:
    """The indices --gpu names (indices, or UUIDs or their prefixes, as nvidia-smi -i takes
    them), the first one that names no single GPU, and the [index, uuid] of each GPU it
    matches where it names several (a UUID prefix they share)."""
    if not wanted:
        return list(range(count)), None, []
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
            return [], token, [[i, uuids[i]] for i in hits]
        if hits[0] not in chosen:
            chosen.append(hits[0])
    return chosen, None, []


def main() -> None:
    options = protocol.arguments(sys.argv, {})
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
    unopened: dict[int, str] = {}  # index -> what NVML answered instead of a handle
    header["gpus"] = []
    for index in range(count):
        steps("nvmlDeviceGetHandleByIndex", index)
        try:
            handles[index] = nv.nvmlDeviceGetHandleByIndex(index)
            header["gpus"].append({"index": index, "error": None})
        except nv.NVMLError as exc:
            unopened[index] = error_name(exc)
            header["gpus"].append({"index": index, "error": unopened[index]})
    header["device_count"] = count
    chosen, unknown, matches = select(nv, handles, count, options.get("gpus"), steps)
    if unknown:
        header["selection_error"] = unknown
        header["selection_matches"] = matches
        emit(header)
        return
    header["selected"] = chosen
    if not emit(header):
        return
    width = len(wanted)
    plan = plan_of(nv, wanted)
    # In --gpu's order; None: no handle at the start, a row saying so every sample.
    samplers = [Gpu(i, handles[i], plan, width) if i in handles else None for i in chosen]
    asked = options.get("fields", [*IDENTITY, *CALLS])
    rows = (
        CsvRows([f for f in asked if f in CALLS or f in IDENTITY]) if options.get("csv") else None
    )
    with_values = bool(options.get("values")) or rows is None
    log_fd = receive_log(options.get("log_socket")) if rows is not None else None
    stop_after: int | None = options.get("count")
    writing = [False, False]  # writing the log now; a stop asked for while writing
    if log_fd is not None:

        def on_term(signum: int, frame: Any) -> None:
            if writing[0]:
                writing[1] = True  # the parent's stop waits for the row to be whole
                return
            raise SystemExit(0)

        signal.signal(signal.SIGTERM, on_term)
    out = sys.stdout.buffer
    sleeping, to_log = STEP_CODE["sleep"], STEP_CODE["write"]
    start = time.monotonic()
    n = 0
    written = 0
    while True:
        gpus = []
        for index, gpu in zip(chosen, samplers):
            if gpu is not None:
                gpus.append(gpu.sample(nv, steps))
            else:
                # NVML's own answer (GpuIsLost: fallen off the bus), as nvidia-smi shows it.
                gpus.append([index, [None] * width, None, unopened.get(index, "GpuNotFound")])
        steps.at_gpu(None)
        now = time.time()
        if log_fd is not None and rows is not None:
            # The rows go to the log from here, one write; the parent is not woken.
            steps.mark(to_log)
            body = rows(now, gpus).encode("utf-8", "replace")
            writing[0] = True
            try:
                view = memoryview(body)
                while view:
                    view = view[os.write(log_fd, view) :]
            except OSError as exc:
                emit({"kind": "write_error", "errno": exc.errno, "message": exc.strerror})
                break
            finally:
                writing[0] = False
            written += 1
            steps.wrote(written)
            if writing[1] or (stop_after is not None and written >= stop_after):
                break
        else:
            record: dict[str, Any] = {"kind": "sample", "t": now}
            if with_values:
                record["gpus"] = gpus
            body = b""
            if rows is not None:
                body = rows(now, gpus).encode("utf-8", "replace")
                record["csv"] = len(body)  # the CSV rows follow the line, this many bytes
            if with_values:
                line = json.dumps(record, separators=(",", ":"))
            else:  # without the encoder: a float's repr is JSON
                line = f'{{"kind":"sample","t":{now!r},"csv":{len(body)}}}'
            try:
                out.write(line.encode() + b"\n" + body)
                out.flush()
            except (BrokenPipeError, OSError):
                break  # the parent is gone
        steps.mark(sleeping)
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
