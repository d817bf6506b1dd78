"""The `gpucheck` command line: one module per command, each parsing its options and calling
the library. Each command's module is imported when the command is looked up (COMMANDS).

Errors are one line on stderr and a documented exit code (exit_status.py): 2 for bad
input, 3 when gpucheck itself broke. A traceback is shown only with GPUCHECK_DEBUG=1.
"""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
from collections.abc import Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup, TyperOption  # typer's documented home for custom groups

if TYPE_CHECKING:
    from typer._click import Command  # the click typer builds on (typer vendors it)

from gpucheck.cli import completion
from gpucheck.exit_status import ExitStatus
from gpucheck.inputs import UserError, forget_inputs
from gpucheck.outputs import OutputError, StdoutError
from gpucheck.version import __version__

# Every command, in --help order: name -> (its function or typer app in the module
# gpucheck.cli.<name>, one-line summary). The summary is the command's short help, so that
# --help lists them all without importing or building any: the command table is the seam
# where each command's module is imported on demand (the start-up benchmark's rows, in
# benchmarks/startup.py, need it: typer builds every command it is given).
COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": ("doctor", "Check GPUs, driver, CUDA, cuDNN, frameworks; say what to fix."),
    "snapshot": ("snapshot", "Write the facts alone, as JSON."),
    "schema": ("schema", "Print the JSON Schema of a JSON output."),
    "checks": ("list_checks", "List every check the doctor runs."),
    "bench": ("bench", "Measure the GPUs' real speed against their spec and the CPU."),
    "fit": ("fit", "Will this model, at this batch size, fit these GPUs?"),
    "fleet": ("fleet", "Summarise many saved reports into one view."),
    "procs": ("procs", "Who holds GPU memory and device files."),
    "watch": ("watch", "Sample the GPUs: a live view, CSV or JSON lines."),
    "compat": ("compat_app", "Ask the compatibility data."),
    "fix": ("fix", "Turn the doctor's fixes into one plan; apply it safely."),
    "install": ("install", "Which torch/TensorFlow/JAX build runs here, and its command."),
    "dockerfile": (
        "dockerfile",
        "Judge a Dockerfile or Compose file against the machine it will run on.",
    ),
    "explain": ("explain", "Explain a pasted error text: its cause and its fix."),
    "mcp": ("mcp", "Serve the read-only tools to AI agents (MCP, stdio)."),
    "preflight": ("preflight", "One verdict for a multi-node job, run on every rank."),
}


# --install-completion / --show-completion in --help: completion.py answers them.
SHELL_HELP = {
    "install_completion": "Install completion for SHELL (bash, zsh, fish, powershell, pwsh), "
    "else for the shell this runs under.",
    "show_completion": "Print the completion script for SHELL, else for the shell this runs under.",
}


# What every command may exit with, whatever it does (run, below, maps them).
_EVERY_COMMAND = {
    ExitStatus.USAGE: "usage error, or an input that cannot be read",
    ExitStatus.INTERNAL: "gpucheck itself broke (a bug; GPUCHECK_DEBUG=1 shows the traceback)",
    ExitStatus.OUTPUT: "the output could not be written",
    ExitStatus.INTERRUPTED: "interrupted (Ctrl-C)",
}


def exit_codes_help(own: Mapping[ExitStatus, str]) -> str:
    """The "Exit codes" section of a command's --help: its own meanings and the ones every
    command shares, numbered from the one ExitStatus enum so that the help cannot drift from
    what the command returns. Click keeps a paragraph that starts with \\b as written."""
    meanings = {**_EVERY_COMMAND, **own}
    lines = [
        textwrap.fill(
            meanings[code], 78, initial_indent=f"  {int(code):>3}  ", subsequent_indent=" " * 7
        )
        for code in sorted(meanings)
    ]
    return "\b\nExit codes:\n" + "\n".join(lines)


class _Commands(MutableMapping[str, "Command"]):
    """The commands, each imported and built by typer when first looked up (to run it, to
    complete it); to the group an ordinary mapping."""

    def __init__(self) -> None:
        self._built: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            self._built[name] = _command(name)
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*COMMANDS, *self._built]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*COMMANDS, *self._built]))


