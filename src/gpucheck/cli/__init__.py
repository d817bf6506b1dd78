"""The `gpucheck` command line: one module per command, each parsing its options and calling
the library. Only typer is imported at start-up; each command imports what it uses.

Errors are one line on stderr and a documented exit code (report/exit_codes.py): 2 for bad
input, 3 when gpucheck itself broke. A traceback is shown only with GPUCHECK_DEBUG=1.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from gpucheck import __version__
from gpucheck.cli.bench import bench
from gpucheck.cli.checks import list_checks
from gpucheck.cli.common import OutputError, UserError
from gpucheck.cli.compat import compat_app
from gpucheck.cli.doctor import doctor
from gpucheck.cli.fit import fit
from gpucheck.cli.fleet import fleet
from gpucheck.cli.procs import procs
from gpucheck.cli.schema import schema
from gpucheck.cli.snapshot import snapshot
from gpucheck.cli.watch import watch
from gpucheck.report.exit_codes import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OUTPUT, EXIT_USAGE

app = typer.Typer(
    name="gpucheck",
    help="Is this machine ready to run deep learning on its NVIDIA GPUs? If not, what to change.",
    add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish, PowerShell)
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.command()(doctor)
app.command()(snapshot)
app.add_typer(compat_app, name="compat")
app.command()(schema)
app.command(name="checks")(list_checks)
app.command()(bench)
app.command()(fit)
app.command()(fleet)
app.command()(procs)
app.command()(watch)
COMMANDS = (
    "doctor",
    "snapshot",
    "compat",
    "schema",
    "checks",
    "bench",
    "fit",
    "fleet",
    "procs",
    "watch",
)


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


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"gpucheck: {message}\n")
    return code


def run(argv: list[str]) -> int:
    """Run the command line; returns the exit code (report/exit_codes.py). KeyboardInterrupt
    and a closed stdout are the entry point's (gpucheck/entry.py)."""
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="gpucheck", standalone_mode=False)
    except UserError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except OutputError as exc:
        return _fail(str(exc), EXIT_OUTPUT)
    except (typer.Exit, SystemExit) as exc:
        value = exc.exit_code if isinstance(exc, typer.Exit) else exc.code
        return value if isinstance(value, int) else EXIT_USAGE
    except KeyboardInterrupt:
        raise
    except BrokenPipeError:
        raise
    except Exception as exc:
        if type(exc).__name__ == "Abort":  # click's wrapper of a Ctrl-C at a prompt
            raise KeyboardInterrupt from None
        # Typer's parser errors (click's, vendored in newer typer) carry their own message and
        # exit code; matched by shape so that no private module is imported.
        if type(exc).__name__ == "NoArgsIsHelpError":
            ctx = getattr(exc, "ctx", None)
            sys.stdout.write((ctx.get_help() if ctx else str(exc)) + "\n")
            return EXIT_USAGE
        parse_code = getattr(exc, "exit_code", None)
        if hasattr(exc, "format_message") and isinstance(parse_code, int):
            hint = f" (see: gpucheck {_subcommand(argv)}--help)" if parse_code == 2 else ""
            return _fail(f"{exc.format_message()}{hint}", parse_code or EXIT_USAGE)
        if os.environ.get("GPUCHECK_DEBUG"):
            raise
        return _fail(
            f"internal error: {type(exc).__name__}: {exc} (a gpucheck bug; GPUCHECK_DEBUG=1 shows "
            "the traceback)",
            EXIT_INTERNAL,
        )
    if code == EXIT_INTERRUPTED:
        raise KeyboardInterrupt  # typer returns a Ctrl-C as 130: the entry point says so
    return code if isinstance(code, int) else 0


def main() -> None:
    """For embedding and old entry points: the real one is gpucheck.entry.main."""
    from gpucheck.entry import main as entry_main

    entry_main()


def _subcommand(argv: list[str]) -> str:
    sub = next((a for a in argv if not a.startswith("-")), None)
    return f"{sub} " if sub in COMMANDS else ""
