"""The report as one self-contained HTML page: what a person forwards (a support ticket, a
refund request, a mail to a colleague). Inline CSS (html_style.py) and inline SVG only, no
script, font or image fetched from anywhere, and a Content-Security-Policy that forbids any
fetch, so the page works offline and as a mail attachment.

The page shell (`page`), the escaping (`text`) and a finding's block (`finding_block`) are
shared by every command's HTML body (the doctor's here; bench, fix, fleet, watch in their own
packages). Built from strings with html.escape: the standard library is enough for a page this
size, and nothing in it runs or fetches.

Everything from a snapshot is untrusted text: it goes through report.text.printable (control
characters shown as escapes) and then html.escape, never onto the page raw."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import IO

from gpucheck.model.finding import PROBLEM, Finding, Status
from gpucheck.model.fix import Fix, StepKind
from gpucheck.model.layers import Layer
from gpucheck.report.html_style import CSS, PAGE_CSS
from gpucheck.report.text import MARKS, Judged, printable, summary
from gpucheck.report.topology import matrix
from gpucheck.version import __version__

# Nothing may be fetched: not a script, a style sheet, a font, an image or a frame. Inline
# styles are the page's own; images only as data: URIs (none today).
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'"
)

# The word beside each status's icon: colour is never the only signal.
WORDS = {
    Status.PASS: "pass",
    Status.WARN: "warning",
    Status.FAIL: "fail",
    Status.SKIP: "skipped",
    Status.INFO: "info",
    Status.ERROR: "error",
}


def text(value: object) -> str:
    """`value` as HTML text: control characters escaped (printable), then &, <, >, quotes."""
    return html.escape(printable(str(value)), quote=True)


def page(title: str, body: str) -> str:
    """A whole HTML document around `body` (already HTML): the one shell of every report."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light">\n'
        f'<meta name="generator" content="gpucheck {text(__version__)}">\n'
        f"<title>{text(title)}</title>\n"
        f"<style>{PAGE_CSS}{CSS}</style>\n</head>\n<body>\n"
        f'<main class="gpucheck">\n{body}\n'
        f"<footer>Written by gpucheck {text(__version__)}. This page runs nothing and fetches "
        "nothing: it can be mailed and opened offline.</footer>\n</main>\n</body>\n</html>\n"
    )


def fragment(body: str) -> str:
    """`body` with the style sheet, for a notebook's output (no document around it)."""
    return f'<style>{CSS}</style>\n<div class="gpucheck">\n{body}\n</div>'


def badge(status: Status) -> str:
    """The status as an icon and a word."""
    mark = MARKS[status][0]
    return (
        f'<span class="st st-{status.value}"><span aria-hidden="true">{mark}</span> '
        f"{WORDS[status]}</span>"
    )


def code_block(command: str) -> str:
    return f"<pre><code>{text(command)}</code></pre>"


def fix_block(fix: Fix) -> str:
    """A fix's steps in order, each command in its own copyable block; another way to the
    same end under "Or"."""
    if not fix.steps:
        return f'<div class="fix"><strong>Fix:</strong> {text(fix.text)}</div>'
    out = ['<div class="fix"><strong>Fix:</strong>']
    option = None
    for step in fix.steps:
        if step.option != option:
            if option is not None:
                out.append("</ol><p><strong>Or:</strong></p>")
            out.append("<ol>")
            option = step.option
        kind = (
            ""
            if step.kind is StepKind.COMMAND
            else f'<span class="kind">[{step.kind.value}]</span> '
        )
        said = text(step.text) if step.text else ""
        command = code_block(step.command) if step.command is not None else ""
        out.append(f"<li>{kind}{said}{command}</li>")
    out.append("</ol></div>")
    return "".join(out)


