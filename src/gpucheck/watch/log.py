"""The samples of `gpucheck watch` and their log formats: the fields by nvidia-smi's own
names (`nvidia-smi --help-query-gpu`), CSV as `nvidia-smi --query-gpu=... --format=csv,nounits`
writes it (so existing scripts and spreadsheets read it), and JSON lines. Reading works on
both, and on nvidia-smi's own CSV with units in the values ("100 %", "631.95 W").

Field names and their units come from a real R590 capture of `nvidia-smi --help-query-gpu`
and `--query-gpu ... --format=csv` (shared/nvsmi/nvidia_gpu_exporter, H100 80GB HBM3).
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

# name -> unit in the CSV header (nvidia-smi's "[MiB]" etc.); "" for none.
FIELDS: dict[str, str] = {
    "timestamp": "",
    "index": "",
    "uuid": "",
    "name": "",
    "utilization.gpu": "%",
    "utilization.memory": "%",
    "memory.used": "MiB",
    "memory.total": "MiB",
    "temperature.gpu": "",
    "power.draw": "W",
    "power.limit": "W",
    "clocks.current.sm": "MHz",
    "clocks.current.memory": "MHz",
    "clocks_event_reasons.active": "",
    "pcie.link.gen.current": "",
    "pcie.link.width.current": "",
    "fan.speed": "%",
    "pstate": "",
    "ecc.errors.uncorrected.volatile.total": "",
}
# nvidia-smi's other names for the same fields.
ALIASES = {
    "clocks.sm": "clocks.current.sm",
    "clocks.mem": "clocks.current.memory",
    "clocks_throttle_reasons.active": "clocks_event_reasons.active",
    "gpu_name": "name",
    "gpu_uuid": "uuid",
}
# Always in a log, so that a row says when and which GPU.
IDENTITY = ("timestamp", "index")
TEXT_FIELDS = {"timestamp", "uuid", "name", "pstate"}
# nvidia-smi writes these for values it cannot give.
NOT_SUPPORTED = "[N/A]"
ERROR_TEXT = {
    "GpuIsLost": "[GPU is lost]",
    "NoPermission": "[Insufficient Permissions]",
    "Unknown": "[Unknown Error]",
    "NotSupported": NOT_SUPPORTED,
}
CSV_TIME = "%Y/%m/%d %H:%M:%S.%f"  # nvidia-smi's timestamp, local time, milliseconds

Value = int | float | str | None


class LogError(ValueError):
    """A log or a field list that cannot be used: one line for the user."""


def parse_fields(text: str | None) -> list[str]:
    """--fields: nvidia-smi names, comma-separated; timestamp and index are always added."""
    if not text:
        return list(FIELDS)
    names = []
    for raw in text.split(","):
        name = ALIASES.get(raw.strip(), raw.strip())
        if not name:
            continue
        if name not in FIELDS:
            close = difflib.get_close_matches(name, list(FIELDS) + list(ALIASES), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise LogError(
                f"--fields: {raw.strip()!r} is not a field gpucheck watch samples{hint}; it "
                f"samples {', '.join(FIELDS)}"
            )
        if name not in names:
            names.append(name)
    return [f for f in IDENTITY if f not in names] + names


@dataclass
class GpuSample:
    index: int
    values: dict[str, Value] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # field -> NVML error name
    error: str | None = None  # the whole GPU failed this sample (GpuIsLost, ...)

    def value(self, name: str) -> Value:
        return self.values.get(name)


@dataclass
class Sample:
    time: float  # seconds since the epoch
    gpus: list[GpuSample] = field(default_factory=list)


def header(fields: list[str]) -> str:
    return ", ".join(f"{f} [{FIELDS[f]}]" if FIELDS[f] else f for f in fields) + "\n"


def _csv_value(name: str, sample: Sample, gpu: GpuSample) -> str:
    if name == "timestamp":
        return datetime.fromtimestamp(sample.time).strftime(CSV_TIME)[:-3]
    if name == "index":
        return str(gpu.index)
    value = gpu.value(name)
    if value is None:
        error = gpu.errors.get(name) or gpu.error
        return ERROR_TEXT.get(error or "NotSupported", f"[{error}]")
    if name == "clocks_event_reasons.active" and isinstance(value, int):
        return f"0x{value:016x}"  # as nvidia-smi prints the bit mask
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def csv_rows(sample: Sample, fields: list[str]) -> str:
    return "".join(", ".join(_csv_value(f, sample, g) for f in fields) + "\n" for g in sample.gpus)


def jsonl_rows(sample: Sample, fields: list[str]) -> str:
    stamp = datetime.fromtimestamp(sample.time, timezone.utc).astimezone()
    out = []
    for g in sample.gpus:
        row: dict[str, object] = {}
        for f in fields:
            if f == "timestamp":
                row[f] = stamp.isoformat(timespec="milliseconds")
            elif f == "index":
                row[f] = g.index
            else:
                row[f] = g.value(f)
        errors = {f: e for f, e in g.errors.items() if f in fields}
        if g.error:
            errors = {f: g.error for f in fields if f not in IDENTITY and g.value(f) is None}
        if errors:
            row["errors"] = errors
        out.append(json.dumps(row) + "\n")
    return "".join(out)


WATCH_RECORD_VERSION = "1.0"  # of one JSON-lines record; the records carry no version field


def record_schema() -> dict[str, Any]:
    """The JSON Schema of one `watch --format jsonl` line: nvidia-smi's field names, null
    where the GPU did not say, `errors` naming NVML's reason per field."""
    from gpucheck.model.json_schema import document

    number = {"type": ["number", "null"]}
    fields: dict[str, Any] = {
        name: {"type": ["string", "null"]} if name in TEXT_FIELDS else number for name in FIELDS
    }
    fields["timestamp"] = {"type": "string", "format": "date-time"}
    fields["index"] = {"type": "integer", "minimum": 0}
    fields["errors"] = {
        "type": "object",
        "propertyNames": {"enum": list(FIELDS)},
        "additionalProperties": {"type": "string"},
    }
    return document(
        "watch",
        WATCH_RECORD_VERSION,
        "gpucheck watch record",
        "One line of `gpucheck watch --format jsonl`: one GPU at one sample; the fields asked "
        "for (--fields) by nvidia-smi's names, timestamp and index always.",
        {
            "type": "object",
            "required": list(IDENTITY),
            "properties": fields,
            "additionalProperties": False,
        },
    )


