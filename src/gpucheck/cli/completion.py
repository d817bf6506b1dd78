"""Shell completion of option values (typer's `autocompletion`): the closed choices, check ids
and sections for --only/--skip, and interpreter paths for --python. Each returns plain words
(with a help line for zsh and fish), so bash, zsh and fish complete them alike; each imports
what it lists only when the shell asks."""

# No `from __future__ import annotations`: typer reads the callbacks' annotations on every run
# (get_type_hints), and strings it would compile and evaluate each time.

import os
import sys
from collections.abc import Iterable

Choices = list[tuple[str, str]]


def _matching(choices: Iterable[tuple[str, str]], incomplete: str) -> Choices:
    return [(value, about) for value, about in choices if value.startswith(incomplete)]


def doctor_formats(incomplete: str) -> Choices:
    from gpucheck.report.formats import FORMATS

    about = {
        "text": "the report for a person",
        "json": "the report as JSON (gpucheck schema report)",
        "junit": "JUnit XML for CI test views",
        "prometheus": "metrics for node_exporter's textfile collector",
    }
    return _matching(((name, about.get(name, "")) for name in FORMATS), incomplete)


def check_selectors(incomplete: str) -> Choices:
    """--only/--skip: every check id, every section, and each id prefix ("gpus.",
    "frameworks.torch.")."""
    from gpucheck.checks.registry import all_checks

    checks = all_checks()
    sections = {c.section.value: f"every {c.section.label} check" for c in checks}
    prefixes = {
        prefix: f"checks named {prefix}*"
        for c in checks
        for prefix in (".".join(c.id.split(".")[: n + 1]) + "." for n in range(c.id.count(".")))
    }
    ids = {c.id: c.summary for c in checks}
    return _matching([*sections.items(), *prefixes.items(), *ids.items()], incomplete)


def fleet_formats(incomplete: str) -> Choices:
    about = {"table": "for a person", "json": "gpucheck schema fleet", "csv": "the inventory"}
    return _matching(about.items(), incomplete)


def watch_formats(incomplete: str) -> Choices:
    about = {"csv": "as nvidia-smi --format=csv writes it", "jsonl": "one JSON object a line"}
    return _matching(about.items(), incomplete)


def watch_fields(incomplete: str) -> Choices:
    """--fields is a comma-separated list: complete its last name, keeping the ones before."""
    from gpucheck.watch.log import FIELDS

    done, _, last = incomplete.rpartition(",")
    head = f"{done}," if done else ""
    taken = set(done.split(","))
    return [(head + name, "") for name in FIELDS if name.startswith(last) and name not in taken]


def fit_dtypes(incomplete: str) -> Choices:
    from gpucheck.fit.units import DTYPE_BYTES

    return _matching(((name, f"{DTYPE_BYTES[name]:g} byte(s)") for name in DTYPE_BYTES), incomplete)


def fit_optimizers(incomplete: str) -> Choices:
    from gpucheck.fit.parts import OPTIMIZERS

    return _matching(((name, "") for name in OPTIMIZERS), incomplete)


def fit_attention(incomplete: str) -> Choices:
    about = {
        "flash": "fused attention (the default)",
        "sdpa": "fused, as flash",
        "eager": "the s x s scores kept",
    }
    return _matching(about.items(), incomplete)


def fit_kv_dtypes(incomplete: str) -> Choices:
    from gpucheck.fit.request import KV_DTYPES
    from gpucheck.fit.units import DTYPE_BYTES

    return _matching(((n, f"{DTYPE_BYTES[n]:g} byte(s)") for n in KV_DTYPES), incomplete)


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
                from gpucheck.inputs import UserError

                shells = "bash (or zsh, fish, powershell, pwsh)"
                raise UserError(f"{option} takes one shell name, {shells}; unexpected {rest[0]!r}")
            return option, value if (equals or value) else None
        if not arg.startswith("-") or arg in ("--help", "--version"):
            return None  # a command (its options follow) or what typer answers first
    return None


def _parent_shell() -> str | None:
    """The shell this runs under, as typer guesses it (shellingham, typer's dependency)."""
    try:
        import shellingham

        name, _ = shellingham.detect_shell()
    except Exception:  # (ShellDetectionFailure, no /proc, shellingham not installed)
        return None
    return str(name).lower()


def write_shell_script(option: str, named: str | None) -> int:
    """Print (--show-completion) or install (--install-completion) the completion script of
    the shell named, else of the parent shell; any other shell is a usage error."""
    from gpucheck.inputs import UserError
    from gpucheck.outputs import OutputError

    shell = named if named is not None else _parent_shell()
    if shell is None:
        raise UserError(f"{option}: cannot tell which shell this is; {_NAME_ONE}")
    if shell not in SHELLS:
        how = "named" if named is not None else "here"
        raise UserError(f"{option}: no completion for the shell {how}, {shell!r}; {_NAME_ONE}")
    # (typer's own functions, which its value-less flags call)
    from typer.completion import (  # type: ignore[attr-defined]
        get_completion_script,
        install,
    )

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
