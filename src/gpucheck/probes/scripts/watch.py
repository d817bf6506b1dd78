"""The sampling child of `gpucheck watch`: one NVML session for the whole watch, one JSON line
per sample on stdout (flushed), and before each NVML call the call's name ("<call> gpu=<i>")
in a small shared memory page the parent reads when a sample hangs or the child dies: a
memory write per call, where a line on stderr cost a system call here and a wake-up and a
read in the parent (most of a sample's cost). Without a page ("step_fd" absent, the script
run by hand) the names go to stderr as "@ <call>" lines (see probes/child.py).

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

Standard library plus the nvidia-ml-py binding only; no gpucheck imports.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import mmap
import os
import re
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

MIB = 1024 * 1024
STEP_SIZE = 7  # bytes of the shared page: a call's code, its GPU, the samples written (below)
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
# --- the CSV rows: written here, so that a sample crosses to the parent as the text it writes
# to the log (no encoding and decoding of its values on the way); watch/log.py uses the same
# class for the rows it makes itself (a hung sample).

TEXT_FIELDS = frozenset(("timestamp", "uuid", "name", "pstate"))
FLOAT_FIELDS = frozenset(("power.draw", "power.limit"))
BITS_FIELD = "clocks_event_reasons.active"
IDENTITY = ("timestamp", "index")
# nvidia-smi writes these for values it cannot give.
NOT_SUPPORTED = "[N/A]"
ERROR_TEXT = {
    "GpuIsLost": "[GPU is lost]",
    "NoPermission": "[Insufficient Permissions]",
    "Unknown": "[Unknown Error]",
    "NotSupported": NOT_SUPPORTED,
}
# Control characters (C0, DEL, C1) and the bidirectional overrides: the same set as
# report/text.py's printable(), which this script cannot import (a test holds them equal).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every control character shown as an escape (\\x1b), never raw."""
    return _UNSAFE.sub(
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"
        ),
        text,
    )


def csv_text(text: str) -> str:
    """A text value as one CSV cell: control characters escaped, then quoted by the csv module
    when it holds the separator, a quote or spaces at its ends (RFC 4180: quotes doubled)."""
    text = printable(text)
    if "," in text or '"' in text or text != text.strip():
        out = io.StringIO()
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="").writerow([text])
        return out.getvalue()
    return text


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _bits(value: Any) -> str:
    if isinstance(value, int):
        return f"0x{value:016x}"  # as nvidia-smi prints the bit mask
    return _number(value)


class CsvRows:
    """The CSV rows of a sample at the cost of a hand-written loop: a row is one str.format
    call on a template made once (each field's format: str, "{:.2f}" for watts, "0x{:016x}"
    for the clock event bits; one template per set of failed fields, made when first seen);
    the timestamp's date and minute formatted once a minute; a text value (name, UUID: the
    same every sample) escaped and quoted once.

    A GPU's row is [index, values in the order of the fields without timestamp and index,
    {field: NVML error name} or None, the GPU's own error or None]."""

    TEXT_CACHE = 1024  # distinct texts remembered; past it the cache starts again

    def __init__(self, fields: list[str]) -> None:
        self.fields = fields
        self.names = [f for f in fields if f not in IDENTITY]
        self.slot = {name: k for k, name in enumerate(self.names)}
        self.text_slots = [k for k, name in enumerate(self.names) if name in TEXT_FIELDS]
        self._templates: dict[tuple[int, ...], str] = {}
        self._texts: dict[str, str] = {}
        self._minute = -1
        self._minute_text = ""

    def template(self, missing: tuple[int, ...]) -> str:
        """The row's format: argument 0 the timestamp, 1 the index, 2 + k the k-th value;
        a value in `missing` is an error text, written as it is."""
        made = self._templates.get(missing)
        if made is None:
            parts = []
            given = 0
            for name in self.fields:
                if name == "timestamp":
                    parts.append("{0}")
                elif name == "index":
                    parts.append("{1}")
                else:
                    spec = ""
                    if given not in missing and name in FLOAT_FIELDS:
                        spec = ":.2f"
                    elif given not in missing and name == BITS_FIELD:
                        spec = ":#018x"  # 0x and 16 hex digits, as nvidia-smi prints the mask
                    parts.append("{" + str(given + 2) + spec + "}")
                    given += 1
            made = self._templates[missing] = ", ".join(parts)
        return made

    def _text(self, value: Any) -> str:
        cell = self._texts.get(value)
        if cell is None:
            if len(self._texts) >= self.TEXT_CACHE:
                self._texts.clear()
            cell = self._texts[value] = csv_text(str(value))
        return cell

    def _missing(self, errors: dict[str, str] | None, error: str | None, name: str) -> str:
        why = (errors.get(name) if errors else None) or error
        return self._text(ERROR_TEXT.get(why or "NotSupported") or f"[{why}]")

    def stamp(self, when: float) -> str:
        """nvidia-smi's local time to the millisecond, as datetime.strftime would give it
        (microseconds rounded, then cut to milliseconds), the date and minute formatted once
        a minute: strftime is a tenth of a sample's cost."""
        whole = math.floor(when)
        micro = round((when - whole) * 1e6)
        if micro >= 1000000:
            whole, micro = whole + 1, micro - 1000000
        minute, second = divmod(whole, 60)
        if minute != self._minute:
            self._minute = minute
            self._minute_text = time.strftime("%Y/%m/%d %H:%M:", time.localtime(minute * 60))
        return f"{self._minute_text}{second:02d}.{micro // 1000:03d}"

    def __call__(self, when: float, gpus: list[list[Any]]) -> str:
        stamp = self.stamp(when)
        texts = self._texts
        templates = self._templates
        rows = []
        for index, values, errors, error in gpus:
            cells = list(values)
            for k in self.text_slots:
                value = cells[k]
                if value is not None:
                    cells[k] = texts.get(value) or self._text(value)
            missing: tuple[int, ...] = ()
            if error:  # the GPU is gone: whatever it did not answer
                missing = tuple(k for k, value in enumerate(cells) if value is None)
            elif errors:  # a value is None only when its call failed
                slot = self.slot
                missing = tuple(slot[f] for f in errors if f in slot)
            for k in missing:
                cells[k] = self._missing(errors, error, self.names[k])
            try:
                rows.append(
                    (templates.get(missing) or self.template(missing)).format(stamp, index, *cells)
                )
            except (TypeError, ValueError):  # a value of an unexpected type: said as it is
                rows.append(self.template(tuple(range(len(cells)))).format(stamp, index, *cells))
        rows.append("")
        return "\n".join(rows)


