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

import difflib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from gpucheck.model.json_schema import document

# The CSV rows are made by the sampling child (standard library only), which holds the writer
# and its constants; the rows this process makes itself (a hung sample) use the same class.
from gpucheck.watch.scripts.watch_shared import ERROR_TEXT as ERROR_TEXT
from gpucheck.watch.scripts.watch_shared import IDENTITY as IDENTITY
from gpucheck.watch.scripts.watch_shared import NOT_SUPPORTED as NOT_SUPPORTED
from gpucheck.watch.scripts.watch_shared import TEXT_FIELDS as TEXT_FIELDS
from gpucheck.watch.scripts.watch_shared import CsvRows as CsvRows
from gpucheck.watch.scripts.watch_shared import csv_text as csv_text

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
# IDENTITY (timestamp, index): always in a log, so that a row says when and which GPU.
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


# One GPU's row as the sampling child sends it: [index, values in the order of `value_fields`,
# {field: NVML error name} or None, the GPU's own error or None]. Kept as it came while it is
# only written to the log; made a Sample when the summary or the live view needs one.
RawGpu = list[Any]


def value_fields(fields: list[str]) -> list[str]:
    """The fields a raw row's values stand for: the fields without timestamp and index."""
    return [f for f in fields if f not in IDENTITY]


@dataclass(slots=True)
class RawSample:
    time: float
    gpus: list[RawGpu]  # empty when the child was not asked for values
    csv: bytes | None = None  # the CSV rows (UTF-8), when the child was asked for them

    def sample(self, names: list[str]) -> Sample:
        return Sample(
            self.time,
            [
                GpuSample(index, dict(zip(names, values, strict=True)), errors or {}, error)
                for index, values, errors, error in self.gpus
            ],
        )


def header(fields: list[str]) -> str:
    return ", ".join(f"{f} [{FIELDS[f]}]" if FIELDS[f] else f for f in fields) + "\n"


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


WATCH_RECORD_VERSION = "1.0"  # of one JSON-lines record; the records carry no version field


def record_schema() -> dict[str, Any]:
    """The JSON Schema of one `watch --format jsonl` line: nvidia-smi's field names, null
    where the GPU did not say, `errors` naming NVML's reason per field."""
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
