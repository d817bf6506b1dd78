"""The plan as text for a person, as a page to forward (HTML), as a script for the machine's
own shell (POSIX sh, or PowerShell for a Windows machine's plan: a comment per step; what a
person must do stays a comment), and as JSON (with its schema)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, Any

import msgspec

from gpucheck.fixplan.plan import PLAN_SCHEMA_VERSION, Plan, PlanStep, installer_commands
from gpucheck.model.decoding import to_dict
from gpucheck.model.fix import Change, StepKind
from gpucheck.model.plural import counted, plural
from gpucheck.model.shell import powershell_hazard, sh_hazard
from gpucheck.report.html import code_block, page, table, text
from gpucheck.report.output_format import Format, FunctionFormat, format_table
from gpucheck.report.text import printable


def change_text(c: Change) -> str:
    if c.remove:
        return f"{c.name} {c.from_version or ''} -> removed".replace("  ", " ")
    to = c.to_version or c.requirement or "the installer's choice"
    return f"{c.name} {c.from_version or 'not installed'} -> {to}"


def _label(step: PlanStep) -> str:
    """What the step changes: its layer; "info" for one that changes nothing (a re-check)."""
    return "info" if step.kind is StepKind.INFO else step.layer.value


def _where(plan: Plan) -> str:
    name = plan.host.hostname or "this machine"
    return f"from {plan.host.from_file}, host {name}" if plan.host.from_file else f"host {name}"


def render_text(plan: Plan, out: IO[str], dry_run: bool = True) -> None:
    """The plan for a person: every line through printable(), so a host name, a path or a
    version from a snapshot shows its control characters escaped and never ends a line."""
    out.write("".join(printable(line) + "\n" for line in text_lines(plan, dry_run)))


def text_lines(plan: Plan, dry_run: bool = True) -> list[str]:
    """The text report's lines, as built (not yet escaped: render_text escapes each)."""
    planned = [f for f in plan.findings if f.not_planned is None]
    problems = len(planned)
    if not plan.steps and not plan.conflicts:
        fixless = [f.id for f in planned]
        tail = f" ({problems} without a fix: {', '.join(fixless)})" if fixless else ""
        head = f"gpucheck fix: nothing to do ({_where(plan)}){tail}"
        return [head, *plan.notes, *_not_planned_lines(plan)]
    local = len(plan.local_steps)
    lines = [
        f"gpucheck fix: {counted(len(plan.steps), 'step')} for {counted(problems, 'problem')} "
        f"({_where(plan)}); {local} can be applied here (--apply), "
        f"{len(plan.steps) - local} {plural(len(plan.steps) - local, 'is', 'are')} yours to do",
        *plan.notes,
    ]
    for step in plan.steps:
        lines += _step_lines(step)
    for conflict in plan.conflicts:
        lines += ["", f"conflict: {conflict.package} (not planned: choose one)"]
        lines += [f"    {want}" for want in conflict.wants]
    unfixed = [f.id for f in planned if not f.fixed_by]
    if unfixed:
        lines += ["", f"no step for: {', '.join(unfixed)}"]
    lines += _not_planned_lines(plan)
    if dry_run:
        lines += ["", "Nothing was changed (a dry run)."]
    return lines


def _not_planned_lines(plan: Plan) -> list[str]:
    """The findings listed but not planned, one line per reason (ids only: never their text)."""
    reasons: dict[str, list[str]] = {}
    for f in plan.findings:
        if f.not_planned is not None:
            reasons.setdefault(f.not_planned, []).append(f.id)
    return [f"not planned ({why}): {', '.join(ids)}" for why, ids in reasons.items()]


def _step_lines(step: PlanStep) -> list[str]:
    how = "apply runs it" if step.local else f"printed only: {step.why_not_local}"
    lines = ["", f"{step.number:>2}. [{_label(step)}] {step.text or step.kind.value}"]
    if step.command:
        lines.append(f"    $ {step.command}")
    lines += [f"    changes {change_text(c)}" for c in step.changes]
    if step.environment:
        lines.append(f"    in {step.environment}")
    lines.append(f"    fixes {', '.join(step.findings)}; {how}")
    return lines