# --- sampling -------------------------------------------------------------------------------

# Read once per GPU: a GPU lost later still says which one it was.
STATIC_CALLS = ("uuid", "name")
MULTI = ("utilization", "memory")  # calls that answer several fields (a tuple)
LOST = ("GpuIsLost", "GpuNotFound", "ResetRequired")


# What the page can say, by code: byte 0 of the page is the code of the call the child is in,
# bytes 1-2 the GPU's index + 1 (0: none), big-endian; bytes 3-6 the samples this child wrote
# to the log itself (little-endian), by which the parent follows it without a message each.
# Two byte stores per call, where writing the name cost a tenth of a sample. session.py reads
# the page with this table.
STEP_NAMES = (
    "",
    "nvmlInit",
    "nvmlDeviceGetCount",
    "nvmlSystemGetDriverVersion",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetFanSpeed",
    "nvmlDeviceGetPerformanceState",
    "nvmlDeviceGetTotalEccErrors",
    "sleep",
    "write",
)
STEP_CODE = {name: code for code, name in enumerate(STEP_NAMES)}


def step_text(page: bytes) -> str | None:
    """What a page says, for the parent: "nvmlDeviceGetPowerUsage gpu=1"; None: nothing yet."""
    code, gpu = page[0], page[1] << 8 | page[2]
    if not code:
        return None
    name = STEP_NAMES[code] if code < len(STEP_NAMES) else f"step {code}"
    return f"{name} gpu={gpu - 1}" if gpu else name


class Steps:
    """Where the child is: the shared page when the parent gave one, else stderr lines."""

    def __init__(self, fd: int | None) -> None:
        self.page: mmap.mmap | None = None
        self.gpu: int | None = None
        if fd is not None:
            with contextlib.suppress(OSError, ValueError):
                self.page = mmap.mmap(fd, STEP_SIZE)

    def at_gpu(self, gpu: int | None) -> None:
        """The GPU the next calls are about (None: no GPU)."""
        self.gpu = gpu
        if self.page is not None:
            number = 0 if gpu is None else gpu + 1
            self.page[1] = number >> 8 & 0xFF
            self.page[2] = number & 0xFF

    def mark(self, code: int) -> None:
        if self.page is not None:
            self.page[0] = code
        else:
            name = STEP_NAMES[code]
            text = name if self.gpu is None else f"{name} gpu={self.gpu}"
            with contextlib.suppress(OSError):
                os.write(2, f"@ {text}\n".encode())

    def __call__(self, name: str, gpu: int | None = None) -> None:
        self.at_gpu(gpu)
        self.mark(STEP_CODE[name])

    def wrote(self, samples: int) -> None:
        if self.page is not None:
            self.page[3:7] = (samples & 0xFFFFFFFF).to_bytes(4, "little")


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
                gpus.append([index, [None] * width, None, "GpuNotFound"])
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