# --- reading a log back (ours, or nvidia-smi's) ----------------------------------------------

_UNIT = re.compile(r"\s*(%|MiB|W|MHz)$")


def read_log(text: str) -> list[Sample]:
    """The samples of a CSV or JSON-lines log; LogError says why it cannot be read."""
    stripped = text.lstrip()
    if not stripped:
        raise LogError("the log is empty")
    if stripped.startswith("{"):
        return _read_jsonl(text)
    return _read_csv(text)


def _read_jsonl(text: str) -> list[Sample]:
    by_time: dict[str, Sample] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            if number == len(text.splitlines()):
                break  # a last line cut short by a crash: the rest is complete
            raise LogError(f"line {number} is not JSON") from None
        if not isinstance(row, dict) or not isinstance(row.get("index"), int):
            raise LogError(f"line {number} is not a gpucheck watch row")
        stamp = str(row.get("timestamp", number))
        sample = by_time.setdefault(stamp, Sample(_epoch(stamp, iso=True)))
        raw_errors = row.get("errors")
        errors = raw_errors if isinstance(raw_errors, dict) else {}
        values = {k: v for k, v in row.items() if k in FIELDS and k not in IDENTITY}
        sample.gpus.append(
            GpuSample(row["index"], values, {str(k): str(v) for k, v in errors.items()})
        )
    return list(by_time.values())


def _read_csv(text: str) -> list[Sample]:
    lines = text.splitlines()
    reader = csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True)
    try:
        names = [
            ALIASES.get(n, n) for n in (re.sub(r"\s*\[.*\]$", "", c.strip()) for c in next(reader))
        ]
    except StopIteration:
        raise LogError("the log is empty") from None
    if "index" not in names:
        raise LogError("not a GPU log: no index column (write it with --query-gpu=index,...)")
    by_time: dict[str, Sample] = {}
    for number, cells in enumerate(reader, 2):
        if not cells:
            continue
        if len(cells) != len(names):
            if number == len(lines):
                break  # a last row cut short
            raise LogError(f"line {number} has {len(cells)} values for {len(names)} columns")
        row = dict(zip(names, (c.strip() for c in cells), strict=True))
        if row.get("timestamp") == "timestamp":
            continue  # a header repeated by a log that was appended to by nvidia-smi -l
        stamp = row.get("timestamp", str(number))
        sample = by_time.setdefault(stamp, Sample(_epoch(stamp, iso=False)))
        gpu = GpuSample(_int(row["index"], number))
        for name, cell in row.items():
            if name in IDENTITY or name not in FIELDS:
                continue
            if cell.startswith("["):
                gpu.values[name] = None
                if cell != NOT_SUPPORTED:
                    gpu.errors[name] = cell.strip("[]")
                continue
            gpu.values[name] = _parse(name, cell)
        sample.gpus.append(gpu)
    return list(by_time.values())


def _parse(name: str, cell: str) -> Value:
    if name in TEXT_FIELDS:
        return cell
    cell = _UNIT.sub("", cell)
    if name == "clocks_event_reasons.active":
        try:
            return int(cell, 16)
        except ValueError:
            return None
    try:
        return int(cell)
    except ValueError:
        try:
            return float(cell)
        except ValueError:
            return None


def _int(cell: str, line: int) -> int:
    try:
        return int(cell)
    except ValueError:
        raise LogError(f"line {line}: index {cell!r} is not a number") from None


def _epoch(stamp: str, iso: bool) -> float:
    try:
        if iso:
            return datetime.fromisoformat(stamp).timestamp()
        return datetime.strptime(stamp, CSV_TIME).timestamp()
    except ValueError:
        return 0.0
