"""Where `gpucheck fix`'s plan comes from, for the command line and Python alike: a saved plan
(trusted input, like a script: its commands are printed and run as written), a saved snapshot
or report (its snapshot judged here, the report's selection and requirements kept: never its
written commands), an explain answer (its quoted lines matched again: never its written fixes),
or this machine probed; and the doctor again after --apply. Bad input raises
UserError (exit 2)."""

from __future__ import annotations

from pathlib import Path

from msgspec import Struct

from gpucheck.fixplan import diagnose, plan_for
from gpucheck.fixplan.apply import recheck_lines
from gpucheck.fixplan.from_explain import plan_from_explanation, read_explanation
from gpucheck.fixplan.from_report import plan_from_report, read_report
from gpucheck.fixplan.plan import Plan
from gpucheck.fixplan.render import loads_plan
from gpucheck.inputs import UserError, load_compat, probe_here, read_input
from gpucheck.model.finding import PROBLEM
from gpucheck.model.snapshot import SNAPSHOT_LIMIT, SnapshotError, loads

INPUT_LIMIT = 64 << 20  # bytes of a saved plan


class PlanRequest(Struct, frozen=True, kw_only=True):
    from_file: str | None = None  # a snapshot, doctor --json report or explain --json ("-": stdin)
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
    if from_file is None:
        snapshot = probe_here(request.timeout, python)
        return plan_for(snapshot, diagnose(snapshot, load_compat(list(request.compat_dirs))), None)
    if python is not None:
        raise UserError("--from plans from a saved snapshot; --python probes this machine")
    # Read once (stdin too): the snapshot, and what the report's run decided if it is a report;
    # or an explain answer, planned from its quoted lines (from_explain.py).
    data = read_input(from_file, SNAPSHOT_LIMIT, "is too large to be a snapshot (over 64 MiB)")
    try:
        explained = read_explanation(data)
        if explained is not None:
            compat = load_compat(list(request.compat_dirs))
            return plan_from_explanation(explained, compat, from_file)
        snapshot = loads(data)
        written = read_report(data)
    except (SnapshotError, ValueError) as exc:
        raise UserError(f"--from: {from_file}: {exc}") from None
    compat = load_compat(list(request.compat_dirs))
    if written is not None:
        return plan_from_report(snapshot, written, compat, from_file)
    return plan_for(snapshot, diagnose(snapshot, compat), from_file)


def recheck(plan: Plan, python: str, timeout: float, folder: Path) -> list[str]:
    """The doctor again on `python`'s environment after --apply recorded in `folder`: what it
    says of the plan's findings (recheck_lines)."""
    snapshot = probe_here(timeout, python)
    now = {f.id for f in diagnose(snapshot, load_compat(None)) if f.status in PROBLEM}
    return recheck_lines(plan, now, folder)
