"""Hostile and odd input: nonsense numbers, closed and odd standard
streams, control characters in what gpucheck writes, and -o onto a file the user cannot
write. Each is reproduced through the real command line."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import typer
from conftest import run_gpucheck
from support import builders
from support.started import wait_until_main_runs

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


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["doctor", "--from", "{snap}", "--min-memory", "9" * 400 + "G"], "--min-memory"),
        (["fit", "--params", "7B", "--gpu-memory", "9" * 400 + "G"], "--gpu-memory"),
        (["fit", "--params", "9" * 400 + "B", "--gpu-memory", "80G"], "--params"),
        (["fit", "--params", "1e999", "--gpu-memory", "80G"], "--params"),
        (["fit", "--params", "7B", "--gpu-memory", "80G", "--gpus", "9" * 40], "--gpus"),
        (["watch", "--duration", "9" * 400 + "h", "--count", "1"], "--duration"),
    ],
)
def test_a_number_too_large_for_anything_is_a_usage_error(
    tmp_path: Path, args: list[str], option: str
) -> None:
    """400 digits read as a float are infinity: int() of it raised OverflowError (exit 3);
    --gpus 10^39 could not become a float in the estimate."""
    snap = tmp_path / "snap.json"
    snap.write_text(dumps(builders.h100_node(1)))
    code, _, err = in_process([a.replace("{snap}", str(snap)) for a in args])
    assert code == 2 and err.startswith("gpucheck: ") and option in err, err


# -- 9: closed and odd standard streams, Ctrl-C at start-up ----------------------------------------


def closed(redirect: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run gpucheck ARGS with the shell's `redirect` (>&-, 2>&-, <&-): stderr when it is open."""
    result = subprocess.run(
        ["sh", "-c", f'"$0" -m gpucheck "$@" {redirect}', sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stderr


@pytest.fixture
def snap_file(tmp_path: Path) -> str:
    path = tmp_path / "snap.json"
    path.write_text(dumps(builders.h100_node(2)))
    return str(path)


def test_a_closed_stdout_is_exit_4_with_one_line(snap_file: str) -> None:
    """Before: a traceback (sys.stdout is None) and exit 1."""
    for args in (["doctor", "--from", snap_file], ["checks"], ["schema"], ["--version"], []):
        code, err = closed(">&-", *args)
        assert code == 4, (args, code, err)
        assert err.startswith("gpucheck: cannot write") and "standard output" in err, err
        assert len(err.splitlines()) == 1, err


@pytest.mark.parametrize("redirect", [">/dev/full", "1</dev/null"])
@pytest.mark.parametrize("args", [[], ["--version"], ["doctor", "--help"], ["checks"]])
def test_a_full_or_read_only_stdout_is_exit_4_with_one_line(redirect: str, args: list[str]) -> None:
    """Before: what typer writes itself (help, --version) failing on a full disk or a
    descriptor opened for reading was an internal error (exit 3)."""
    code, err = closed(redirect, *args)
    assert code == 4, (code, err)
    assert err.startswith("gpucheck: cannot write ") and "standard output: " in err, err
    assert len(err.splitlines()) == 1, err


@pytest.mark.parametrize("redirect", ["2</dev/null", "2>/dev/full"])
@pytest.mark.parametrize(("args", "code"), [(["--bogus"], 2), (["doctor", "--bogus"], 2)])
def test_an_unwritable_stderr_keeps_the_documented_exit_code(
    redirect: str, args: list[str], code: int
) -> None:
    """Before: exit 1 (the error line itself could not be written, and that raised)."""
    assert closed(f">/dev/null {redirect}", *args)[0] == code


def test_a_closed_stdout_does_not_stop_a_report_written_with_o(
    snap_file: str, tmp_path: Path
) -> None:
    out = tmp_path / "report.json"
    code, err = closed(">&-", "doctor", "--from", snap_file, "--json", "-o", str(out))
    assert (code, err) == (0, "")
    assert '"ready": true' in out.read_text()


@pytest.mark.parametrize(
    ("args", "code"),
    [(["checks"], 0), (["--bogus"], 2), (["doctor", "--bogus"], 2), (["doctor", "--from"], 2)],
)
def test_a_closed_stderr_keeps_the_documented_exit_code(args: list[str], code: int) -> None:
    """Before: exit 1 in every case (writing to a None stderr raised)."""
    assert closed(">/dev/null 2>&-", *args)[0] == code


def test_a_closed_stderr_with_a_report(snap_file: str) -> None:
    assert closed(">/dev/null 2>&-", "doctor", "--from", snap_file)[0] == 0
    assert closed(">/dev/null 2>&-", "doctor", "--from", snap_file, "--min-gpus", "8")[0] == 1


def test_a_closed_stdin_is_an_empty_one() -> None:
    code, err = closed("<&- >/dev/null", "doctor", "--from", "-")
    assert code == 2 and err.startswith("gpucheck: --from: -: "), err


def test_an_ascii_stdout_gets_ascii_marks_and_escapes(tmp_path: Path) -> None:
    """Before: the header's '·' raised UnicodeEncodeError (exit 3)."""
    snap = builders.h100_node(1)
    snap.system.hostname = "nœud-1"  # a name ASCII cannot say
    path = tmp_path / "snap.json"
    path.write_text(dumps(snap))
    for encoding in ("ascii", "latin-1"):
        result = run_gpucheck("doctor", "--from", str(path), env={"PYTHONIOENCODING": encoding})
        assert result.returncode == 0, result.stderr
        header = result.stdout.splitlines()[0]
        assert header.startswith("gpucheck ") and " - " in header, header
        assert "n\\u0153ud-1" in header, header
        assert result.stdout.splitlines()[-1].startswith("+ Ready: ")


def test_ctrl_c_right_after_the_entry_point_is_imported_is_130_with_one_line() -> None:
    """The console script compiles a regular expression between importing gpucheck.entry and
    calling main(): a Ctrl-C there printed a traceback."""
    code = (
        "import os, signal, time, gpucheck.entry\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(5)\n"
        "print('not interrupted')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stderr, result.stdout) == (130, "gpucheck: interrupted\n", "")


def test_a_ctrl_c_wrapped_by_library_code_is_still_an_interruption(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An import interrupted inside a class body raises RuntimeError from __set_name__ with
    the KeyboardInterrupt as its cause: that is Ctrl-C, not an internal error."""

    def interrupted_import() -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__") from exc

    monkeypatch.setattr("gpucheck.cli.checks.list_checks", interrupted_import)
    with pytest.raises(KeyboardInterrupt):
        in_process(["checks"])


def test_the_early_interrupted_status_is_the_documented_one() -> None:
    # (In a child: importing the entry point takes over Ctrl-C, not for this test process.)
    code = (
        "from gpucheck import entry\n"
        "from gpucheck.exit_status import ExitStatus\n"
        "assert entry._INTERRUPTED == int(ExitStatus.INTERRUPTED) == 130\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_program_started_with_ctrl_c_ignored_keeps_ignoring_it(tmp_path: Path) -> None:
    """`gpucheck doctor &` in a script (or under nohup) starts with SIGINT ignored: the
    terminal's Ctrl-C is for the foreground job. Before: gpucheck took it anyway (exit 130)."""
    snap = dumps(builders.h100_node(1)).encode()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "doctor", "--from", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    wait_until_main_runs(proc)
    time.sleep(0.5)  # (well into the command: waiting on stdin)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(snap, timeout=60)
    assert (proc.returncode, err) == (0, b""), err
    assert b"Ready" in out


# -- 10: control characters from the machine, in Prometheus label values --------------------------

HOSTILE_NAME = "H100\x1b[2J\x07\r\x7f\x9b31m\u202eevil"
ESCAPED_NAME = "H100\\x1b[2J\\x07\\x0d\\x7f\\x9b31m\\u202eevil"


def hostile_prometheus(tmp_path: Path) -> str:
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].name = HOSTILE_NAME
    snap.nvml.driver_version = "590.48.01\x1b]0;x\x07"
    path = tmp_path / "snap.json"
    path.write_text(dumps(snap))
    result = run_gpucheck("doctor", "--from", str(path), "--format", "prometheus")
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


def test_control_characters_never_reach_prometheus_label_values(tmp_path: Path) -> None:
    """Before: the GPU name went out raw (only backslash, quote and newline were escaped)."""
    text = hostile_prometheus(tmp_path)
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)
    line = next(x for x in text.splitlines() if x.startswith("gpucheck_gpu_info{"))
    # printable's escapes, then the format's: each backslash doubled.
    assert f'name="{ESCAPED_NAME.replace(chr(92), chr(92) * 2)}"' in line, line
    assert 'driver_version="590.48.01\\\\x1b]0;x\\\\x07"' in text


@pytest.mark.slow
def test_promtool_accepts_the_escaped_labels(tmp_path: Path) -> None:
    from support.components import program, run

    result = run(program("promtool"), "check", "metrics", input=hostile_prometheus(tmp_path))
    # promtool's only complaint may be the camelCase label names that join dcgm-exporter's
    # series (UUID, modelName, Hostname: its names); nothing about the escaped values.
    dcgm_names = {
        f"{family} label names should be written in 'snake_case' not 'camelCase'"
        for family in ("gpucheck_check_status", "gpucheck_gpu_info")
    }
    complaints = set(result.stderr.strip().splitlines()) - dcgm_names
    assert not result.stdout.strip() and not complaints, (result.stdout, result.stderr)
    assert result.returncode in (0, 3), result


# -- 11: -o onto a file this user may not write ----------------------------------------------------


def as_another_user() -> list[str]:
    """The command prefix that runs as a user who is not root (root may write any file)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to run as another user: apt install util-linux"
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.parametrize("args", [["doctor", "--from", "{snap}"], ["snapshot"], ["checks"]])
def test_o_onto_a_file_the_user_may_not_write_is_refused_and_the_file_kept(
    args: list[str],
) -> None:
    """Before: the report was written beside it and renamed over it (the folder was
    writable), so a read-only file, or root's, was replaced by the user's."""
    with tempfile.TemporaryDirectory(prefix="gpucheck-test-") as shared:  # (pytest's is 0700)
        folder = Path(shared)
        folder.chmod(0o777)
        refused_and_kept(folder, args)


def refused_and_kept(folder: Path, args: list[str]) -> None:
    snap = folder / "snap.json"
    snap.write_text(dumps(builders.h100_node(1)))
    snap.chmod(0o644)
    target = folder / "report.txt"
    target.write_text("kept\n")
    target.chmod(0o444)
    if args[0] == "checks":  # (checks has no -o: the doctor's own run, as a control)
        args = ["doctor", "--from", "{snap}", "--json"]
    argv = [a.replace("{snap}", str(snap)) for a in args]
    result = subprocess.run(
        [*as_another_user(), sys.executable, "-m", "gpucheck", *argv, "-o", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        check=False,
    )
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert (
        result.stderr == f"gpucheck: --output: {target}: Permission denied (it is not replaced)\n"
    )
    assert target.read_text() == "kept\n" and target.stat().st_mode & 0o777 == 0o444
    assert sorted(p.name for p in folder.iterdir()) == ["report.txt", "snap.json"]


def test_o_is_judged_before_any_work(tmp_path: Path) -> None:
    """A folder that does not exist is refused at once, not after the probes ran."""
    started = time.monotonic()
    result = run_gpucheck("doctor", "-o", str(tmp_path / "missing" / "r.txt"))
    assert result.returncode == 2 and "does not exist" in result.stderr, result.stderr
    assert time.monotonic() - started < 10
    assert result.stdout == ""


def test_a_ctrl_c_that_python_cannot_propagate_still_interrupts() -> None:
    """A KeyboardInterrupt raised in a __del__ is printed as "Exception ignored" and lost;
    the entry point's hook ends the program as interrupted instead."""
    code = (
        "import sys, gpucheck.entry as entry\n"
        "sys.unraisablehook = entry._unraisable\n"
        "class Finalised:\n"
        "    def __del__(self):\n"
        "        raise KeyboardInterrupt\n"
        "Finalised()\n"
        "print('went on')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stderr, result.stdout) == (130, "gpucheck: interrupted\n", "")
