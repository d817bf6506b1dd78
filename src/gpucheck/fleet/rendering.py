"""The fleet for a person (table), a script (JSON) or a spreadsheet (CSV: the inventory, one
row per host). Chosen by name, as `--format` offers them. Reports come from other machines:
every value is shown with its control characters escaped (in JSON as \\u escapes, the
value unchanged), never sent to a terminal raw. Every output is written as the hosts are read
back from the store, never built whole in memory."""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import IO

import msgspec
from msgspec import Struct

from gpucheck.fleet.html import render_html
from gpucheck.fleet.records import HostRecord
from gpucheck.fleet.rows import MARKS, VERBS, gpu_text, head_line, inventory_row, safe
from gpucheck.fleet.store import ProblemGroup
from gpucheck.fleet.summary import HOSTS_SHOWN, Fleet, FleetBuilder, HostGpu
from gpucheck.report.output_format import Format, FunctionFormat, format_table
from gpucheck.report.text import printable
from gpucheck.version import __version__

# The fleet output's own format version: a minor version only adds fields.
FLEET_SCHEMA_VERSION = "1.0"


def _act_row(a: HostGpu) -> list[str]:
    g = a.gpu
    cells = (a.host, str(g.index), g.uuid or "-", g.serial or "-", g.check, g.status)
    return [safe(c) for c in cells]


def _columns(
    stream: IO[str],
    header: list[str],
    rows: Callable[[], Iterator[list[str]]],
    widths: list[int] | None = None,
) -> None:
    """Aligned columns, never held whole: read twice (widths, then the lines) unless the
    widths of the cells are known."""
    if not widths:
        widths = [0] * len(header)
        for row in rows():
            widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    widths = [max(w, len(h)) for w, h in zip(widths, header, strict=True)]
    for row in itertools.chain([header], rows()):
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        stream.write("  " + "  ".join(cells).rstrip() + "\n")


