"""The report for a person at a terminal: grouped by layer, one line a check, the evidence
under it, and the fix under every problem. Colour only on a terminal (rich decides, and
honours NO_COLOR and FORCE_COLOR)."""

from __future__ import annotations

import io
from typing import IO

from rich.console import Console
from rich.text import Text

from gpucheck import __version__
from gpucheck.model.finding import Section, Status
from gpucheck.report.core import Report

MARKS = {
    Status.PASS: ("✓", "+", "green"),
    Status.WARN: ("!", "!", "yellow"),
    Status.FAIL: ("✗", "x", "bold red"),
    Status.SKIP: ("-", "-", "dim"),
    Status.INFO: ("i", "i", "cyan"),
    Status.ERROR: ("✗", "x", "bold magenta"),
}


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich's own handling exits 1; the CLI keeps the report's exit code instead.
        raise BrokenPipeError


def _console(stream: IO[str] | None) -> Console:
    return _Console(file=stream, highlight=False, soft_wrap=False, emoji=False)


# What a notebook shows: the terminal's colours as inline styles in a preformatted block.
NOTEBOOK_HTML = (
    '<pre style="white-space:pre;overflow-x:auto;line-height:normal;'
    "font-family:Menlo,'DejaVu Sans Mono',consolas,'Courier New',monospace\">{code}</pre>"
)


def render(report: Report, stream: IO[str] | None = None, verbose: bool = False) -> None:
    _render(_console(stream), report, verbose)


def render_html(report: Report, verbose: bool = False) -> str:
    """The terminal report as an HTML fragment (for Jupyter and Colab)."""
    console = _Console(
        file=io.StringIO(),
        record=True,
        force_terminal=True,
        color_system="truecolor",
        width=100,
        highlight=False,
        soft_wrap=False,
        emoji=False,
    )
    _render(console, report, verbose)
    return console.export_html(inline_styles=True, code_format=NOTEBOOK_HTML)


def render_plain(report: Report, verbose: bool = False) -> str:
    stream = io.StringIO()
    render(report, stream, verbose)
    return stream.getvalue()


def _render(console: Console, report: Report, verbose: bool) -> None:
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
    _hanging(console, head, Text(f"  {where}", style="dim"))
    if report.from_file:
        taken = report.snapshot.created_at or "at an unknown time"
        _hanging(
            console, Text(""), Text(f"snapshot {report.from_file}, taken {taken}", style="dim")
        )
    for section in Section:
        items = [f for f in report.findings if f.section == section]
        if not items:
            continue
        console.print()
        console.print(Text(section.label, style="bold underline"))
        for f in items:
            mark, ascii_mark, style = MARKS[f.status]
            problem = f.status in (Status.FAIL, Status.WARN, Status.ERROR)
            title = Text(f.title, style=style if f.status in (Status.FAIL, Status.ERROR) else "")
            if verbose or problem:
                title.append(f"  [{f.id}]", style="dim")
            head = Text("  ")
            head.append(mark if unicode_ok else ascii_mark, style=style)
            head.append(" ")
            _hanging(console, head, title)
            if verbose or problem or f.status == Status.INFO:
                for ev in f.evidence:
                    _hanging(console, Text(" " * 6), Text(ev, style="" if problem else "dim"))
            if f.fix and (problem or verbose):
                _hanging(console, Text("      fix: ", style="bold"), Text(f.fix.text))
    console.print()
    console.print(_summary(report, unicode_ok))


def _hanging(console: Console, prefix: Text, body: Text) -> None:
    """Print `prefix` + `body`, wrapping `body` with continuation lines aligned under it
    (and no padding: piped output has no trailing spaces)."""
    indent = prefix.cell_len
    width = max(30, console.width - indent)
    for i, line in enumerate(body.wrap(console, width)):
        line.rstrip()
        lead = prefix if i == 0 else Text(" " * indent)
        console.print(Text.assemble(lead, line), soft_wrap=True)


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
