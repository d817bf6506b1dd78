"""The plan as text for a person, as a POSIX shell script (`set -e`, a comment per step; what a
person must do stays a comment), and as JSON (with its schema)."""

from __future__ import annotations

import json
from typing import IO, Any

import msgspec

from gpucheck.fixplan.plan import PLAN_SCHEMA_VERSION, Plan, PlanStep
from gpucheck.model.decoding import to_dict
from gpucheck.model.fix import Change, StepKind
from gpucheck.report.output_format import Format, FunctionFormat, format_table


def change_text(c: Change) -> str:
    if c.remove:
        return f"{c.name} {c.from_version or ''} -> removed".replace("  ", " ")
    to = c.to_version or c.requirement or "the installer's choice"
    return f"{c.name} {c.from_version or 'not installed'} -> {to}"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _label(step: PlanStep) -> str:
    """What the step changes: its layer; "info" for one that changes nothing (a re-check)."""
    return "info" if step.kind is StepKind.INFO else step.layer.value


def _where(plan: Plan) -> str:
    name = plan.host.hostname or "this machine"
    return f"from {plan.host.from_file}, host {name}" if plan.host.from_file else f"host {name}"


def render_text(plan: Plan, out: IO[str], dry_run: bool = True) -> None:
    problems = len(plan.findings)
    if not plan.steps and not plan.conflicts:
        fixless = [f.id for f in plan.findings]
        tail = f" ({problems} without a fix: {', '.join(fixless)})" if fixless else ""
        out.write(f"gpucheck fix: nothing to do ({_where(plan)}){tail}\n")
        return
    local = len(plan.local_steps)
    out.write(
        f"gpucheck fix: {_n(len(plan.steps), 'step')} for {_n(problems, 'problem')} "
        f"({_where(plan)}); {local} can be applied here (--apply), "
        f"{len(plan.steps) - local} are yours to do\n"
    )
    for step in plan.steps:
        _step_text(step, out)
    for conflict in plan.conflicts:
        out.write(f"\nconflict: {conflict.package} (not planned: choose one)\n")
        for want in conflict.wants:
            out.write(f"    {want}\n")
    unfixed = [f.id for f in plan.findings if not f.fixed_by]
    if unfixed:
        out.write(f"\nno step for: {', '.join(unfixed)}\n")
    if dry_run:
        out.write("\nNothing was changed (a dry run).\n")


def _step_text(step: PlanStep, out: IO[str]) -> None:
    how = "apply runs it" if step.local else f"printed only: {step.why_not_local}"
    out.write(f"\n{step.number:>2}. [{_label(step)}] {step.text or step.kind.value}\n")
    if step.command:
        out.write(f"    $ {step.command}\n")
    for c in step.changes:
        out.write(f"    changes {change_text(c)}\n")
    if step.environment:
        out.write(f"    in {step.environment}\n")
    out.write(f"    fixes {', '.join(step.findings)}; {how}\n")


def render_sh(plan: Plan, out: IO[str]) -> None:
    out.write("#!/bin/sh\n")
    out.write(f"# gpucheck fix plan ({_where(plan)}, {plan.created_at}): read before running.\n")
    out.write("# Steps a command cannot do are comments; run the rest in this order.\n")
    out.write("set -e\n")
    for step in plan.steps:
        out.write(f"\n# {step.number}. [{_label(step)}] {_one_line(step.text)}\n")
        out.write(f"#    fixes {', '.join(step.findings)}\n")
        for c in step.changes:
            out.write(f"#    changes {change_text(c)}\n")
        if step.command:
            if not step.local:
                out.write(f"#    {step.why_not_local}\n")
            out.write(f"{step.command}\n")
        else:
            out.write(f"#    ({step.kind.value}: {step.why_not_local})\n")
    for conflict in plan.conflicts:
        out.write(f"\n# conflict, not planned: {conflict.package}: choose one of\n")
        for want in conflict.wants:
            out.write(f"#    {_one_line(want)}\n")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def plan_dict(plan: Plan) -> dict[str, Any]:
    return to_dict(plan)  # type: ignore[no-any-return]


def render_json(plan: Plan, out: IO[str]) -> None:
    out.write(json.dumps(plan_dict(plan), indent=2) + "\n")


# The plan's formats, by the name `fix --format` takes; text is the default. (Its JSON stays
# json.dumps', non-ASCII escaped, not write_json's: the bytes plans have always had.)
FORMATS: dict[str, Format[Plan]] = format_table(
    FunctionFormat("text", render_text),
    FunctionFormat("json", render_json),
    FunctionFormat("sh", render_sh),
)


def plan_schema() -> dict[str, Any]:
    from gpucheck.model.json_schema import components, document, version_property

    (ref,), defs = components([Plan])
    plan_def = defs["Plan"]
    plan_def["properties"]["plan_schema_version"] = version_property(
        PLAN_SCHEMA_VERSION, "plan schema"
    )
    plan_def["properties"]["kind"] = {"const": "gpucheck-fix-plan"}
    return document(
        "fix-plan",
        PLAN_SCHEMA_VERSION,
        "gpucheck fix plan",
        "`gpucheck fix --json`: the doctor's fixes as one ordered plan.",
        {**ref, "$defs": defs},
    )


def loads_plan(data: bytes) -> Plan:
    """A plan file; raises ValueError (one line) for anything that is not one of ours."""
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise ValueError("not JSON: not a gpucheck fix plan") from None
    if not isinstance(raw, dict) or raw.get("kind") != "gpucheck-fix-plan":
        raise ValueError('not a gpucheck fix plan (no "kind": "gpucheck-fix-plan")')
    version = str(raw.get("plan_schema_version", ""))
    if version.split(".")[0] != PLAN_SCHEMA_VERSION.split(".")[0]:
        raise ValueError(f"plan schema {version!r}: this gpucheck reads {PLAN_SCHEMA_VERSION}")
    try:
        return msgspec.convert(raw, Plan)
    except msgspec.ValidationError as exc:
        raise ValueError(f"not a valid plan: {exc}") from None
