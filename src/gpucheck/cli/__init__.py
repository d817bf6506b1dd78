"""The `gpucheck` command line: one module per command, each parsing its options and calling
the library. Only typer is imported at start-up; each command imports what it uses.

Errors are one line on stderr and a documented exit code (report/exit_codes.py): 2 for bad
input, 3 when gpucheck itself broke. A traceback is shown only with GPUCHECK_DEBUG=1.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, NoReturn

import typer

from gpucheck import __version__
from gpucheck.cli.checks import list_checks
from gpucheck.cli.common import UserError
from gpucheck.cli.compat import compat_app
from gpucheck.cli.doctor import doctor
from gpucheck.cli.procs import procs
from gpucheck.cli.schema import schema
from gpucheck.cli.snapshot import snapshot
from gpucheck.cli.watch import watch
from gpucheck.report.exit_codes import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE

app = typer.Typer(
    name="gpucheck",
    help="Is this machine ready to run deep learning on its NVIDIA GPUs? If not, what to change.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.command()(doctor)
app.command()(snapshot)
app.add_typer(compat_app, name="compat")
app.command()(schema)
app.command(name="checks")(list_checks)
app.command()(procs)
app.command()(watch)
COMMANDS = ("doctor", "snapshot", "compat", "schema", "checks", "procs", "watch")


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"gpucheck {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """gpucheck: is this machine ready for deep learning on NVIDIA GPUs?"""


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"gpucheck: {message}\n")
    sys.exit(code)


def main() -> None:
    command = typer.main.get_command(app)
    try:
        code = command.main(args=sys.argv[1:], prog_name="gpucheck", standalone_mode=False)
    except UserError as exc:
        _fail(str(exc), EXIT_USAGE)
    except (typer.Exit, SystemExit) as exc:
        sys.exit(exc.exit_code if isinstance(exc, typer.Exit) else exc.code)
    except (typer.Abort, KeyboardInterrupt):
        _fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader went away before the report was written (gpucheck checks | head).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except Exception as exc:
        # Typer's parser errors (click's, vendored in newer typer) carry their own message and
        # exit code; matched by shape so that no private module is imported.
        if type(exc).__name__ == "NoArgsIsHelpError":
            ctx = getattr(exc, "ctx", None)
            sys.stdout.write((ctx.get_help() if ctx else str(exc)) + "\n")
            sys.exit(EXIT_USAGE)
        code = getattr(exc, "exit_code", None)
        if hasattr(exc, "format_message") and isinstance(code, int):
            hint = f" (see: gpucheck {_subcommand()}--help)" if code == EXIT_USAGE else ""
            _fail(f"{exc.format_message()}{hint}", code or EXIT_USAGE)
        if os.environ.get("GPUCHECK_DEBUG"):
            raise
        _fail(
            f"internal error: {type(exc).__name__}: {exc} (a gpucheck bug; GPUCHECK_DEBUG=1 shows "
            "the traceback)",
            EXIT_INTERNAL,
        )
    sys.exit(code if isinstance(code, int) else 0)


def _subcommand() -> str:
    sub = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    return f"{sub} " if sub in COMMANDS else ""
