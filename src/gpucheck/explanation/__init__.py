"""`gpucheck explain`: an error text in (a traceback, a log, dmesg, an NCCL debug log, a pip
error), the doctor's findings out: which layer is at fault, why, and the fix, from the cited
message catalog (compat/messages.toml) and NVIDIA's Xid catalog (compat/xids.toml), with a
snapshot's facts where the text cannot decide."""

from __future__ import annotations

from gpucheck.compat import Compat
from gpucheck.compat.catalog_step import catalog_step
from gpucheck.compat.matching import Lines, Match, matcher
from gpucheck.explanation.facts import FACT_DECISIONS, decide, joined_facts
from gpucheck.explanation.result import Explanation, Source, explain_schema
from gpucheck.model.finding import Finding, Status, severity
from gpucheck.model.fix import Fix
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import Snapshot

__all__ = ["INPUT_LIMIT", "Explanation", "decode", "explain", "explain_schema"]

INPUT_LIMIT = 16 * 1024 * 1024  # bytes: a log bigger than this is cut to the part that matters
EVIDENCE_LINES = 5  # quoted lines per finding; the rest are counted
_QUOTE_CHARS = 400  # a quoted line longer than this is cut
_STATUS = {"fail": Status.FAIL, "warn": Status.WARN, "info": Status.INFO}


def decode(raw: bytes) -> str:
    """Any bytes as text: UTF-8 (a BOM dropped), anything else replaced, NULs removed."""
    return raw.decode("utf-8", errors="replace").lstrip("\ufeff").replace("\x00", "")


def _quote(number: int, line: str) -> str:
    text = line.strip()
    if len(text) > _QUOTE_CHARS:
        text = text[:_QUOTE_CHARS] + " ..."
    return f"line {number}: {text}"


def _finding(match: Match, lines: Lines, snapshot: Snapshot | None, compat: Compat) -> Finding:
    message = match.message
    decision = decide(match, lines, snapshot, compat)
    evidence = [_quote(hit.line, hit.text) for hit in match.hits[:EVIDENCE_LINES]]
    if len(match.hits) > EVIDENCE_LINES:
        evidence.append(f"... and {len(match.hits) - EVIDENCE_LINES} more lines like these")
    evidence.append(f"means: {message.cause}")
    evidence.extend(decision.evidence)
    evidence.append(f"source: {message.source}")
    catalog = catalog_step(match, snapshot)
    first = [step for step in decision.steps if step.option == 0]
    steps = [*first, catalog, *(step for step in decision.steps if step.option != 0)]
    fix = Fix(" ".join(step.sentence() for step in steps), steps)
    # An extension is what a step changes, never a report section: the doctor reports an
    # extension's build under the framework it was built against.
    section = Layer.FRAMEWORKS if message.section is Layer.EXTENSIONS else message.section
    return Finding(
        f"explain.{message.id}", section, _STATUS[message.severity], message.title, evidence, fix
    )


def explain(
    text: str,
    compat: Compat,
    snapshot: Snapshot | None = None,
    name: str = "--text",
    facts_from: str | None = None,
) -> Explanation:
    """The messages of the catalog found in `text`, as findings: the worst first, then the most
    specific (the longest text matched), then the earliest line."""
    lines = Lines(text)
    matches = matcher(compat).matches(lines)
    matches.sort(
        key=lambda m: (
            -severity(_STATUS[m.message.severity]),
            -m.specificity,
            m.first_line,
        )
    )
    findings = [_finding(m, lines, snapshot, compat) for m in matches]
    size = len(text.encode("utf-8", errors="replace"))
    deciding = any(m.message.decide in FACT_DECISIONS for m in matches)
    facts = joined_facts(snapshot) if snapshot is not None and deciding else []
    return Explanation(Source(name, len(lines), size, facts_from, facts), findings)