def render_sh(plan: Plan, out: IO[str], saved: bool = False) -> None:
    """The plan as a POSIX sh script. A command is written as the fix built it (every value in
    it one quoted word); everything else is a comment, through comment(), so no value ends it.
    A command its quoting could not have built (sh_hazard) is a comment, and so is, in a plan
    read from a file (`saved`), any command but a local installer step (written_from_file)."""
    out.write("#!/bin/sh\n")
    out.write(f"# gpucheck fix plan ({comment(_where(plan))}, {comment(plan.created_at)}): ")
    out.write("read before running.\n")
    out.write("# Steps a command cannot do are comments; run the rest in this order.\n")
    out.write("set -e\n")
    _script_body(plan, out, lambda command: f"{command}\n", sh_hazard, saved)


def render_ps1(plan: Plan, out: IO[str], saved: bool = False) -> None:
    """The plan of a Windows machine as a PowerShell script: its commands were built with
    PowerShell's quoting (model/shell.py); each one's exit status stops the script, as `set -e`
    does in sh (PowerShell's Stop preference covers cmdlets, not native programs). A command
    that quoting could not have built (powershell_hazard) is a comment; `saved` as render_sh."""
    out.write(f"# gpucheck fix plan ({comment(_where(plan))}, {comment(plan.created_at)}): ")
    out.write("read before running.\n")
    out.write("# Steps a command cannot do are comments; run the rest in this order.\n")
    out.write("#Requires -Version 7.0\n")  # its commands may join two with &&
    out.write("$ErrorActionPreference = 'Stop'\n")
    _script_body(
        plan,
        out,
        lambda command: f"{command}\nif ($LASTEXITCODE) {{ exit $LASTEXITCODE }}\n",
        powershell_hazard,
        saved,
    )


def script_refusal(plan: Plan, name: str) -> str | None:
    """Why the script format `name` cannot carry this plan's commands (they were built for the
    other shell), or None where it can: a script must run in the shell its commands are for."""
    windows = plan.host.os == "Windows"
    if name == "sh" and windows:
        return "this plan is of a Windows machine, whose commands are PowerShell's: use ps1"
    if name == "ps1" and not windows:
        return "this plan's commands are POSIX shell commands: use sh"
    return None


def written_from_file(step: PlanStep) -> str | None:
    """Why a saved plan's step is no command of its script, or None where it is a local
    installer step (pip, uv or conda in the Python environment, by its own words): a plan
    file's other commands (sudo, a driver, a reboot's) are a person's to read and run."""
    if step.command is None or (step.local and installer_commands(step.command) is not None):
        return None
    return "from a saved plan (--plan), not a local installer step: read it, then run it yourself"


def _script_body(
    plan: Plan,
    out: IO[str],
    command_lines: Callable[[str], str],
    hazard: Callable[[str], str | None],
    saved: bool,
) -> None:
    """What both scripts hold: the notes, each step as comments and its command, the conflicts
    and what was not planned. `#` starts a comment line in sh and in PowerShell alike."""
    for note in plan.notes:
        out.write(f"# {comment(note)}\n")
    for step in plan.steps:
        out.write(f"\n# {step.number}. [{_label(step)}] {comment(step.text)}\n")
        out.write(f"#    fixes {comment(', '.join(step.findings))}\n")
        for c in step.changes:
            out.write(f"#    changes {comment(change_text(c))}\n")
        if step.environment:  # the command's bare pip is that interpreter's, not PATH's
            out.write(f"#    in {comment(step.environment)}\n")
        if step.command:
            if not step.local:
                out.write(f"#    {comment(step.why_not_local or '')}\n")
            unsafe = hazard(step.command)
            if unsafe:
                withheld: str | None = (
                    f"not written as a command: it holds {unsafe}, which its quoting never makes"
                )
            else:
                withheld = written_from_file(step) if saved else None
            if withheld:
                out.write(f"#    {comment(withheld)}\n#    {comment(step.command)}\n")
            else:
                out.write(command_lines(step.command))
        else:
            out.write(f"#    ({step.kind.value}: {comment(step.why_not_local or '')})\n")
    for conflict in plan.conflicts:
        out.write(f"\n# conflict, not planned: {comment(conflict.package)}: choose one of\n")
        for want in conflict.wants:
            out.write(f"#    {comment(want)}\n")
    for line in _not_planned_lines(plan):
        out.write(f"\n# {comment(line)}\n")


