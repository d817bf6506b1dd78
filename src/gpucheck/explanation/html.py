"""`explain --format html`: what the pasted text's messages mean, as a page to attach to a
ticket: each finding's lines, cause and fix (the commands in copyable blocks); the text is the
user's, every line of it escaped."""

from __future__ import annotations

from typing import IO

from gpucheck.explanation.result import NOTHING_KNOWN, Explanation
from gpucheck.report.html import finding_block, page, text


def render_html(result: Explanation, stream: IO[str]) -> None:
    source = result.source
    where = "standard input" if source.name == "-" else source.name
    facts = f", with the facts of {source.facts_from}" if source.facts_from else ""
    body = [f"<header><h1>gpucheck explain: {text(where)}</h1>"]
    body.append(f'<p class="where">{source.lines} lines{text(facts)}</p></header>')
    if not result.findings:
        body.append(f"<p>{text(NOTHING_KNOWN)}</p>")
    body += [finding_block(f, verbose=True) for f in result.findings]
    counts = result.counts
    body.append(
        f"<p>{counts['fail']} failing, {counts['warn']} warning, {counts['info']} harmless "
        f"(exit {result.exit_code})</p>"
    )
    stream.write(page(f"gpucheck explain: {where}", "\n".join(body)))
