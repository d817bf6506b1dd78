"""Every command's --help lists its exit codes, numbered from the one ExitStatus enum, and no
option shows a bare type (<str>, <int>) where a name says what to give."""

from __future__ import annotations

import re

import pytest
from conftest import run_gpucheck

from gpucheck.cli import COMMANDS


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_help_lists_its_exit_codes(command: str) -> None:
    out = run_gpucheck(command, "--help")
    assert out.returncode == 0, out.stderr
    section = out.stdout[out.stdout.index("Exit codes:") :]
    codes = [int(n) for n in re.findall(r"^\s+(\d+)  ", section, re.M)]
    assert codes[0] == 0 and codes == sorted(codes)
    # Shared by every command: a usage error is 2, Ctrl-C is 130.
    assert "      2  usage error, or an input that cannot be read\n" in section
    assert "    130  interrupted (Ctrl-C)\n" in section


def test_fit_help_names_what_each_option_takes() -> None:
    out = run_gpucheck("fit", "--help")
    assert re.findall(r"<(?:str|int|float)>|\b(?:TEXT|INTEGER)\b", out.stdout) == []
    assert "--gpus N" in out.stdout and "--batch N" in out.stdout
    assert "--dtype DTYPE" in out.stdout


def test_fit_and_procs_help_say_what_could_not_tell_means() -> None:
    fit = run_gpucheck("fit", "--help").stdout
    assert "      5  could not tell: a GPU NVML cannot open (lost)" in fit
    procs = run_gpucheck("procs", "--help").stdout
    assert "      5  could not tell: NVML did not answer for a GPU (lost)" in procs