def comment(text: str) -> str:
    """`text` as the rest of one shell comment line: its line breaks and other control
    characters escaped (printable), its runs of white space one space. Nothing in it can end
    the comment and start a command."""
    return " ".join(printable(text).split())


def plan_dict(plan: Plan) -> dict[str, Any]:
    return to_dict(plan)  # type: ignore[no-any-return]


def render_json(plan: Plan, out: IO[str]) -> None:
    out.write(json.dumps(plan_dict(plan), indent=2) + "\n")


def _html_step(step: PlanStep) -> str:
    layer = "info" if step.kind is StepKind.INFO else step.layer.value
    how = "gpucheck fix --apply runs it" if step.local else f"printed only: {step.why_not_local}"
    parts = [
        f'<li><div class="finding"><span class="kind">[{text(layer)}]</span> '
        f"<h3>{text(step.text or step.kind.value)}</h3>"
    ]
    if step.command:
        parts.append(code_block(step.command))
    details = [f"changes {change_text(c)}" for c in step.changes]
    if step.environment:
        details.append(f"in {step.environment}")
    details.append(f"fixes {', '.join(step.findings)}; {how}")
    parts.append('<ul class="evidence">' + "".join(f"<li>{text(d)}</li>" for d in details))
    parts.append("</ul></div></li>")
    return "".join(parts)


def render_html(plan: Plan, out: IO[str]) -> None:
    """The plan as a page to forward: the steps in order, each command in a copyable block,
    what it changes, the findings it repairs, and whether --apply runs it or a person must."""
    head, *_ = text_lines(plan, dry_run=True)  # the text plan's first line says it all
    host = plan.host.hostname or "this machine"
    body = [f"<header><h1>{text(head)}</h1>"]
    body += [f'<p class="muted">{text(note)}</p>' for note in plan.notes]
    body.append(f'<p class="muted">made {text(plan.created_at)}</p></header>')
    if plan.steps:
        body.append('<section><h2 id="steps">Steps, in order</h2><ol>')
        body += [_html_step(s) for s in plan.steps]
        body.append("</ol></section>")
    if plan.conflicts:
        body.append('<section><h2 id="conflicts">Conflicts (not planned: choose one)</h2>')
        for conflict in plan.conflicts:
            body.append(f"<h3>{text(conflict.package)}</h3>")
            body += [code_block(want) for want in conflict.wants]
        body.append("</section>")
    if plan.findings:
        rows = [
            (
                f.id,
                f.status,
                f.title,
                ", ".join(map(str, f.fixed_by))
                or (f"not planned: {f.not_planned}" if f.not_planned else "no step"),
            )
            for f in plan.findings
        ]
        body.append('<section><h2 id="findings">The problems</h2>')
        body.append(table(("check", "status", "finding", "fixed by step"), rows))
        body.append("</section>")
    body.append("<p>Nothing was changed: this page is the plan, not its run.</p>")
    out.write(page(f"gpucheck fix: {host}", "\n".join(body)))


# The plan's formats, by the name `fix --format` takes; text is the default. (Its JSON stays
# json.dumps', non-ASCII escaped, not write_json's: the bytes plans have always had.)
FORMATS: dict[str, Format[Plan]] = format_table(
    FunctionFormat("text", render_text),
    FunctionFormat("json", render_json),
    FunctionFormat("sh", render_sh),
    FunctionFormat("ps1", render_ps1),
    FunctionFormat("html", render_html),
)
# The same for a plan read from a file (fix --plan): its scripts write only local installer
# steps as commands (written_from_file).
SAVED_PLAN_FORMATS: dict[str, Format[Plan]] = {
    **FORMATS,
    "sh": FunctionFormat("sh", lambda plan, out: render_sh(plan, out, saved=True)),
    "ps1": FunctionFormat("ps1", lambda plan, out: render_ps1(plan, out, saved=True)),
}


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
