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
from gpucheck.cli.common import OutputError, UserError
from gpucheck.report.exit_codes import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OUTPUT, EXIT_USAGE

# Every command, in --help order: (module, function), or (module, typer app) for a group. A
# run builds only the command it was asked for (typer builds and imports what it is given:
# ~20 ms for all of them); --help and completion build them all.
COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": ("gpucheck.cli.doctor", "doctor"),
    "snapshot": ("gpucheck.cli.snapshot", "snapshot"),
    "compat": ("gpucheck.cli.compat", "compat_app"),
    "schema": ("gpucheck.cli.schema", "schema"),
    "checks": ("gpucheck.cli.checks", "list_checks"),
    "bench": ("gpucheck.cli.bench", "bench"),
    "fit": ("gpucheck.cli.fit", "fit"),
    "fleet": ("gpucheck.cli.fleet", "fleet"),
    "procs": ("gpucheck.cli.procs", "procs"),
    "watch": ("gpucheck.cli.watch", "watch"),
}


def build_app(names: list[str] | None = None) -> typer.Typer:
    """The command line with `names` (default: every command)."""
    import importlib

    app = typer.Typer(
        name="gpucheck",
        help="Is this machine ready to run deep learning on its NVIDIA GPUs? If not, what to "
        "change.",
        add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish, pwsh)
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_main)
    for name in names if names is not None else list(COMMANDS):
        module, attribute = COMMANDS[name]
        target = getattr(importlib.import_module(module), attribute)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name)
        else:
            app.command(name=name)(target)
    return app


def _asked_for(argv: list[str]) -> list[str] | None:
    """The one command a command line runs, when it plainly names one (else: all of them)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first in COMMANDS and not any(a.startswith("--") and "completion" in a for a in argv):
        return [first]
    return None


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"gpucheck {__version__}\n")
        raise typer.Exit(0)


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
    command = typer.main.get_command(build_app(_asked_for(argv)))
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


def _subcommand(argv: list[str]) -> str:
    sub = next((a for a in argv if not a.startswith("-")), None)
    return f"{sub} " if sub in COMMANDS else ""