def finding_block(f: Finding, verbose: bool, title: str | None = None) -> str:
    """One finding: status (icon and word), title, id, evidence, fix and, for a check that
    broke, what it raised. What is shown follows the text report: evidence and fix for a
    problem (and info's evidence), everything with `verbose`."""
    problem = f.status in PROBLEM
    shown_id = f' <span class="id">[{text(f.id)}]</span>' if (verbose or problem) else ""
    parts = [
        f'<div class="finding s-{f.status.value}{" problem" if problem else ""}">',
        f"{badge(f.status)}<h3>{text(title if title is not None else f.title)}</h3>{shown_id}",
    ]
    if f.evidence and (verbose or problem or f.status is Status.INFO):
        parts.append('<ul class="evidence">')
        parts += [f"<li>{text(ev)}</li>" for ev in f.evidence]
        parts.append("</ul>")
    if f.fix and (problem or verbose):
        parts.append(fix_block(f.fix))
    if f.error is not None:
        parts.append(
            f"<p>The check raised {text(f.error.type)}: {text(f.error.message)}. This is a "
            "gpucheck bug: please report it with this page.</p>"
        )
    parts.append("</div>")
    return "".join(parts)


def header_block(report: Judged, heading: str) -> str:
    """The machine: host, OS, kernel, where the snapshot came from, the Python environments."""
    sysf = report.snapshot.system
    where = " · ".join(
        p
        for p in (
            sysf.hostname,
            sysf.os_release or sysf.os,
            f"{sysf.os} {sysf.kernel} {sysf.arch}".strip(),
        )
        if p
    )
    meta = []
    if report.from_file:
        taken = report.snapshot.created_at or "at an unknown time"
        meta.append(f"snapshot {report.from_file}, taken {taken}")
    meta += [
        f"python {env.python}{f' (Python {env.version})' if env.version else ''}, {env.origin}"
        for env in report.snapshot.environments
    ]
    items = "".join(f"<li>{text(m)}</li>" for m in meta)
    return (
        f"<header><h1>{text(heading)}</h1>"
        f'<p class="where">{text(where) or "an unnamed machine"}</p>'
        + (f'<ul class="meta">{items}</ul>' if items else "")
        + "</header>"
    )


def verdict_block(report: Judged) -> str:
    said, _ = summary(report, unicode_ok=True)
    status = Status.PASS if report.ready else Status.FAIL if report.problems else Status.WARN
    return f'<p class="verdict st-{status.value}" role="status">{text(said)}</p>'


def findings_by_layer(report: Judged, verbose: bool) -> str:
    """Each layer's findings under its heading, in the stack's order; skipped checks one block
    per cause, naming every check it left unjudged (as the text report)."""
    out = []
    for section in Layer:
        items = [f for f in report.findings if f.section == section]
        if not items:
            continue
        out.append(f'<section><h2 id="layer-{section.value}">{text(section.label)}</h2>')
        skipped: dict[str, list[str]] = {}
        for f in items:
            if f.status is Status.SKIP:
                skipped.setdefault(f.title, []).append(f.id)
        for f in items:
            if f.status is Status.SKIP:
                ids = skipped.pop(f.title, None)
                if ids is not None:
                    out.append(finding_block(f, verbose, f"{f.title}  [{', '.join(ids)}]"))
                continue
            out.append(finding_block(f, verbose))
        if section is Layer.GPUS:
            topo = matrix(report.snapshot.nvml)
            if topo:
                out.append("<p><strong>GPU topology</strong> (as nvidia-smi topo -m)</p>")
                out.append(f"<pre><code>{text(chr(10).join(topo))}</code></pre>")
        out.append("</section>")
    return "\n".join(out)


def report_body(report: Judged, verbose: bool = False, heading: str = "") -> str:
    """The doctor's report as HTML: header, verdict, each layer's findings, the verdict again."""
    head = heading or f"gpucheck {__version__}: is this machine ready?"
    return "\n".join(
        (header_block(report, head), verdict_block(report), findings_by_layer(report, verbose))
    )


def report_title(report: Judged, what: str = "doctor") -> str:
    host = report.snapshot.system.hostname or "unnamed machine"
    return f"gpucheck {what}: {host}"


def render_html(report: Judged, stream: IO[str], verbose: bool = False) -> None:
    """`doctor --format html`: the whole page."""
    stream.write(page(report_title(report), report_body(report, verbose)))


def table(
    headings: Iterable[str], rows: Iterable[Iterable[object]], numeric: frozenset[int] = frozenset()
) -> str:
    """A plain table, every cell escaped; the columns in `numeric` aligned right."""
    head = "".join(f'<th scope="col">{text(h)}</th>' for h in headings)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{text(c)}</td>' if i in numeric else f"<td>{text(c)}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
