"""The report: findings plus the snapshot they came from, the summary, and the exit code.

Every output format renders this one object; the exit code is derived from the findings by
one rule (see exit_code) and is the same whatever the format.
"""

from __future__ import annotations

import io
from collections import Counter
from datetime import datetime, timezone
from typing import Any

from msgspec import Struct, field

from gpucheck.exit_status import ExitStatus
from gpucheck.model.decoding import to_dict
from gpucheck.model.finding import PROBLEM, Finding, Status, severity
from gpucheck.model.requirements import Requirements
from gpucheck.model.snapshot import Snapshot
from gpucheck.version import __version__

# The report's own format version (the snapshot inside it carries its own): 2.0 made `fix` a
# record (text and commands) and added `subjects` to findings; 3.0 made the fix ordered steps
# (model/fix.py), each with its command, tool, package changes, GPUs and layer, and added
# summary.requirements (what the job asked, judged again by fleet --recheck); 3.1 lets
# summary.exit_code be 5 (dockerfile's "could not tell", where the host driver is unknown);
# 4.0 renamed check ids so each begins with its layer's name (checks/renamed.py: 3.x reports
# are read with their ids mapped) and made a finding's section and a step's layer one enum.
# 4.1: the network layer (section "network", its checks), snapshot 1.5, explain's Xid checks.
# 4.2: snapshot 1.6 (installed kernel libraries' compiled code; /proc visibility).
REPORT_SCHEMA_VERSION = "4.2"


def exit_code(findings: list[Finding], strict: bool = False) -> int:
    """By the worst finding (model.finding.SEVERITY): error 3, fail 1 (warn too with
    --strict), else 0; and 1 for a report that judged nothing."""
    worst = max((severity(f.status) for f in findings), default=-1)
    if worst >= severity(Status.ERROR):
        return ExitStatus.INTERNAL
    if worst >= severity(Status.WARN if strict else Status.FAIL):
        return ExitStatus.FAILED
    if not_judged(findings):
        return ExitStatus.FAILED  # a gate that judged nothing must not say ready
    return ExitStatus.OK


def not_judged(findings: list[Finding]) -> str | None:
    """Why the report judged nothing (no finding, or every one skipped), or None."""
    if not findings:
        return "no check applied: nothing was judged"
    if all(f.status is Status.SKIP for f in findings):
        return f"every check skipped ({len(findings)}): nothing was judged"
    return None


class Report(Struct):
    snapshot: Snapshot
    findings: list[Finding]
    strict: bool = False
    from_file: str | None = None  # set when diagnosing a saved snapshot (doctor --from)
    # What the job asked (--min-gpus ...): written with the report, so a later recheck judges
    # the same requirements.
    requirements: Requirements = field(default_factory=Requirements)
    # Set by a command whose question rests on a fact the snapshot lacks (dockerfile: the host
    # driver): with nothing failed, the answer is "could not tell" (exit 5), not ready.
    unknown: str | None = None
    created_at: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds")
    )

    @property
    def exit_code(self) -> int:
        code = exit_code(self.findings, self.strict)
        if self.unknown is None or code == ExitStatus.INTERNAL:
            return code
        # A failure stands whatever the unknown fact; "judged nothing" becomes could not tell.
        failed = code == ExitStatus.FAILED and not_judged(self.findings) is None
        return code if failed else ExitStatus.UNKNOWN

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(f.status.value for f in self.findings)
        return {s.value: c.get(s.value, 0) for s in Status}

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.status in PROBLEM]

    @property
    def ready(self) -> bool:
        return self.exit_code == ExitStatus.OK

    def __repr__(self) -> str:
        # The generated repr would print the whole snapshot; a REPL wants the verdict.
        c = self.counts
        return (
            f"<Report {'ready' if self.ready else 'not ready'}: exit {self.exit_code}, "
            f"{c['fail']} failed, {c['warn']} warned, {c['pass']} passed, "
            f"{len(self.findings)} findings>"
        )

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter and Colab show the HTML report (the body of `doctor --format html`)."""
        # Imported here, for a notebook alone: the start-up benchmark's `doctor --from --json`
        # row (benchmarks/startup.py) has no room for the text and HTML renderers.
        from gpucheck.report.html import fragment, report_body
        from gpucheck.report.text import render_plain

        plain = io.StringIO()
        render_plain(self, plain, False)
        return {"text/plain": plain.getvalue(), "text/html": fragment(report_body(self))}

    @property
    def not_ready_reason(self) -> str | None:
        """Why a report without failures is still not ready (it judged nothing, or could not
        tell)."""
        if self.exit_code == ExitStatus.UNKNOWN:
            return self.unknown
        return None if self.counts["fail"] or self.counts["error"] else not_judged(self.findings)

    def to_dict(self) -> dict[str, Any]:
        sysf = self.snapshot.system
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "tool": {"name": "gpucheck", "version": __version__},
            "created_at": self.created_at,
            "host": {
                "hostname": sysf.hostname,
                "os": sysf.os,
                "os_release": sysf.os_release,
                "kernel": sysf.kernel,
                "arch": sysf.arch,
            },
            "summary": {
                "ready": self.ready,
                "exit_code": self.exit_code,
                "strict": self.strict,
                "problems": len(self.problems),
                "counts": self.counts,
                "reason": self.not_ready_reason,
                "requirements": to_dict(self.requirements),
            },
            "findings": [to_dict(f) for f in self.findings],
            "snapshot": self.snapshot.to_dict(),
        }
