"""`fix --from EXPLAIN.json`: the plan of a `gpucheck explain --json` answer. Such a file holds
no snapshot, and its fixes are written text that a tampered file could fill with any command,
so none of it is planned from: the lines it quotes ("line 12: ...") are matched again against
this gpucheck's message catalog, and each finding's step is that catalog entry's own. A file
can choose which catalog entries apply (as a pasted log can), never what a step runs. Steps an
explain run decided from facts (the GPUs, the driver) are not re-derived: the file holds none."""

from __future__ import annotations

import re

import msgspec
from msgspec import Struct, field

from gpucheck.compat import Compat
from gpucheck.compat.matching import Lines, matcher
from gpucheck.fixplan import plan_for
from gpucheck.fixplan.from_report import NOT_REDERIVED
from gpucheck.fixplan.plan import Plan, PlanFinding
from gpucheck.model.finding import PROBLEM, Finding, Status
from gpucheck.model.fix import Fix
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import Snapshot

PREFIX = "explain."
_QUOTED = re.compile(r"line (\d+): (.*)\Z", re.DOTALL)
_STATUS = {"fail": Status.FAIL, "warn": Status.WARN, "info": Status.INFO}
FACTS_NOTE = (
    "planned from the lines the explanation quotes, matched again against this gpucheck's "
    "message catalog; the file's written fixes are not read, and facts its run joined (the "
    "GPUs, the driver) are not in it: `gpucheck explain LOG --fix --from snapshot.json` "
    "plans with them"
)


class _Written(Struct):
    id: str
    status: str = ""
    title: str = ""
    evidence: list[str] = field(default_factory=list)


class _Source(Struct):
    name: str
    lines: int
    bytes: int


class WrittenExplanation(Struct):
    source: _Source
    findings: list[_Written] = field(default_factory=list)


def read_explanation(data: bytes) -> WrittenExplanation | None:
    """The findings of an explain answer; None for anything else (a snapshot, a report).
    Raises ValueError (one line) for an explain answer whose findings are malformed."""
    try:
        head = msgspec.json.decode(data.removeprefix(b"\xef\xbb\xbf"))
    except msgspec.DecodeError:
        return None
    if not isinstance(head, dict) or not isinstance(head.get("source"), dict):
        return None
    if "snapshot" in head or "bytes" not in head["source"]:
        return None
    try:
        return msgspec.convert(head, WrittenExplanation)
    except msgspec.ValidationError as exc:
        raise ValueError(f"not a valid explain answer: {exc}") from None


def _quoted_text(written: WrittenExplanation) -> str:
    """The quoted lines, each once, in their order: the part of the text the findings read."""
    lines: dict[int, str] = {}
    for finding in written.findings:
        if not finding.id.startswith(PREFIX):
            continue
        for line in finding.evidence:
            found = _QUOTED.match(line)
            if found:
                lines.setdefault(int(found.group(1)), found.group(2).removesuffix(" ..."))
    return "\n".join(lines[n].replace("\n", " ") for n in sorted(lines))


def plan_from_explanation(
    written: WrittenExplanation, compat: Compat, from_file: str | None
) -> Plan:
    ids = {f.id for f in written.findings}
    findings: list[Finding] = []
    for match in matcher(compat).matches(Lines(_quoted_text(written))):
        message = match.message
        finding_id = PREFIX + message.id
        if finding_id not in ids or any(f.id == finding_id for f in findings):
            continue
        step = message.fix_step()
        section = Layer.FRAMEWORKS if message.section is Layer.EXTENSIONS else message.section
        evidence = [f"line {h.line}: {h.text}" for h in match.hits]
        evidence += [f"means: {message.cause}", f"source: {message.source}"]
        status = _STATUS[message.severity]
        fix = Fix(step.sentence(), [step])
        findings.append(Finding(finding_id, section, status, message.title, evidence, fix))
    plan = plan_for(Snapshot(), findings, from_file)
    derived = {f.id for f in findings}
    plan.findings += [
        PlanFinding(f.id, f.status, f.title, not_planned=NOT_REDERIVED)
        for f in written.findings
        if _STATUS.get(f.status) in PROBLEM and f.id not in derived
    ]
    plan.notes.append(FACTS_NOTE)
    return plan
