"""`gpucheck fix`: the doctor's typed fixes as one ordered plan (plan.py), printed (render.py)
and, where a step changes only the probed Python environment, applied with a record that
`--undo` reverses (apply.py)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from gpucheck.fixplan.plan import Plan, PlanHost, build_plan

if TYPE_CHECKING:
    from gpucheck.compat import Compat
    from gpucheck.model.finding import Finding
    from gpucheck.model.requirements import Requirements
    from gpucheck.model.snapshot import Snapshot


def diagnose(
    snapshot: Snapshot, compat: Compat, requirements: Requirements | None = None
) -> list[Finding]:
    """The doctor's findings on a snapshot (every check), judged against `requirements` (what
    a job asked: none by default)."""
    import gpucheck.checks  # noqa: F401  (registers every check)
    from gpucheck.checks.context import Context
    from gpucheck.checks.registry import run, select
    from gpucheck.model.requirements import Requirements

    return run(Context(snapshot, requirements or Requirements(), compat), select([], []))


def report_findings(data: bytes) -> list[Finding] | None:
    """A `doctor --json` report's own findings (report schema 3.x or 4.x; 3.x's check ids read
    as 4.0 names them), as the report wrote them; None for a snapshot or another major. Read
    to know what the report's run decided (its selection, its verdicts), never to plan from:
    a plan's commands are built from the snapshot (from_report.py)."""
    import json

    import msgspec
    from msgspec.structs import replace

    from gpucheck.checks.renamed import current_id
    from gpucheck.model.finding import Finding

    try:
        raw = json.loads(data.removeprefix(b"\xef\xbb\xbf"))
    except ValueError:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("findings"), list):
        return None
    if str(raw.get("schema_version", "")).split(".")[0] not in ("3", "4"):
        return None
    try:
        findings = msgspec.convert(raw["findings"], list[Finding])
    except msgspec.ValidationError:
        return None
    return [replace(f, id=current_id(f.id)) for f in findings]


def plan_for(snapshot: Snapshot, findings: list[Finding], from_file: str | None) -> Plan:
    host = snapshot.system.host
    plan_host = PlanHost(
        snapshot.system.hostname,
        host.host_id,
        host.host_id_source,
        from_file=from_file,
        os=snapshot.system.os or None,
    )
    envs = [e.python for e in snapshot.environments]
    return build_plan(findings, plan_host, envs)


def other_machine(plan: Plan) -> str | None:
    """Why the plan is not of this machine, or None where it is (by the machine-id hash the
    snapshot recorded; by host name where it recorded none, or a chosen --host-id)."""
    from gpucheck.probes.host import probe_host

    here_name = socket.gethostname()
    if plan.host.host_id and plan.host.host_id_source == "machine-id":
        here = probe_host(Path(os.environ.get("GPUCHECK_ROOT", "/")), here_name)
        if here.host_id != plan.host.host_id:
            return f"the plan is of host {plan.host.hostname or plan.host.host_id}, not this one"
        return None
    if plan.host.hostname and plan.host.hostname != here_name:
        return f"the plan is of host {plan.host.hostname}, not this one ({here_name})"
    return None
