"""`fix --from REPORT`: the plan of a `doctor --json` report, built by this gpucheck's own fix
builders from the snapshot the report embeds, never from the commands the report wrote (a
tampered report could carry any). What the report's run decided that its snapshot alone
cannot is kept: which checks ran (--only/--skip: the ids it wrote) and what the job asked
(summary.requirements). A written problem not derived again here is listed, not planned; a
verdict that differs from the report's is said in one note."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
from msgspec import Struct

from gpucheck.fixplan import diagnose, plan_for, report_findings
from gpucheck.fixplan.plan import Plan, PlanFinding
from gpucheck.model.finding import PROBLEM, Finding
from gpucheck.model.requirements import Requirements
from gpucheck.version import __version__

if TYPE_CHECKING:
    from gpucheck.compat import Compat
    from gpucheck.model.snapshot import Snapshot

NOT_REDERIVED = "written by the report, not re-derived here"
SHOWN_IDS = 5  # differing ids a note names before "and N more"


class _Tool(Struct):
    version: str = "of an unknown version"


class _Summary(Struct):
    requirements: Requirements | None = None  # report schema 2.1 on


class _Head(Struct):
    """What a report says of its own run, beside its findings and snapshot."""

    created_at: str | None = None
    tool: _Tool | None = None
    summary: _Summary | None = None


class WrittenReport(Struct, frozen=True):
    findings: list[Finding]  # as written (3.x ids read as 4.0 names them): a selection, a verdict
    requirements: Requirements | None  # None: the report did not record them
    written_by: str  # "gpucheck 0.1.0 on 2026-11-28T08:00:00+00:00"


def read_report(data: bytes) -> WrittenReport | None:
    """A report's findings and what its run decided; None for a snapshot or a report of another
    major (its snapshot alone is diagnosed). Raises ValueError (one line) for a report whose
    own summary or tool record is malformed."""
    findings = report_findings(data)
    if findings is None:
        return None
    try:
        head = msgspec.json.decode(data.removeprefix(b"\xef\xbb\xbf"), type=_Head)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ValueError(f"not a valid report: {exc}") from None
    tool = head.tool or _Tool()
    written_by = f"gpucheck {tool.version}" + (f" on {head.created_at}" if head.created_at else "")
    requirements = head.summary.requirements if head.summary else None
    return WrittenReport(findings, requirements, written_by)


def plan_from_report(
    snapshot: Snapshot, written: WrittenReport, compat: Compat, from_file: str | None
) -> Plan:
    """The plan of the report's snapshot judged again here, limited to the checks the report
    ran and judged against the requirements it recorded."""
    derived = diagnose(snapshot, compat, written.requirements)
    ran = {f.id for f in written.findings}
    kept = [f for f in derived if f.id in ran]
    plan = plan_for(snapshot, kept, from_file)
    derived_ids = {f.id for f in kept}
    plan.findings += [
        PlanFinding(f.id, f.status.value, f.title, not_planned=NOT_REDERIVED)
        for f in written.findings
        if f.status in PROBLEM and f.id not in derived_ids
    ]
    differ = _differing(written.findings, kept)
    if differ:
        shown = ", ".join(differ[:SHOWN_IDS])
        more = f" and {len(differ) - SHOWN_IDS} more" if len(differ) > SHOWN_IDS else ""
        plan.notes.append(
            f"planned from the report's snapshot with this gpucheck's data (gpucheck "
            f"{__version__}, compat as of {compat.data_as_of or 'an unknown date'}); the report "
            f"was written by {written.written_by} and judged otherwise: {shown}{more}"
        )
    return plan


def _differing(written: list[Finding], derived: list[Finding]) -> list[str]:
    """The ids, in the report's order, whose statuses here are not the ones it wrote."""

    def statuses(findings: list[Finding]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for f in findings:
            out.setdefault(f.id, []).append(f.status.value)
        return {i: sorted(s) for i, s in out.items()}

    before, now = statuses(written), statuses(derived)
    return [i for i in before if before[i] != now.get(i)]
