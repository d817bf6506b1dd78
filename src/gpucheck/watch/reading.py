"""Reading a watch log back, ours or nvidia-smi's (CSV with units in the values: "100 %",
"631.95 W"), as a stream of samples: a row at a time, so that memory stays the same whatever
the log's size (a week of 1 s samples of 8 GPUs is 400 MiB of CSV). CSV is read with the csv
module (RFC 4180 quoting, nvidia-smi's ", " separator); JSON lines a line at a time.

A log is written in time order, one sample's rows together: consecutive rows with the same
timestamp are one sample."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from gpucheck.model.plural import counted
from gpucheck.watch.log import (
    ALIASES,
    CSV_TIME,
    FIELDS,
    IDENTITY,
    NOT_SUPPORTED,
    TEXT_FIELDS,
    GpuSample,
    LogError,
    Sample,
    Value,
)

if TYPE_CHECKING:
    import _csv

LINE_LIMIT = 1 << 20  # characters in one line: a log's rows are a few hundred
# What a GPU can show, by field name or else by unit (log.FIELDS): a value outside is not a
# reading (a corrupted line, a hand-edited log) and is skipped, never averaged.
LIMITS: dict[str, tuple[float, float]] = {
    "temperature.gpu": (-273, 1000),  # degrees C
    "%": (0, 100),
    "MiB": (0, 1e9),  # a petabyte
    "W": (0, 1e6),
    "MHz": (0, 1e6),
    "": (0, 2**64),  # PCIe link, error counts, the event-reason bit mask
}
SHOWN = 10  # skipped values named one by one; the rest counted


class Skipped:
    """The values of a log that were not used, each with its line: not a number, or beyond
    what a GPU can show (LIMITS)."""

    def __init__(self) -> None:
        self.count = 0
        self.first: list[str] = []

    def add(self, line: int, name: str, value: object, why: str) -> None:
        self.count += 1
        if len(self.first) < SHOWN:
            self.first.append(f"line {line}: {name} {value!r} {why}")

    def lines(self) -> list[str]:
        """The report, for a person: empty when every value was used."""
        if not self.count:
            return []
        more = [f"  ... and {self.count - len(self.first)} more"] if self.count > SHOWN else []
        head = f"Skipped {counted(self.count, 'value')} of the log, not in the figures above:"
        return [head, *(f"  {line}" for line in self.first), *more]


def checked(name: str, value: Value, line: int, skipped: Skipped | None) -> Value:
    """`value` of the number field `name` if it is a reading a GPU can give; else None,
    counted in `skipped`."""
    if value is None or name in TEXT_FIELDS:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        why = "is not a number"
    else:
        low, high = LIMITS.get(name) or LIMITS.get(FIELDS.get(name, ""), LIMITS[""])
        if low <= value <= high:
            return value
        unit = f" {FIELDS[name]}" if FIELDS.get(name) else ""
        why = f"is beyond what a GPU shows ({low:g} to {high:g}{unit})"
    if skipped is not None:
        skipped.add(line, name, value, why)
    return None


_UNIT = re.compile(r"\s*(%|MiB|W|MHz)$")
_HEADER_UNIT = re.compile(r"\s*\[.*\]$")


def read_samples(stream: TextIO, skipped: Skipped | None = None) -> Iterator[Sample]:
    """The samples of a CSV or JSON-lines log (opened with newline=""), as they are read;
    LogError says why it cannot be read, with the line. A value that is not a reading
    (checked) is None in its sample and counted in `skipped`."""
    lines = _lines(stream)
    first = ""
    for first in lines:
        if first.strip():
            break
    if not first.strip():
        raise LogError("the log is empty")
    rest = _chain(first, lines)
    if first.lstrip().startswith("{"):
        return _jsonl_log(rest, skipped)
    return _csv_log(rest, skipped)


def _lines(stream: TextIO) -> Iterator[str]:
    """The stream's lines, none longer than LINE_LIMIT: a file that is not a log (one line of
    a gigabyte) is refused rather than read whole."""
    number = 0
    while True:
        line = stream.readline(LINE_LIMIT)
        if not line:
            return
        number += 1
        if len(line) == LINE_LIMIT and not line.endswith("\n"):
            raise LogError(f"line {number} is over {LINE_LIMIT} characters: not a GPU log")
        yield line


def _chain(first: str, rest: Iterable[str]) -> Iterator[str]:
    yield first
    yield from rest


def _grouped(rows: Iterator[tuple[str, GpuSample]], iso: bool) -> Iterator[Sample]:
    """(timestamp, row) pairs as samples: a sample ends where the timestamp changes."""
    current: Sample | None = None
    stamp = None
    for when, gpu in rows:
        if current is None or when != stamp:
            if current is not None:
                yield current
            current, stamp = Sample(_epoch(when, iso), []), when
        current.gpus.append(gpu)
    if current is not None:
        yield current


def _jsonl_log(lines: Iterator[str], skipped: Skipped | None) -> Iterator[Sample]:
    return _grouped(_jsonl_rows(lines, skipped), iso=True)


def _jsonl_rows(lines: Iterator[str], skipped: Skipped | None) -> Iterator[tuple[str, GpuSample]]:
    bad: str | None = None  # a line that failed: fatal unless it is the last
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if bad is not None:
            raise LogError(bad)
        try:
            row = json.loads(line)
        except ValueError:
            bad = f"line {number} is not JSON"  # a last line cut short by a crash is fine
            continue
        if not isinstance(row, dict) or not isinstance(row.get("index"), int):
            raise LogError(f"line {number} is not a gpucheck watch row")
        raw_errors = row.get("errors")
        errors = raw_errors if isinstance(raw_errors, dict) else {}
        values = {
            k: checked(k, v, number, skipped)
            for k, v in row.items()
            if k in FIELDS and k not in IDENTITY
        }
        yield (
            str(row.get("timestamp", number)),
            GpuSample(row["index"], values, {str(k): str(v) for k, v in errors.items()}),
        )


def _csv_log(lines: Iterator[str], skipped: Skipped | None) -> Iterator[Sample]:
    reader = csv.reader(lines, skipinitialspace=True)
    try:
        names = [ALIASES.get(n, n) for n in (_HEADER_UNIT.sub("", c.strip()) for c in next(reader))]
    except (StopIteration, csv.Error):
        raise LogError("the log has no header line") from None
    if "index" not in names:
        raise LogError("not a GPU log: no index column (write it with --query-gpu=index,...)")
    return _grouped(_csv_rows(reader, names, skipped), iso=False)


def _csv_rows(
    reader: _csv.Reader, names: list[str], skipped: Skipped | None
) -> Iterator[tuple[str, GpuSample]]:
    wanted = [(i, n) for i, n in enumerate(names) if n in FIELDS and n not in IDENTITY]
    at_index = names.index("index")
    at_time = names.index("timestamp") if "timestamp" in names else None
    bad: str | None = None  # a row that failed: fatal unless it is the last
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise LogError(f"line {reader.line_num}: {exc}") from None
        number = reader.line_num
        if not cells:
            continue
        if bad is not None:
            raise LogError(bad)
        if len(cells) != len(names):
            bad = f"line {number} has {len(cells)} values for {len(names)} columns"
            continue  # a last row cut short by a crash is fine
        stamp = cells[at_time].strip() if at_time is not None else str(number)
        if stamp == "timestamp":
            continue  # a header repeated by a log that nvidia-smi -l appended to
        gpu = GpuSample(_int(cells[at_index].strip(), number), {}, {})
        for i, name in wanted:
            cell = cells[i].strip()
            if cell.startswith("["):
                gpu.values[name] = None
                if cell != NOT_SUPPORTED:
                    gpu.errors[name] = cell.strip("[]")
                continue
            gpu.values[name] = checked(name, _parse(name, cell), number, skipped)
        yield stamp, gpu


def _parse(name: str, cell: str) -> Value:
    """The cell's value; a cell that is no number stays text (checked says so)."""
    if name in TEXT_FIELDS:
        return cell
    if name == "clocks_event_reasons.active":
        try:
            return int(_UNIT.sub("", cell), 16)
        except ValueError:
            return cell
    try:
        return int(cell)  # most cells: no unit, no regular expression needed
    except ValueError:
        pass
    try:
        return float(cell)
    except ValueError:
        pass
    number = _UNIT.sub("", cell)  # nvidia-smi's own CSV: "100 %", "631.95 W"
    try:
        return int(number)
    except ValueError:
        try:
            return float(number)
        except ValueError:
            return cell


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
