"""What the fleet's table and page say of a host and of the whole: the summary line, an
inventory row, a GPU list in words; every value from a report with its control characters
escaped."""

from __future__ import annotations

from collections import Counter

from gpucheck.fleet.records import HostRecord
from gpucheck.fleet.summary import Fleet
from gpucheck.report.text import printable

MARKS = {"error": ("✗", "x"), "fail": ("✗", "x"), "warn": ("!", "!")}
VERBS = {"error": "broke", "fail": "failed", "warn": "warned"}


def gpu_text(gpus: list[str]) -> str:
    if not gpus:
        return "none"
    first = gpus[0]
    if gpus.count(first) == len(gpus):  # the usual node: one model
        return f"{len(gpus)}x {first}"
    return ", ".join(f"{n}x {model}" for model, n in Counter(gpus).items())


def safe(text: str) -> str:
    """printable(), without its cost for the usual text: isprintable() is False for every
    character printable() escapes (C0, DEL, C1 and the bidi overrides are all "Other")."""
    return text if text.isprintable() else printable(text)


def inventory_row(name: str, h: HostRecord) -> list[str]:
    return [
        safe(c)
        for c in (
            name,
            gpu_text(h.gpus),
            h.driver or "-",
            h.cuda or "-",
            ", ".join(h.frameworks) or "-",
            "yes" if h.ready else "no",
            " ".join(dict.fromkeys(p.check for p in h.problems)) or "-",
        )
    ]


def head_line(fleet: Fleet) -> str:
    hosts = fleet.host_count
    parts = [f"{fleet.ready} ready", f"{hosts - fleet.ready} not ready"]
    line = f"{fleet.reports} report(s), {hosts} host(s): {', '.join(parts)}"
    if fleet.bad_count:
        line += f"; {fleet.bad_count} bad report(s)"
    if fleet.superseded:
        line += f"; {fleet.superseded} older report(s) of the same hosts left out"
    return line
