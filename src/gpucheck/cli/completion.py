"""Shell completion: what every command's completers share (`matching`: plain words with a
help line for zsh and fish, so bash, zsh and fish complete them alike), interpreter paths for
--python, and the completion scripts themselves. A command's own closed choices (check ids,
formats, dtypes) are completed in its module, beside the data they list."""

# No `from __future__ import annotations`: typer reads the callbacks' annotations on every run
# (get_type_hints), and strings it would compile and evaluate each time.

import os
import sys
from collections.abc import Iterable

# typer's own functions, which its value-less flags call
from typer.completion import (  # type: ignore[attr-defined]
    get_completion_script,
    install,
)

from gpucheck.inputs import UserError
from gpucheck.outputs import OutputError

try:  # typer's dependency, which it imports itself where installed (typer-slim: not)
    import shellingham
except ImportError:
    shellingham = None

Choices = list[tuple[str, str]]


def matching(choices: Iterable[tuple[str, str]], incomplete: str) -> Choices:
    return [(value, about) for value, about in choices if value.startswith(incomplete)]


def python_paths(incomplete: str) -> Choices:
    """--python: interpreters on PATH by name (python3, python3.12), else files and folders
    under what is typed, folders ending in / so that the next Tab goes on into them."""
    found: Choices = []
    if "/" not in incomplete:
        for folder in os.environ.get("PATH", "").split(os.pathsep):
            try:
                names = os.listdir(folder or ".")
            except OSError:
                continue
            for name in names:
                if name.startswith("python") and name.startswith(incomplete):
                    found.append((name, "on PATH"))
    folder, slash, start = incomplete.rpartition("/")
    base, prefix = (os.path.expanduser(folder) or "/", folder + "/") if slash else (".", "")
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        entries = []
    for entry in entries:
        if not entry.name.startswith(start) or (entry.name.startswith(".") and not start):
            continue
        if entry.is_dir():
            found.append((prefix + entry.name + "/", "folder"))
        elif entry.name.startswith("python") and os.access(entry.path, os.X_OK):
            found.append((prefix + entry.name, "interpreter"))
    return sorted(dict(found).items())


# --- the shell scripts: --show-completion / --install-completion [SHELL] ---------------------

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
SHELL_OPTIONS = ("--show-completion", "--install-completion")
_NAME_ONE = "name one: --show-completion bash (or zsh, fish, powershell, pwsh)"


def shell_request(argv: list[str]) -> tuple[str, str | None] | None:
    """(option, the shell named or None) when the command line asks for a completion script.
    Typer's own flags take no value: they guess the shell from the parent process, so
    `gpucheck --show-completion bash` run from `sh -c` (a Dockerfile RUN, make) said "Shell sh
    not supported". The two options are gpucheck's own, before any command."""
    for at, arg in enumerate(argv):
        option, equals, value = arg.partition("=")
        if option in SHELL_OPTIONS:
            rest = argv[at + 1 :]
            if not equals and rest and not rest[0].startswith("-"):
                value, rest = rest[0], rest[1:]
            elif not equals:
                value = ""
            if rest:
                shells = "bash (or zsh, fish, powershell, pwsh)"
                raise UserError(f"{option} takes one shell name, {shells}; unexpected {rest[0]!r}")
            return option, value if (equals or value) else None
        if not arg.startswith("-") or arg in ("--help", "--version"):
            return None  # a command (its options follow) or what typer answers first
    return None


def _parent_shell() -> str | None:
    """The shell this runs under, as typer guesses it (shellingham, typer's dependency)."""
    if shellingham is None:
        return None
    try:
        name, _ = shellingham.detect_shell()
    except Exception:  # (ShellDetectionFailure, no /proc)
        return None
    return str(name).lower()


def write_shell_script(option: str, named: str | None) -> int:
    """Print (--show-completion) or install (--install-completion) the completion script of
    the shell named, else of the parent shell; any other shell is a usage error."""
    shell = named if named is not None else _parent_shell()
    if shell is None:
        raise UserError(f"{option}: cannot tell which shell this is; {_NAME_ONE}")
    if shell not in SHELLS:
        how = "named" if named is not None else "here"
        raise UserError(f"{option}: no completion for the shell {how}, {shell!r}; {_NAME_ONE}")
    names = {"prog_name": "gpucheck", "complete_var": "_GPUCHECK_COMPLETE", "shell": shell}
    if option == "--show-completion":
        sys.stdout.write(get_completion_script(**names) + "\n")
        return 0
    try:
        _, path = install(**names)
    except OSError as exc:
        raise OutputError(f"cannot install {shell} completion: {exc}") from None
    sys.stdout.write(f"{shell} completion installed in {path}\n")
    sys.stdout.write("Completion will take effect once you restart the terminal\n")
    return 0