def render_table(fleet: Fleet, stream: IO[str]) -> None:
    unicode_ok = (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf")
    stream.write(f"gpucheck {__version__} fleet: {head_line(fleet)}\n")
    if fleet.host_count:
        stream.write("\nInventory\n")
        header = ["HOST", "GPUS", "DRIVER", "CUDA", "FRAMEWORKS", "READY", "PROBLEMS"]
        rows = lambda: itertools.starmap(inventory_row, fleet.hosts())  # noqa: E731
        _columns(stream, header, rows, fleet.inventory_widths)
    if fleet.problems:
        stream.write("\nProblems across the fleet\n")
        for g in fleet.problems:
            mark = MARKS.get(g.status, ("?", "?"))[0 if unicode_ok else 1]
            stream.write(
                f"  {mark} {printable(g.check)} {VERBS.get(g.status, printable(g.status))} on "
                f"{g.count} host(s): {printable(g.title)}\n"
            )
            more = g.count - HOSTS_SHOWN
            shown = printable(", ".join(g.first_hosts[:HOSTS_SHOWN]))
            shown += f" and {more} more" if more > 0 else ""
            stream.write(f"      {shown}\n")
    if fleet.versions:
        stream.write("\nVersion spread (hosts)\n")
        width = max(len(c) for c in fleet.versions)
        for category, counts in fleet.versions.items():
            spread = printable(", ".join(f"{v} ({n})" for v, n in counts.items()))
            stream.write(f"  {printable(category).ljust(width)}  {spread}\n")
    if any(True for _ in itertools.islice(fleet.gpus_to_act_on(), 1)):
        stream.write("\nGPUs to act on\n")
        header = ["HOST", "GPU", "UUID", "SERIAL", "CHECK", "STATUS"]
        _columns(stream, header, lambda: map(_act_row, fleet.gpus_to_act_on()))
    if fleet.bad_count:
        stream.write(f"\nBad reports ({fleet.bad_count})\n")
        for b in fleet.bad_reports():
            stream.write(f"  {printable(b.source)}: {printable(b.reason)}\n")


# Besides the C0 controls JSON escapes itself: DEL, the C1 controls and the bidirectional
# overrides, which a terminal showing the JSON would act on. Escaped, the values are the same.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _json_safe(text: str) -> str:
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_INDENTS = [b"\n" + b"  " * depth for depth in range(8)]


def _value(obj: object, depth: int) -> str:
    """`obj` as msgspec's indented JSON would show it `depth` levels down."""
    data = msgspec.json.format(_encode(obj), indent=2).replace(b"\n", _INDENTS[depth])
    text = data.decode("utf-8")
    return text if data.isascii() and b"\x7f" not in data else _json_safe(text)


_encode = msgspec.json.Encoder().encode


def _array(stream: IO[str], values: Iterable[object], depth: int) -> None:
    """A JSON array written an element at a time, laid out as msgspec.json.format would."""
    inner = "\n" + "  " * (depth + 1)
    separator = "[" + inner
    for value in values:
        stream.write(separator + _value(value, depth + 1))
        separator = "," + inner
    stream.write("[]" if separator.startswith("[") else "\n" + "  " * depth + "]")


class _Problem(Struct):
    check: str
    status: str
    title: str


def _problem(fleet: Fleet, g: ProblemGroup, stream: IO[str]) -> None:
    # {"check", "status", "title", "hosts": [...]}, the hosts streamed from the store.
    head = _value(_Problem(g.check, g.status, g.title), 2)
    stream.write(head[: head.rindex("\n")] + ',\n      "hosts": ')
    _array(stream, fleet.problem_hosts(g), 3)
    stream.write("\n    }")


def render_json(fleet: Fleet, stream: IO[str]) -> None:
    summary = {
        "reports": fleet.reports,
        "hosts": fleet.host_count,
        "ready": fleet.ready,
        "not_ready": fleet.host_count - fleet.ready,
        "bad_reports": fleet.bad_count,
        "superseded": fleet.superseded,
        "exit_code": fleet.exit_code,
    }
    stream.write(f'{{\n  "fleet_schema_version": {_value(FLEET_SCHEMA_VERSION, 1)},\n')
    stream.write(f'  "tool": {_value({"name": "gpucheck", "version": __version__}, 1)},\n')
    stream.write(f'  "summary": {_value(summary, 1)},\n  "hosts": ')
    _array(stream, (h for _, h in fleet.hosts()), 1)
    stream.write(',\n  "problems": ')
    if fleet.problems:
        for n, g in enumerate(fleet.problems):
            stream.write(",\n    " if n else "[\n    ")
            _problem(fleet, g, stream)
        stream.write("\n  ]")
    else:
        stream.write("[]")
    stream.write(f',\n  "versions": {_value(fleet.versions, 1)},\n  "gpus_to_act_on": ')
    _array(stream, fleet.gpus_to_act_on(), 1)
    stream.write(',\n  "bad_reports": ')
    _array(stream, fleet.bad_reports(), 1)
    stream.write("\n}\n")


CSV_COLUMNS = (
    "host",
    "host_id",
    "fqdn",
    "cloud_instance_id",
    "boot_time",
    "ready",
    "exit_code",
    "gpu_count",
    "gpus",
    "driver",
    "cuda",
    "frameworks",
    "problems",
    "created_at",
    "rechecked",
    "source",
)


def _csv_row(name: str, h: HostRecord) -> list[object]:
    # Every text from a report with its control characters escaped, as on a terminal: a CSV
    # is read in terminals and spreadsheets too.
    cells = [
        name,
        h.host.host_id or "",
        h.host.fqdn or "",
        h.host.cloud_instance_id or "",
        h.host.boot_time or "",
        "yes" if h.ready else "no",
        h.exit_code,
        len(h.gpus),
        gpu_text(h.gpus) if h.gpus else "",
        h.driver or "",
        h.cuda or "",
        "; ".join(h.frameworks),
        " ".join(dict.fromkeys(p.check for p in h.problems)),
        h.created_at,
        "yes" if h.rechecked else "no",
        h.source,
    ]
    return [safe(c) if isinstance(c, str) else c for c in cells]


def render_csv(fleet: Fleet, stream: IO[str]) -> None:
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(itertools.starmap(_csv_row, fleet.hosts()))


def build(builder: FleetBuilder, fmt: str) -> Fleet:
    """The fleet, with what `fmt` needs measured in the pass that builds it."""
    return builder.build(inventory_row if fmt == "table" else None)


# The fleet's formats, by the name `fleet --format` takes; table is the default. (Its JSON is
# streamed from the hosts' store, not encoded whole by write_json: a fleet can be large.)
FORMATS: dict[str, Format[Fleet]] = format_table(
    FunctionFormat("table", render_table),
    FunctionFormat("json", render_json),
    FunctionFormat("csv", render_csv),
    FunctionFormat("html", render_html),
)
