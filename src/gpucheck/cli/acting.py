"""What the commands that change an environment share (`fix --apply`/`--undo`, `install
--apply`): their options, the question asked before acting, and the folder that records what
they did (`gpucheck fix --undo FOLDER` restores it)."""

# No `from __future__ import annotations`: typer reads the options' annotations on every run
# (as in common.py).

import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from gpucheck.inputs import UserError
from gpucheck.report.text import printable

# Acting prints its plan and what it did for a person: a machine-readable copy is refused.
APPLY_IS_TEXT = "--apply prints its plan and what it did as text: drop --json/-o"


def apply_option(about: str) -> Any:
    """--apply (`about`: what it runs), after a confirmation or --yes."""
    return typer.Option("--apply", help=about)


YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Apply without asking.")]
RecordOpt = Annotated[
    str | None,
    typer.Option(
        "--record", metavar="DIR", help="Where --apply keeps its record (default: new folder)."
    ),
]
UndoOpt = Annotated[
    str | None,
    typer.Option("--undo", metavar="RECORD", help="Restore what an --apply recorded."),
]


def confirmed(flag: str, question: str, yes: bool) -> bool:
    """Whether to go on: --yes, or the person's yes on a terminal (without one, a UserError
    that names `flag`); "Nothing was changed." is said when they decline."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise UserError(f"{flag} asks before changing anything: answer on a terminal, or --yes")
    if typer.confirm(printable(question), default=False):
        return True
    print("Nothing was changed.")
    return False


def record_folder(record: str | None, command: str) -> Path:
    """--record's folder, else a new one named for `command` and the time; a UserError where
    a record cannot be kept there."""
    from gpucheck.fixplan.apply import record_refused

    folder = Path(record or datetime.now().strftime(f"gpucheck-{command}-%Y%m%d-%H%M%S"))
    refused = record_refused(folder)
    if refused is not None:
        raise UserError(refused)
    return folder
