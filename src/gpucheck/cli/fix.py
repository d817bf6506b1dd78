"""`gpucheck fix`: the doctor's fixes as one plan; a dry run unless --apply (local steps only,
confirmed, recorded for --undo)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpucheck.cli import acting
from gpucheck.cli.common import (
    CompatDirOpt,
    JsonOpt,
    OutputOpt,
    PythonOpt,
    TimeoutOpt,
    UserError,
    choose_format,
    format_option,
    from_option,
    one_python,
    python_inputs,
    refuse_input_as_output,
    write_output,
)
from gpucheck.exit_status import ExitStatus
from gpucheck.fixplan import other_machine
from gpucheck.fixplan.apply import (
    ApplyError,
    RecordError,
    apply_plan,
    read_record,
)
from gpucheck.fixplan.apply import undo as undo_journal
from gpucheck.fixplan.making import PlanRequest, make_plan, recheck
from gpucheck.fixplan.render import FORMATS, SAVED_PLAN_FORMATS, render_text, script_refusal
from gpucheck.model.plural import counted
from gpucheck.report.text import printable

if TYPE_CHECKING:
    from gpucheck.fixplan.plan import Plan


# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "planned (or applied, or undone)",
    ExitStatus.FAILED: "the plan has conflicts or a step failed",
}


def fix(
    from_file: Annotated[
        str | None,
        from_option("Plan from a saved report, snapshot or explain --json answer (- for stdin)."),
    ] = None,
    plan_file: Annotated[
        str | None,
        typer.Option(
            "--plan",
            metavar="PLAN",
            help="Use a saved plan (fix --json -o PLAN): trusted like a script, its commands "
            "run as written.",
        ),
    ] = None,
    json_out: JsonOpt = False,
    fmt: Annotated[str, format_option("text, json, sh, ps1 or html.")] = "text",
    output: OutputOpt = None,
    apply: Annotated[
        bool,
        acting.apply_option(
            "Run the steps local to the Python environment (pip/uv/conda, env file), after a "
            "confirmation."
        ),
    ] = False,
    yes: acting.YesOpt = False,
    record: acting.RecordOpt = None,
    undo: acting.UndoOpt = None,
    pythons: PythonOpt = None,
    timeout: TimeoutOpt = 15.0,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Turn the doctor's fixes into one ordered plan; print it (text, json, sh), or --apply it."""
    python = one_python(pythons)

    try:
        if undo is not None:
            # --undo restores what a record says; any option about a plan would be ignored.
            ignored = [
                flag
                for flag, given in (
                    ("--apply", apply),
                    ("--from", from_file is not None),
                    ("--plan", plan_file is not None),
                    ("--json", json_out),
                    ("--format", fmt != "text"),
                    ("--output", output is not None),
                    ("--record", record is not None),
                    ("--python", python is not None),
                    ("--timeout", timeout != 15.0),
                    ("--compat-dir", compat_dir is not None),
                )
                if given
            ]
            if ignored:
                raise UserError(f"--undo restores a record alone: drop {', '.join(ignored)}")
            _undo(undo, yes)
            return
        formats = SAVED_PLAN_FORMATS if plan_file is not None else FORMATS
        chosen = choose_format(formats, fmt, json_out)
        if from_file is not None and plan_file is not None:
            raise UserError("--from and --plan: give one")
        if apply and (chosen.name != "text" or output is not None):
            raise UserError(acting.APPLY_IS_TEXT)
        refuse_input_as_output(output, [from_file, plan_file, *python_inputs(python)])
        plan = make_plan(
            PlanRequest(
                from_file=from_file,
                plan_file=plan_file,
                python=python,
                timeout=timeout,
                compat_dirs=tuple(compat_dir or ()),
            )
        )
        refusal = script_refusal(plan, chosen.name)
        if refusal is not None:
            raise UserError(f"--format {chosen.name}: {refusal}")
        if not apply:
            write_output(output, lambda stream: chosen.write(plan, stream))
            raise typer.Exit(ExitStatus.FAILED if plan.conflicts else ExitStatus.OK)
        _apply(plan, yes, record, python, timeout)
    except RecordError as exc:
        raise UserError(str(exc)) from None
    except ApplyError as exc:
        print(f"gpucheck: {printable(str(exc))}", file=sys.stderr)
        raise typer.Exit(ExitStatus.FAILED) from None


def _print(text: str) -> None:
    """A line of what --apply or --undo did: paths and names in it escaped (printable)."""
    print(printable(text))


def _say(text: str) -> None:
    print(printable(text), file=sys.stderr, flush=True)


def _apply(plan: Plan, yes: bool, record: str | None, python: str | None, timeout: float) -> None:
    elsewhere = other_machine(plan)
    if elsewhere is not None:
        raise UserError(f"--apply: {elsewhere}: make the plan on the machine it changes")
    render_text(plan, sys.stdout, dry_run=False)
    local = plan.local_steps
    if not local:
        print("Nothing to apply here: every step is yours to do (see above).")
        return
    if not acting.confirmed("--apply", f"Apply the {counted(len(local), 'local step')} now?", yes):
        return
    folder = acting.record_folder(record, "fix")
    default_python = python or (plan.environments[0] if plan.environments else sys.executable)
    journal = apply_plan(plan, folder, default_python, _say)
    applied = counted(len(journal.steps), "step")
    _print(f"Applied {applied} (record: {folder}; undo: gpucheck fix --undo {folder})")
    _recheck(plan, default_python, timeout, folder)


def _recheck(plan: Plan, python: str, timeout: float, folder: Path) -> None:
    """The doctor again, on the same interpreter: which of the plan's findings are gone."""
    for line in recheck(plan, python, timeout, folder):
        _print(line)


def _undo(path: str, yes: bool) -> None:
    folder, _, journal = read_record(path)
    envs = ", ".join(journal.environments) or "no environment"
    if not acting.confirmed("--undo", f"Restore {envs} as recorded in {folder}?", yes):
        return
    undo_journal(path, _say)
    _print(f"Undone: every environment is as {folder} recorded it.")
