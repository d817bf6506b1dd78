"""The report for a person at a terminal: grouped by layer, one line a check, the evidence
under it, and the fix under every problem. Colour only on a terminal (rich decides, and
honours NO_COLOR and FORCE_COLOR)."""

from __future__ import annotations

from typing import IO

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from gpucheck import __version__
from gpucheck.checks import Section, Status
from gpucheck.report import Report

MARKS = {
    Status.PASS: ("✓", "+", "green"),
    Status.WARN: ("!", "!", "yellow"),
    Status.FAIL: ("✗", "x", "bold red"),
    Status.SKIP: ("-", "-", "dim"),
    Status.INFO: ("i", "i", "cyan"),
    Status.ERROR: ("✗", "x", "bold magenta"),
}


def _console(stream: IO[str] | None) -> Console:
    return Console(file=stream, highlight=False, soft_wrap=False, emoji=False)


def render(report: Report, stream: IO[str] | None = None, verbose: bool = False) -> None:
    console = _console(stream)
    unicode_ok = (console.encoding or "").lower().startswith("utf")
    sysf = report.snapshot.system
    head = Text(f"gpucheck {__version__}", style="bold")
    where = " · ".join(
        p
        for p in (
            sysf.hostname,
            sysf.os_release or sysf.os,
            f"{sysf.os} {sysf.kernel} {sysf.arch}".strip(),
        )
        if p
    )
    head.append(f"  {where}", style="dim")
    if report.from_file:
        head.append(
            f"  (snapshot {report.from_file}, taken {report.snapshot.created_at})", style="dim"
        )
    console.print(head)
    for section in Section:
        items = [f for f in report.findings if f.section == section]
        if not items:
            continue
        console.print()
        console.print(Text(section.label, style="bold underline"))
        for f in items:
            mark, ascii_mark, style = MARKS[f.status]
            line = Text("  ")
            line.append(mark if unicode_ok else ascii_mark, style=style)
            line.append(" ")
            line.append(f.title, style=style if f.status in (Status.FAIL, Status.ERROR) else "")
            problem = f.status in (Status.FAIL, Status.WARN, Status.ERROR)
            if verbose or problem:
                line.append(f"  [{f.id}]", style="dim")
            console.print(line)
            if verbose or problem or f.status == Status.INFO:
                for ev in f.evidence:
                    console.print(
                        Padding(
                            Text(ev, style="" if problem else "dim"), (0, 0, 0, 6), expand=False
                        )
                    )
            if f.fix and (problem or verbose):
                fix = Text("fix: ", style="bold")
                fix.append(f.fix)
                console.print(Padding(fix, (0, 0, 0, 6), expand=False))
    console.print()
    console.print(_summary(report, unicode_ok))


def _summary(report: Report, unicode_ok: bool) -> Text:
    c = report.counts
    tail = f"{c['pass']} passed, {c['skip']} skipped, {c['info']} info"
    if report.ready:
        warn = f", {c['warn']} warning(s)" if c["warn"] else ""
        return Text(f"{'✓' if unicode_ok else '+'} Ready: {tail}{warn}", style="bold green")
    n = len(report.problems)
    parts = [f"{c['fail']} failed"] + ([f"{c['warn']} warning(s)"] if c["warn"] else [])
    if c["error"]:
        parts.append(f"{c['error']} internal error(s)")
    label = "problem" if n == 1 else "problems"
    return Text(
        f"{'✗' if unicode_ok else 'x'} {n} {label} ({', '.join(parts)}); {tail}",
        style="bold red",
    )