class _CommandLine(TyperGroup):
    """gpucheck's top-level group: commands are built when looked up, and --help lists them
    from their summaries, building none."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands()

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in COMMANDS.items()])


def build_app() -> typer.Typer:
    """The command line: every command, each built when first looked up."""
    app = typer.Typer(
        name="gpucheck",
        cls=_CommandLine,
        help="Is this machine ready to run deep learning on its NVIDIA GPUs? If not, what to "
        "change.",
        # --install-completion, --show-completion: listed in --help; completion.py answers them
        add_completion=True,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_main)
    return app


def _command(name: str) -> Command:
    """The command `name`, built now (typer imports what it is given), alone: not inside the
    whole command line, whose callback and completion options it would build again only to
    drop them. Typer gives an app of one command and no callback back as that command; a
    group of its own (compat) comes inside a bare group."""
    attribute, summary = COMMANDS[name]
    module = importlib.import_module(f"gpucheck.cli.{name}")
    target = getattr(module, attribute)
    # Each command module's EXIT_CODES: what its --help lists, from the ExitStatus enum.
    epilog = exit_codes_help(module.EXIT_CODES)
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    if isinstance(target, typer.Typer):
        app.add_typer(target, name=name, short_help=summary, epilog=epilog)
        group = typer.main.get_command(app)
        assert isinstance(group, TyperGroup)
        return group.commands[name]
    app.command(name=name, short_help=summary, epilog=epilog)(target)
    return typer.main.get_command(app)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"gpucheck {__version__}\n")
        raise typer.Exit(ExitStatus.OK)


def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """gpucheck: is this machine ready for deep learning on NVIDIA GPUs?"""


def _fail(message: str, code: int) -> int:
    # A message may quote what the user typed (a file name with a newline or an escape
    # sequence): shown escaped, so that it stays one line and the terminal executes nothing.
    # Imported here, on the error path: the start-up benchmark's `gpucheck --help` row has no
    # room for the report layer.
    from gpucheck.report.text import printable

    sys.stderr.write(f"gpucheck: {printable(message)}\n")
    return code


def run(argv: list[str]) -> int:
    """Run the command line; returns the exit code (exit_status.py). KeyboardInterrupt
    and a closed stdout are the entry point's (gpucheck/entry.py)."""
    forget_inputs()  # (what an earlier command in this process read is not this one's input)
    try:
        if (shell_script := completion.shell_request(argv)) is not None:
            return completion.write_shell_script(*shell_script)
        command = typer.main.get_command(build_app())
        for param in command.params:  # (typer's flags, answered by completion.py: what they take)
            if isinstance(param, TyperOption) and param.name in SHELL_HELP:
                param.help = SHELL_HELP[param.name]
        code = command.main(args=argv, prog_name="gpucheck", standalone_mode=False)
    except UserError as exc:
        return _fail(str(exc), ExitStatus.USAGE)
    except OutputError as exc:
        return _fail(str(exc), ExitStatus.OUTPUT)
    except StdoutError as exc:  # (help, progress or a table written straight to stdout)
        return _fail(f"cannot write to standard output: {exc.strerror}", ExitStatus.OUTPUT)
    except (typer.Exit, SystemExit) as exc:
        value = exc.exit_code if isinstance(exc, typer.Exit) else exc.code
        return value if isinstance(value, int) else ExitStatus.USAGE
    except KeyboardInterrupt:
        raise
    except BrokenPipeError:
        raise
    except Exception as exc:
        if type(exc).__name__ == "Abort" or _interrupted(exc):  # (click's Ctrl-C at a prompt)
            raise KeyboardInterrupt from None
        # Typer's parser errors (click's, vendored in newer typer) carry their own message and
        # exit code; matched by shape so that no private module is imported.
        if type(exc).__name__ == "NoArgsIsHelpError":
            ctx = getattr(exc, "ctx", None)
            sys.stdout.write((ctx.get_help() if ctx else str(exc)) + "\n")
            return ExitStatus.USAGE
        parse_code = getattr(exc, "exit_code", None)
        if hasattr(exc, "format_message") and isinstance(parse_code, int):
            hint = f" (see: gpucheck {_subcommand(argv)}--help)" if parse_code == 2 else ""
            return _fail(f"{exc.format_message()}{hint}", parse_code or ExitStatus.USAGE)
        if os.environ.get("GPUCHECK_DEBUG"):
            raise
        return _fail(
            f"internal error: {type(exc).__name__}: {exc} (a gpucheck bug; GPUCHECK_DEBUG=1 shows "
            "the traceback)",
            ExitStatus.INTERNAL,
        )
    if code == ExitStatus.INTERRUPTED:
        raise KeyboardInterrupt  # typer returns a Ctrl-C as 130: the entry point says so
    return code if isinstance(code, int) else 0


def _interrupted(exc: BaseException) -> bool:
    """A Ctrl-C that library code wrapped in another exception (an import interrupted in a
    class body raises RuntimeError from __set_name__, the KeyboardInterrupt its cause)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return False


def _subcommand(argv: list[str]) -> str:
    sub = next((a for a in argv if not a.startswith("-")), None)
    return f"{sub} " if sub in COMMANDS else ""
