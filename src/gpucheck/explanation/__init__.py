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


def _doctor_problems(snapshot: Snapshot, compat: Compat) -> dict[Layer, list[Finding]]:
    """The doctor's problems on the joined snapshot, by layer: where the facts say what is wrong
    in the layer a message points at, the doctor's fix (built from those facts, and measured on
    the real cases) is more specific than the catalog's."""
    import gpucheck.checks  # noqa: F401  (registers every check)
    from gpucheck.checks.context import Context
    from gpucheck.checks.registry import run, select
    from gpucheck.model.finding import PROBLEM
    from gpucheck.model.requirements import Requirements

    found: dict[Layer, list[Finding]] = {}
    for finding in run(Context(snapshot, Requirements(), compat), select([], [])):
        if finding.status in PROBLEM and finding.fix is not None and finding.fix.steps:
            found.setdefault(finding.section, []).append(finding)
    return found


def _finding(
    match: Match,
    lines: Lines,
    snapshot: Snapshot | None,
    compat: Compat,
    doctor: dict[Layer, list[Finding]],
) -> Finding:
    message = match.message
    decision = decide(match, lines, snapshot, compat)
    evidence = [_quote(hit.line, hit.text) for hit in match.hits[:EVIDENCE_LINES]]
    if len(match.hits) > EVIDENCE_LINES:
        evidence.append(f"... and {len(match.hits) - EVIDENCE_LINES} more lines like these")
    evidence.append(f"means: {message.cause}")
    evidence.extend(decision.evidence)
    # An extension is what a step changes, never a report section: the doctor reports an
    # extension's build under the framework it was built against.
    section = Layer.FRAMEWORKS if message.section is Layer.EXTENSIONS else message.section
    # The doctor's own problems in this layer on the joined facts: their fixes follow what the
    # facts decided for this message, before the catalog's general step.
    confirmed = doctor.get(section, [])
    evidence.extend(f"the machine's facts: {f.title} [{f.id}]" for f in confirmed)
    evidence.append(f"source: {message.source}")
    catalog = catalog_step(match, snapshot)
    first = [step for step in decision.steps if step.option == 0]
    by_doctor = [step for f in confirmed if f.fix is not None for step in f.fix.steps]
    steps = [
        *first,
        *by_doctor,
        catalog,
        *(step for step in decision.steps if step.option != 0),
    ]
    # A step the doctor and the decision share (the same command or the same words), once.
    unique = {(step.command or step.text): step for step in reversed(steps)}
    steps = [step for step in steps if unique.get(step.command or step.text) is step]
    fix = Fix(" ".join(step.sentence() for step in steps), steps)
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
    doctor = _doctor_problems(snapshot, compat) if snapshot is not None and matches else {}
    findings = [_finding(m, lines, snapshot, compat, doctor) for m in matches]
    size = len(text.encode("utf-8", errors="replace"))
    deciding = any(m.message.decide in FACT_DECISIONS for m in matches)
    facts = joined_facts(snapshot) if snapshot is not None and deciding else []
    if doctor:
        facts.append("the doctor's checks on these facts")
    return Explanation(Source(name, len(lines), size, facts_from, facts), findings)
