"""The read-only commands the MCP tools stand for: each tool's typed arguments become one fixed
`gpucheck` command line with --json, run in a child process, and its JSON is the tool's result,
the very document the command line prints. Only these commands are built here: nothing that
ends a process or changes the machine (procs --kill, fix --apply) can be asked for."""

from __future__ import annotations

import enum
import json
import subprocess
import sys
from typing import Any

from gpucheck.exit_status import ExitStatus


class CompatTopic(str, enum.Enum):
    """The questions `gpucheck compat` answers (its subcommands)."""

    TORCH = "torch"
    TENSORFLOW = "tensorflow"
    JAX = "jax"
    CUDNN = "cudnn"
    DRIVER = "driver"
    CUDA = "cuda"
    GPU = "gpu"


# (install: planned only; its --apply is an acting option)
READ_ONLY = (
    "doctor",
    "snapshot",
    "procs",
    "compat",
    "fit",
    "fix",
    "dockerfile",
    "explain",
    "install",
)
ACTING_OPTIONS = ("--kill", "--kill-mine", "--apply", "--undo", "--yes", "-o", "--output")


class CommandFailed(Exception):
    """The command's one-line error (usage, unreadable input): the tool's error."""


def _value(value: object) -> str:
    """A value as one argument; one that starts with "-" could pass for an option: refused."""
    text = str(value)
    if text.startswith("-"):
        raise CommandFailed(f"{text!r}: a value may not start with '-'")
    return text


def _opt(argv: list[str], flag: str, value: object | None) -> None:
    if value is not None:
        argv += [flag, _value(value)]


def doctor_argv(
    from_file: str | None, python: str | None, deep: bool, strict: bool, only: list[str]
) -> list[str]:
    argv = ["doctor", "--json"]
    _opt(argv, "--from", from_file)
    _opt(argv, "--python", python)
    argv += ["--deep"] if deep else []
    argv += ["--strict"] if strict else []
    for selector in only:
        argv += ["--only", _value(selector)]
    return argv


def snapshot_argv(python: str | None, deep: bool) -> list[str]:
    argv = ["snapshot"]
    _opt(argv, "--python", python)
    return argv + (["--deep"] if deep else [])


def procs_argv(gpu: str | None) -> list[str]:
    argv = ["procs", "--json"]
    _opt(argv, "--gpu", gpu)
    return argv


def compat_argv(topic: CompatTopic, subject: str, windows: bool) -> list[str]:
    argv = ["compat", "--json", CompatTopic(topic).value, _value(subject)]
    return argv + (["--windows"] if windows and topic == CompatTopic.DRIVER else [])


def fit_argv(
    model: str | None,
    params: str | None,
    train: bool,
    dtype: str | None,
    batch: int | None,
    seq: int | None,
    gpus: int | None,
    gpu_memory: str | None,
    hub: bool = False,
) -> list[str]:
    argv = ["fit", "--json"]
    if model is not None:
        argv.append(_value(model))
    if model is not None and not hub:  # (a Hub id from the cache only, unless allowed the Hub)
        argv.append("--offline")
    _opt(argv, "--params", params)
    argv.append("--train" if train else "--infer")
    _opt(argv, "--dtype", dtype)
    _opt(argv, "--batch", batch)
    _opt(argv, "--seq", seq)
    _opt(argv, "--gpus", gpus)
    _opt(argv, "--gpu-memory", gpu_memory)
    return argv


def fix_plan_argv(from_file: str | None, python: str | None) -> list[str]:
    argv = ["fix", "--json"]
    _opt(argv, "--from", from_file)
    _opt(argv, "--python", python)
    return argv


def dockerfile_argv(path: str, from_file: str | None) -> list[str]:
    argv = ["dockerfile", "--json", _value(path)]
    _opt(argv, "--from", from_file)
    return argv


def install_argv(
    packages: list[str],
    from_file: str | None,
    gpus: list[str],
    driver: str | None,
    python: str | None,
    os: str | None,
    installer: str | None,
) -> list[str]:
    """`gpucheck install --json`: a plan only (never --apply)."""
    if not packages:
        raise CommandFailed("name at least one package: torch, tensorflow, jax, ...")
    argv = ["install", "--json", *(_value(p) for p in packages)]
    _opt(argv, "--from", from_file)
    for gpu in gpus:
        _opt(argv, "--gpu", gpu)
    _opt(argv, "--driver", driver)
    _opt(argv, "--python", python)
    _opt(argv, "--os", os)
    _opt(argv, "--installer", installer)
    return argv


def explain_argv(from_file: str | None) -> list[str]:
    """The text itself goes to standard input (run_command's `stdin`), never on the command
    line: a log is larger than an argument may be, and is the user's, not an option."""
    argv = ["explain", "--json", "-"]
    _opt(argv, "--from", from_file)
    return argv


def run_command(argv: list[str], timeout: float = 600.0, stdin: str | None = None) -> Any:
    """The command's JSON document (`stdin`: the text its standard input reads, else none).
    A usage error (exit 2) or a broken run raises CommandFailed with its one-line message; any
    other exit code is the document's own verdict (the doctor's 1 is a report, not a failure
    of the tool)."""
    if argv[0] not in READ_ONLY or any(a in ACTING_OPTIONS for a in argv[1:]):
        raise CommandFailed(f"not a read-only command: {' '.join(argv)}")
    given = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    done = subprocess.run(
        [sys.executable, "-m", "gpucheck", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **given,
    )
    if done.returncode in (ExitStatus.USAGE, ExitStatus.INTERNAL, ExitStatus.OUTPUT):
        lines = done.stderr.strip().splitlines()
        raise CommandFailed(lines[-1] if lines else f"gpucheck {argv[0]}: exit {done.returncode}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        # (No document: its one line says why, as `fit` says a Hub that did not answer, exit 5.)
        lines = done.stderr.strip().splitlines()
        raise CommandFailed(
            lines[-1] if lines else f"gpucheck {argv[0]} printed no JSON (exit {done.returncode})"
        ) from None
