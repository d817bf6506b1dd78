"""The sampling child of `gpucheck watch`: one NVML session for the whole watch, one JSON line
per sample on stdout (flushed), "@ <call> gpu=<i>" on stderr before each NVML call so that the
parent can say where a call hung (see probes/child.py for the protocol).

argv[1] is a JSON object: "interval" (seconds between samples), "fields" (the nvidia-smi
names to read). The parent decides when the watch ends and stops this process; a closed
stdout (the parent gone) ends it too. A field that fails costs that field in that sample; a
GPU that falls off the bus costs that GPU's sample, and the next sample tries it again.

Standard library plus the nvidia-ml-py binding only; no gpucheck imports.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import Any

if not __package__:  # run as a script: it is the package its relative imports come from
    __package__, __path__ = __name__, [os.path.dirname(os.path.realpath(__file__))]

from . import child_protocol as protocol

MIB = 1024 * 1024
# Which NVML call answers each field: fields sharing a call share one call per sample.
CALLS: dict[str, str] = {
    "uuid": "uuid",
    "name": "name",
    "utilization.gpu": "utilization",
    "utilization.memory": "utilization",
    "memory.used": "memory",
    "memory.total": "memory",
    "temperature.gpu": "temperature",
    "power.draw": "power",
    "power.limit": "power_limit",
    "clocks.current.sm": "clock_sm",
    "clocks.current.memory": "clock_mem",
    "clocks_event_reasons.active": "clocks_event",
    "pcie.link.gen.current": "pcie_gen",
    "pcie.link.width.current": "pcie_width",
    "fan.speed": "fan",
    "pstate": "pstate",
    "ecc.errors.uncorrected.volatile.total": "ecc",
}


IDENTITY_CALLS = ("uuid", "name")
# Per GPU, the identity read once: a GPU lost later still says which one it was.
known: dict[int, dict[str, dict[str, Any]]] = {}


emit = protocol.emit  # False once the parent is gone
step = protocol.step
error_name = protocol.nvml_error_name


def readers(nv: Any) -> dict[str, tuple[str, Callable[[Any], dict[str, Any]]]]:
    """Per call: the NVML function named in step lines, and what it gives per field."""

    def utilization(h: Any) -> dict[str, Any]:
        u = nv.nvmlDeviceGetUtilizationRates(h)
        return {"utilization.gpu": int(u.gpu), "utilization.memory": int(u.memory)}

    def memory(h: Any) -> dict[str, Any]:
        # nvidia-smi's memory.used leaves out what the driver reserves (v2): an idle H100
        # shows 0 MiB used and 479 MiB reserved (shared/nvsmi, R590). v1 before R510.
        try:
            m = nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2)
        except (nv.NVMLError_FunctionNotFound, AttributeError):
            m = nv.nvmlDeviceGetMemoryInfo(h)
        return {"memory.used": int(m.used) // MIB, "memory.total": int(m.total) // MIB}

    def clocks_event(h: Any) -> dict[str, Any]:
        try:
            bits = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
        except nv.NVMLError_FunctionNotFound:
            bits = nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)  # before R535
        return {"clocks_event_reasons.active": int(bits)}

    def one(field: str, fn: Callable[[Any], Any]) -> Callable[[Any], dict[str, Any]]:
        return lambda h: {field: fn(h)}

    return {
        "uuid": ("nvmlDeviceGetUUID", one("uuid", lambda h: _text(nv.nvmlDeviceGetUUID(h)))),
        "name": ("nvmlDeviceGetName", one("name", lambda h: _text(nv.nvmlDeviceGetName(h)))),
        "utilization": ("nvmlDeviceGetUtilizationRates", utilization),
        "memory": ("nvmlDeviceGetMemoryInfo", memory),
        "temperature": (
            "nvmlDeviceGetTemperature",
            one(
                "temperature.gpu",
                lambda h: int(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
            ),
        ),
        "power": (
            "nvmlDeviceGetPowerUsage",
            one("power.draw", lambda h: round(nv.nvmlDeviceGetPowerUsage(h) / 1000.0, 2)),
        ),
        "power_limit": (
            "nvmlDeviceGetPowerManagementLimit",
            one(
                "power.limit",
                lambda h: round(nv.nvmlDeviceGetPowerManagementLimit(h) / 1000.0, 2),
            ),
        ),
        "clock_sm": (
            "nvmlDeviceGetClockInfo",
            one("clocks.current.sm", lambda h: int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))),
        ),
        "clock_mem": (
            "nvmlDeviceGetClockInfo",
            one(
                "clocks.current.memory",
                lambda h: int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
            ),
        ),
        "clocks_event": ("nvmlDeviceGetCurrentClocksEventReasons", clocks_event),
        "pcie_gen": (
            "nvmlDeviceGetCurrPcieLinkGeneration",
            one("pcie.link.gen.current", lambda h: int(nv.nvmlDeviceGetCurrPcieLinkGeneration(h))),
        ),
        "pcie_width": (
            "nvmlDeviceGetCurrPcieLinkWidth",
            one("pcie.link.width.current", lambda h: int(nv.nvmlDeviceGetCurrPcieLinkWidth(h))),
        ),
        "fan": (
            "nvmlDeviceGetFanSpeed",
            one("fan.speed", lambda h: int(nv.nvmlDeviceGetFanSpeed(h))),
        ),
        "pstate": (
            "nvmlDeviceGetPerformanceState",
            one("pstate", lambda h: f"P{int(nv.nvmlDeviceGetPerformanceState(h))}"),
        ),
        "ecc": (
            "nvmlDeviceGetTotalEccErrors",
            one(
                "ecc.errors.uncorrected.volatile.total",
                lambda h: int(
                    nv.nvmlDeviceGetTotalEccErrors(
                        h, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC
                    )
                ),
            ),
        ),
    }


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def sample_gpu(
    nv: Any,
    index: int,
    handle: Any,
    calls: list[str],
    table: dict[str, tuple[str, Callable[[Any], dict[str, Any]]]],
    wanted: list[str],
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    record: dict[str, Any] = {"index": index, "values": values, "errors": errors}
    for call in calls:
        if call in known.get(index, {}):
            values.update(known[index][call])  # identity does not change: read once
            continue
        fn_name, read = table[call]
        step(fn_name, index)
        try:
            got = read(handle)
            values.update(got)
            if call in IDENTITY_CALLS:
                known.setdefault(index, {})[call] = got
        except nv.NVMLError as exc:
            name = error_name(exc)
            for field in wanted:
                if CALLS.get(field) == call:
                    errors[field] = name
            if name in ("GpuIsLost", "GpuNotFound", "ResetRequired"):
                record["error"] = name  # the GPU is gone: skip its other calls this sample
                break
        except Exception as exc:  # a binding bug costs this field, not the watch
            for field in wanted:
                if CALLS.get(field) == call:
                    errors[field] = type(exc).__name__
    return record


def select(
    nv: Any, handles: dict[int, Any], count: int, wanted: list[str] | None
) -> tuple[list[int], str | None]:
    """The indices --gpu names (indices, or UUIDs or their prefixes, as nvidia-smi -i takes
    them), and the first one that names no GPU."""
    if not wanted:
        return list(range(count)), None
    uuids: dict[int, str] = {}
    for index, handle in handles.items():
        step("nvmlDeviceGetUUID", index)
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
    options = protocol.arguments(sys.argv, {})
    interval = float(options.get("interval", 1.0))
    wanted = [f for f in options.get("fields", list(CALLS)) if f in CALLS]
    header: dict[str, Any] = {"kind": "header", "init_error": None}
    try:
        import pynvml as nv
    except Exception as exc:
        header["init_error"] = {"name": "BindingMissing", "message": str(exc)}
        emit(header)
        return
    step("nvmlInit")
    try:
        nv.nvmlInit()
        step("nvmlDeviceGetCount")
        count = int(nv.nvmlDeviceGetCount())
        step("nvmlSystemGetDriverVersion")
        header["driver_version"] = _text(nv.nvmlSystemGetDriverVersion())
    except nv.NVMLError as exc:
        header["init_error"] = {"name": error_name(exc), "message": _text(str(exc))}
        emit(header)
        return
    handles: dict[int, Any] = {}
    header["gpus"] = []
    for index in range(count):
        step("nvmlDeviceGetHandleByIndex", index)
        try:
            handles[index] = nv.nvmlDeviceGetHandleByIndex(index)
            header["gpus"].append({"index": index, "error": None})
        except nv.NVMLError as exc:
            header["gpus"].append({"index": index, "error": error_name(exc)})
    header["device_count"] = count
    chosen, unknown = select(nv, handles, count, options.get("gpus"))
    if unknown:
        header["selection_error"] = unknown
        emit(header)
        return
    header["selected"] = chosen
    if not emit(header):
        return
    table = readers(nv)
    calls = list(dict.fromkeys(CALLS[f] for f in wanted))
    start = time.monotonic()
    n = 0
    while True:
        gpus = []
        for index in chosen:
            if index not in handles:
                gpus.append({"index": index, "values": {}, "errors": {}, "error": "GpuNotFound"})
                continue
            gpus.append(sample_gpu(nv, index, handles[index], calls, table, wanted))
        step("sleep")
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
