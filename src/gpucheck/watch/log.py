"""The samples of `gpucheck watch` and writing them: the fields by nvidia-smi's own names
(`nvidia-smi --help-query-gpu`), CSV as `nvidia-smi --query-gpu=... --format=csv,nounits`
writes it (values separated by ", ", so existing scripts and spreadsheets read it) with RFC 4180
quoting where a value needs it (a GPU name with a comma or a quote), and JSON lines. Control
characters in a value (a GPU name is the driver's text) are written as escapes (\\x1b), never
raw. reading.py reads both back.

Field names and their units come from a real R590 capture of `nvidia-smi --help-query-gpu`
and `--query-gpu ... --format=csv` (shared/nvsmi/nvidia_gpu_exporter, H100 80GB HBM3).
"""

from __future__ import annotations

import csv
import difflib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

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


@dataclass(slots=True)
class GpuSample:
    index: int
    values: dict[str, Value]
    errors: dict[str, str]  # field -> NVML error name
    error: str | None = None  # the whole GPU failed this sample (GpuIsLost, ...)

    def value(self, name: str) -> Value:
        return self.values.get(name)


@dataclass(slots=True)
class Sample:
    time: float  # seconds since the epoch
    gpus: list[GpuSample]


def header(fields: list[str]) -> str:
    return ", ".join(f"{f} [{FIELDS[f]}]" if FIELDS[f] else f for f in fields) + "\n"


def csv_text(text: str) -> str:
    """A text value as one CSV cell: control characters escaped, then quoted by the csv module
    when it holds the separator, a quote or spaces at its ends (RFC 4180: quotes doubled)."""
    from gpucheck.report.text import printable  # once per distinct text: off the start-up path

    text = printable(text)
    if "," in text or '"' in text or text != text.strip():
        out = io.StringIO()
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="").writerow([text])
        return out.getvalue()
    return text


def _number(value: Value) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _bits(value: Value) -> str:
    if isinstance(value, int):
        return f"0x{value:016x}"  # as nvidia-smi prints the bit mask
    return _number(value)


class CsvRows:
    """The CSV rows of samples: each field's formatting chosen once, the timestamp formatted
    once per sample, a text value (name, UUID: the same every sample) quoted once."""

    TEXT_CACHE = 1024  # distinct texts remembered; past it the cache starts again

    def __init__(self, fields: list[str]) -> None:
        self.fields = fields
        self.cells: list[tuple[str, Callable[[Value], str]]] = [
            (f, self._text if f in TEXT_FIELDS else _bits if f.startswith("clocks_ev") else _number)
            for f in fields
        ]
        self._texts: dict[str, str] = {}

    def _text(self, value: Value) -> str:
        if not isinstance(value, str):
            return _number(value)
        cell = self._texts.get(value)
        if cell is None:
            if len(self._texts) >= self.TEXT_CACHE:
                self._texts.clear()
            cell = self._texts[value] = csv_text(value)
        return cell

    def _missing(self, gpu: GpuSample, name: str) -> str:
        error = gpu.errors.get(name) or gpu.error
        return self._text(ERROR_TEXT.get(error or "NotSupported") or f"[{error}]")

    def __call__(self, sample: Sample) -> str:
        stamp = datetime.fromtimestamp(sample.time).strftime(CSV_TIME)[:-3]
        rows = []
        for gpu in sample.gpus:
            values = gpu.values
            cells = []
            for name, cell in self.cells:
                if name == "timestamp":
                    cells.append(stamp)
                elif name == "index":
                    cells.append(str(gpu.index))
                else:
                    value = values.get(name)
                    cells.append(self._missing(gpu, name) if value is None else cell(value))
            rows.append(", ".join(cells))
        rows.append("")
        return "\n".join(rows)


def csv_rows(sample: Sample, fields: list[str]) -> str:
    return CsvRows(fields)(sample)


def jsonl_rows(sample: Sample, fields: list[str]) -> str:
    stamp = datetime.fromtimestamp(sample.time, timezone.utc).astimezone()
    when = stamp.isoformat(timespec="milliseconds")
    out = []
    for g in sample.gpus:
        row: dict[str, object] = {}
        for f in fields:
            if f == "timestamp":
                row[f] = when
            elif f == "index":
                row[f] = g.index
            else:
                row[f] = g.value(f)
        errors = {f: e for f, e in g.errors.items() if f in fields}
        if g.error:
            errors = {f: g.error for f in fields if f not in IDENTITY and g.value(f) is None}
        if errors:
            row["errors"] = errors
        out.append(json.dumps(row) + "\n")  # control characters become \u escapes
    return "".join(out)
