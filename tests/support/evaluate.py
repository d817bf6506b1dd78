"""The one way the check tests evaluate a snapshot: every registered check runs, and any warn
or fail without a fix is an error at once, so that every fixture of every test is held to it."""

from __future__ import annotations

from gpucheck import checks
from gpucheck.checks import Requirements
from gpucheck.model.finding import Finding, Status
from gpucheck.model.snapshot import Snapshot

PROBLEMS = (Status.WARN, Status.FAIL)


def run_checks(snap: Snapshot, requirements: Requirements | None = None) -> list[Finding]:
    """Every registered check on `snap`; any warn or fail without a fix is an error at once, so
    that every fixture of every test is held to it."""
    findings = checks.run(checks.Context(snap, requirements or Requirements()))
    missing = [
        f.id for f in findings if f.status in PROBLEMS and not (f.fix.text if f.fix else "").strip()
    ]
    if missing:
        raise AssertionError(f"warn/fail findings without a fix: {missing}")
    return findings


def finding(
    snap: Snapshot, check_id: str, requirements: Requirements | None = None
) -> Finding | None:
    """The finding of one check (None when the check had nothing to say)."""
    hits = [f for f in run_checks(snap, requirements) if f.id == check_id]
    assert len(hits) <= 1, hits
    return hits[0] if hits else None


def the(snap: Snapshot, check_id: str, requirements: Requirements | None = None) -> Finding:
    """The finding of one check, which must be there."""
    found = finding(snap, check_id, requirements)
    if found is None:
        raise AssertionError(f"{check_id} produced no finding")
    return found


def text(f: Finding) -> str:
    """Title, evidence and fix of a finding as one string, for 'is this fact named' asserts."""
    return "\n".join([f.title, *f.evidence, f.fix.text if f.fix else ""])
