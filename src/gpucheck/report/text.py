"""The report for a person: grouped by layer, one line a check, the evidence under it, and
the fix under every problem. `layout()` decides what is said; two renderers say it: plain
text (pipes and files: no colour, no wrapping, so `grep` finds whole paths) and rich on a
terminal (colour, wrapping under a hanging indent; terminal.py).

Everything from a snapshot is untrusted text (a hostname or GPU name from another machine):
control characters are shown escaped, never sent to the terminal.
"""

from __future__ import annotations

import re
from typing import IO, TYPE_CHECKING, Protocol

from msgspec import Struct

from gpucheck.exit_status import ExitStatus
from gpucheck.model.finding import PROBLEM, Finding, Status
from gpucheck.model.layers import Layer
from gpucheck.model.plural import counted
from gpucheck.report.topology import matrix
from gpucheck.version import __version__

if TYPE_CHECKING:
    from gpucheck.model.snapshot import Snapshot

MARKS = {
    Status.PASS: ("✓", "+", "green"),
    Status.WARN: ("!", "!", "yellow"),
    Status.FAIL: ("✗", "x", "bold red"),
    Status.SKIP: ("-", "-", "dim"),
    Status.INFO: ("i", "i", "cyan"),
    Status.ERROR: ("✗", "x", "bold magenta"),
}

# C0 and C1 controls, DEL, the bidirectional controls that can reorder what is shown (the
# marks U+061C, U+200E-200F, the embeddings and overrides U+202A-202E, the isolates
# U+2066-2069), the line and paragraph separators some viewers break lines at, and lone
# surrogates (a path's bytes that are not UTF-8, as Python decodes them from argv).
# (As text: re compiles it only for a text with something Python cannot print.)
_UNSAFE = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"


def printable(text: str) -> str:
    """`text` with every control character shown as an escape (\\x1b), never executed.

    The one escaping of untrusted text (host names, GPU names, paths, command lines) for
    every output a person or another program reads: the terminal and plain text, JUnit,
    Prometheus label values, procs, and the watch and fleet files (CSV, summaries)."""
    if text.isprintable():  # every character _UNSAFE matches is unprintable: nothing to do
        return text
    return re.sub(
        _UNSAFE,
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"
        ),
        text,
    )


class Judged(Protocol):
    """What the layout reads of a report. core.Report is one, and renders itself (notebooks)
    through this module and terminal.py: they name this, never core, so no import goes back."""

    @property
    def snapshot(self) -> Snapshot: ...
    @property
    def findings(self) -> list[Finding]: ...
    @property
    def from_file(self) -> str | None: ...
    @property
    def counts(self) -> dict[str, int]: ...
    @property
    def problems(self) -> list[Finding]: ...
    @property
    def ready(self) -> bool: ...
    @property
    def exit_code(self) -> int: ...
    @property
    def not_ready_reason(self) -> str | None: ...


class Line(Struct, frozen=True):  # (a Struct: no dataclass code generation at start-up)
    """One line of the report: `body` wraps (on a terminal) under the end of `lead`."""

    lead: str
    body: str
    lead_style: str = ""
    body_style: str = ""


def layout(report: Judged, verbose: bool, unicode_ok: bool) -> list[Line]:
    sysf = report.snapshot.system
    where = (" · " if unicode_ok else " - ").join(
        p
        for p in (
            sysf.hostname,
            sysf.os_release or sysf.os,
            f"{sysf.os} {sysf.kernel} {sysf.arch}".strip(),
        )
        if p
    )
    lines = [Line(f"gpucheck {__version__}", printable(f"  {where}"), "bold", "dim")]
    if report.from_file:
        taken = report.snapshot.created_at or "at an unknown time"
        lines.append(Line("", printable(f"snapshot {report.from_file}, taken {taken}"), "", "dim"))
    for env in report.snapshot.environments:
        version = f" (Python {env.version})" if env.version else ""
        lines.append(Line("", printable(f"python {env.python}{version}, {env.origin}"), "", "dim"))
    for section in Layer:
        items = [f for f in report.findings if f.section == section]
        if not items:
            continue
        lines += [Line("", ""), Line("", section.label, "", "bold underline")]
        skipped = _skipped_by_cause(items)
        for f in items:
            mark, ascii_mark, style = MARKS[f.status]
            problem = f.status in PROBLEM
            title = printable(f.title)
            if f.status == Status.SKIP:
                # One line per cause, naming every check it left unjudged (a partial snapshot
                # would otherwise print dozens of identical lines that say nothing apart).
                ids = skipped.pop(f.title, None)
                if ids is None:
                    continue
                title += f"  [{', '.join(ids)}]"
            elif verbose or problem:
                title += f"  [{f.id}]"
            strong = style if f.status in (Status.FAIL, Status.ERROR) else ""
            lines.append(Line(f"  {mark if unicode_ok else ascii_mark} ", title, style, strong))
            if verbose or problem or f.status == Status.INFO:
                lines += [
                    Line(" " * 6, printable(ev), "", "" if problem else "dim") for ev in f.evidence
                ]
            if f.fix and (problem or verbose):
                lines.append(Line("      fix: ", printable(f.fix.text), "bold"))
        if section == Layer.GPUS:
            topo = matrix(report.snapshot.nvml, report.snapshot.network)
            if topo:  # a multi-GPU machine: how its GPUs reach each other
                lines.append(Line("  ", "GPU topology (as nvidia-smi topo -m)", "", "bold"))
                lines += [Line("    ", printable(row), "", "dim") for row in topo]
    text, style = summary(report, unicode_ok)
    return [*lines, Line("", ""), Line("", text, "", style)]


def _skipped_by_cause(findings: list[Finding]) -> dict[str, list[str]]:
    """The skipped findings' check ids by their title (the cause), in report order."""
    causes: dict[str, list[str]] = {}
    for f in findings:
        if f.status == Status.SKIP:
            causes.setdefault(f.title, []).append(f.id)
    return causes


def summary(report: Judged, unicode_ok: bool) -> tuple[str, str]:
    c = report.counts
    tail = f"{c['pass']} passed, {c['skip']} skipped, {c['info']} info"
    if report.ready:
        warn = f", {counted(c['warn'], 'warning')}" if c["warn"] else ""
        return f"{'✓' if unicode_ok else '+'} Ready: {tail}{warn}", "bold green"
    if report.exit_code == ExitStatus.UNKNOWN:
        return f"? Could not tell: {report.not_ready_reason}; {tail}", "bold yellow"
    cross = "✗" if unicode_ok else "x"
    if report.not_ready_reason:
        return f"{cross} Not ready: {report.not_ready_reason}; {tail}", "bold red"
    n = len(report.problems)
    parts = [f"{c['fail']} failed"] + ([counted(c["warn"], "warning")] if c["warn"] else [])
    if c["error"]:
        parts.append(counted(c["error"], "internal error"))
    return f"{cross} {counted(n, 'problem')} ({', '.join(parts)}); {tail}", "bold red"


def render_plain(report: Judged, stream: IO[str], verbose: bool = False) -> None:
    unicode_ok = (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf")
    stream.write(
        "".join(f"{ln.lead}{ln.body}".rstrip() + "\n" for ln in layout(report, verbose, unicode_ok))
    )
