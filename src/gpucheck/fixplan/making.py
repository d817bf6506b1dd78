"""Where `gpucheck fix`'s plan comes from, for the command line and Python alike: a saved plan,
a saved snapshot or report (its own findings where it is a report), or this machine probed;
and the doctor again after --apply. Bad input raises UserError (exit 2)."""

from __future__ import annotations

from pathlib import Path

from msgspec import Struct

from gpucheck.fixplan import diagnose, plan_for, report_findings
from gpucheck.fixplan.apply import recheck_lines
from gpucheck.fixplan.plan import Plan
from gpucheck.fixplan.render import loads_plan
from gpucheck.inputs import UserError, load_compat, probe_here, read_input, snapshot_from
from gpucheck.model.finding import PROBLEM
from gpucheck.model.snapshot import SNAPSHOT_LIMIT

INPUT_LIMIT = 64 << 20  # bytes of a saved plan or report
TOO_LARGE = "is too large to be a snapshot (over 64 MiB)"


class PlanRequest(Struct, frozen=True, kw_only=True):
    from_file: str | None = None  # a saved snapshot or doctor --json report ("-": stdin)
    plan_file: str | None = None  # a saved plan (fix --json -o PLAN)
    python: str | None = None  # the interpreter to probe (this machine)
    timeout: float = 15.0
    compat_dirs: tuple[str, ...] = ()


def make_plan(request: PlanRequest) -> Plan:
    """The plan `request` names, or the one made from its source's findings."""
    from_file, plan_file, python = request.from_file, request.plan_file, request.python
    if plan_file is not None:
        try:
            return loads_plan(read_input(plan_file, INPUT_LIMIT, "is too large", "--plan"))
        except ValueError as exc:
            raise UserError(f"--plan: {plan_file}: {exc}") from None
    if from_file is not None:
        if python is not None:
            raise UserError("--from plans from a saved snapshot; --python probes this machine")
        # Read once, so a report piped on stdin keeps its own findings as a file does.
        data = read_input(from_file, SNAPSHOT_LIMIT, TOO_LARGE)
        snapshot = snapshot_from(data, from_file)
        written = report_findings(data)
        if written is not None:
            return plan_for(snapshot, written, from_file)
    else:
        snapshot = probe_here(request.timeout, python)
    compat = load_compat(list(request.compat_dirs))
    return plan_for(snapshot, diagnose(snapshot, compat), from_file)


def recheck(plan: Plan, python: str, timeout: float, folder: Path) -> list[str]:
    """The doctor again on `python`'s environment after --apply recorded in `folder`: what it
    says of the plan's findings (recheck_lines)."""
    snapshot = probe_here(timeout, python)
    now = {f.id for f in diagnose(snapshot, load_compat(None)) if f.status in PROBLEM}
    return recheck_lines(plan, now, folder)
