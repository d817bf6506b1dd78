"""Hostile and odd input (issue 21, items 8 to 11): nonsense numbers, closed and odd standard
streams, control characters in what gpucheck writes, and -o onto a file the user cannot
write. Each is reproduced through the real command line."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import builders
import pytest
import typer
from conftest import run_gpucheck

from gpucheck import cli
from gpucheck.model.snapshot import dumps


def in_process(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(argv)
    return code, out.getvalue(), err.getvalue()


def float_options() -> list[tuple[str, str]]:
    """(command, option) for every option of every command that reads a float, found from
    the commands themselves so that a new one is covered without being listed here."""
    found = []
    group = typer.main.get_command(cli.build_app())
    for name in cli.COMMANDS:
        command = group.commands[name]  # type: ignore[attr-defined]
        subcommands = getattr(command, "commands", None) or {name: command}
        for sub, each in subcommands.items():
            path = name if sub == name else f"{name} {sub}"
            for param in each.params:
                if type(param.type).__name__ in ("FloatRange", "FloatParamType"):
                    found.append((path, max(param.opts, key=len)))
    return found


def test_every_float_option_is_found() -> None:
    """The list below is not vacuous: the options the issue names are among it."""
    options = set(float_options())
    assert {
        ("doctor", "--timeout"),
        ("snapshot", "--timeout"),
        ("procs", "--timeout"),
        ("procs", "--grace"),
        ("watch", "--timeout"),
        ("watch", "--interval"),
        ("bench", "--timeout"),
        ("fit", "--timeout"),
    } <= options


@pytest.mark.parametrize("value", ["nan", "NaN", "-nan", "inf", "-inf", "1e999", "-1e999"])
@pytest.mark.parametrize(("command", "option"), float_options())
def test_every_float_option_refuses_nan_and_infinity(command: str, option: str, value: str) -> None:
    code, out, err = in_process([*command.split(), f"{option}={value}"])
    assert code == 2, (command, option, value, code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpucheck: "), err
    assert option in lines[0], lines[0]


def test_doctor_timeout_nan_is_a_usage_error_not_a_hung_driver() -> None:
    """Before: every probe 'timed out' at once and the report blamed the driver."""
    result = run_gpucheck("doctor", "--timeout", "nan", "--only", "driver.nvml")
    assert result.returncode == 2, result.stdout
    assert result.stderr == "gpucheck: --timeout: nan is not a number from 0.5 to 600\n"
    assert result.stdout == ""


def test_a_size_too_large_for_any_memory_is_a_usage_error(tmp_path: Path) -> None:
    """400 digits read as a float are infinity: int() of it raised OverflowError (exit 3)."""
    snap = tmp_path / "snap.json"
    snap.write_text(dumps(builders.h100_node(1)))
    code, _, err = in_process(["doctor", "--from", str(snap), "--min-memory", "9" * 400 + "G"])
    assert code == 2 and err.startswith("gpucheck: --min-memory: ") and "too large" in err, err
