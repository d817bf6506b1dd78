"""The fleet for a person (table), a script (JSON) or a spreadsheet (CSV: the inventory, one
row per host). Chosen by name, as `--format` offers them. Reports come from other machines:
in the table every value is shown with its control characters escaped, never sent to the
terminal."""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable
from typing import IO, Any

import msgspec

from gpucheck.fleet.records import HostRecord
from gpucheck.fleet.summary import Fleet, name
from gpucheck.report.text import printable
from gpucheck.version import __version__

# The fleet output's own format version: a minor version only adds fields.
FLEET_SCHEMA_VERSION = "1.0"
HOSTS_SHOWN = 10  # per problem in the table; JSON lists them all
MARKS = {"error": ("✗", "x"), "fail": ("✗", "x"), "warn": ("!", "!")}
VERBS = {"error": "broke", "fail": "failed", "warn": "warned"}


def gpu_text(gpus: list[str]) -> str:
    return ", ".join(f"{n}x {model}" for model, n in Counter(gpus).items()) or "none"


def _columns(stream: IO[str], header: list[str], rows: list[list[str]]) -> None:
    rows = [[printable(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    for row in [header, *rows]:
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        stream.write("  " + "  ".join(cells).rstrip() + "\n")


def _head(fleet: Fleet) -> str:
    hosts = len(fleet.hosts)
    parts = [f"{fleet.ready} ready", f"{hosts - fleet.ready} not ready"]
    line = f"{fleet.reports} report(s), {hosts} host(s): {', '.join(parts)}"
    if fleet.bad_reports:
        line += f"; {len(fleet.bad_reports)} bad report(s)"
    if fleet.superseded:
        line += f"; {fleet.superseded} older report(s) of the same hosts left out"
    return line


def render_table(fleet: Fleet, stream: IO[str]) -> None:
    unicode_ok = (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf")
    stream.write(f"gpucheck {__version__} fleet: {_head(fleet)}\n")
    if fleet.hosts:
        stream.write("\nInventory\n")
        rows = [
            [
                name(h),
                gpu_text(h.gpus),
                h.driver or "-",
                h.cuda or "-",
                ", ".join(h.frameworks) or "-",
                "yes" if h.ready else "no",
                " ".join(dict.fromkeys(p.check for p in h.problems)) or "-",
            ]
            for h in fleet.hosts
        ]
        header = ["HOST", "GPUS", "DRIVER", "CUDA", "FRAMEWORKS", "READY", "PROBLEMS"]
        _columns(stream, header, rows)
    if fleet.problems:
        stream.write("\nProblems across the fleet\n")
        for g in fleet.problems:
            mark = MARKS.get(g.status, ("?", "?"))[0 if unicode_ok else 1]
            stream.write(
                f"  {mark} {printable(g.check)} {VERBS.get(g.status, printable(g.status))} on "
                f"{len(g.hosts)} host(s): {printable(g.title)}\n"
            )
            more = len(g.hosts) - HOSTS_SHOWN
            shown = printable(", ".join(g.hosts[:HOSTS_SHOWN]))
            shown += f" and {more} more" if more > 0 else ""
            stream.write(f"      {shown}\n")
    if fleet.versions:
        stream.write("\nVersion spread (hosts)\n")
        width = max(len(c) for c in fleet.versions)
        for category, counts in fleet.versions.items():
            spread = printable(", ".join(f"{v} ({n})" for v, n in counts.items()))
            stream.write(f"  {printable(category).ljust(width)}  {spread}\n")
    if fleet.gpus_to_act_on:
        stream.write("\nGPUs to act on\n")
        header = ["HOST", "GPU", "UUID", "SERIAL", "CHECK", "STATUS"]
        rows = [
            [
                a.host,
                str(a.gpu.index),
                a.gpu.uuid or "-",
                a.gpu.serial or "-",
                a.gpu.check,
                a.gpu.status,
            ]
            for a in fleet.gpus_to_act_on
        ]
        _columns(stream, header, rows)
    if fleet.bad_reports:
        stream.write(f"\nBad reports ({len(fleet.bad_reports)})\n")
        for b in fleet.bad_reports:
            stream.write(f"  {printable(b.source)}: {printable(b.reason)}\n")


def as_dict(fleet: Fleet) -> dict[str, Any]:
    return {
        "fleet_schema_version": FLEET_SCHEMA_VERSION,
        "tool": {"name": "gpucheck", "version": __version__},
        "summary": {
            "reports": fleet.reports,
            "hosts": len(fleet.hosts),
            "ready": fleet.ready,
            "not_ready": len(fleet.hosts) - fleet.ready,
            "bad_reports": len(fleet.bad_reports),
            "superseded": fleet.superseded,
            "exit_code": fleet.exit_code,
        },
        # The fleet's own records, built whole here: msgspec encodes them as they are, several
        # times faster than converting 10,000 of them field by field first.
        "hosts": fleet.hosts,
        "problems": fleet.problems,
        "versions": fleet.versions,
        "gpus_to_act_on": fleet.gpus_to_act_on,
        "bad_reports": fleet.bad_reports,
    }


def render_json(fleet: Fleet, stream: IO[str]) -> None:
    text = msgspec.json.format(msgspec.json.encode(as_dict(fleet)), indent=2)
    stream.write(text.decode("utf-8") + "\n")


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


def _csv_row(h: HostRecord) -> list[object]:
    return [
        name(h),
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


def render_csv(fleet: Fleet, stream: IO[str]) -> None:
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(_csv_row(h) for h in fleet.hosts)


FORMATS: dict[str, Callable[[Fleet, IO[str]], None]] = {
    "table": render_table,
    "json": render_json,
    "csv": render_csv,
}
