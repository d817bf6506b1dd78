"""A new user's first ten minutes, held to the README: in a fresh clone of this commit, the
README's first two ```sh blocks (install and run; install what the tests need and test) run
as written, under `sh -c` (a Dockerfile RUN, make, CI's shell steps), and do what they say.

The test command is run in a short form: without the script that apt-installs the real
components of the slow tests (system packages, as root: not for a test to do to a machine),
and with one small test file rather than the whole suite. The completion tests are that file:
they once failed whenever pytest's parent was sh."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

COMPONENTS = "sh tests/install-components.sh"
TEST_FILE = "tests/cli/test_completion.py"
STEP_S = 900  # one README command: a venv, pip (from its cache or the registry), the run


def readme_commands() -> tuple[str, str]:
    """The first two ```sh blocks of README.md: install-and-run, then the test command."""
    blocks = re.findall(r"^```sh\n(.*?)^```", (REPO / "README.md").read_text(), re.M | re.S)
    assert len(blocks) >= 2, "README.md: the install and test commands are its first ```sh blocks"
    return blocks[0].strip(), blocks[1].strip()


def short_test_command(command: str) -> str:
    """The test command without the components script, running TEST_FILE alone."""
    steps = command.split(" && ")
    assert steps[-1] == ".venv/bin/python -m pytest", f"the test command ends otherwise: {command}"
    kept = [step for step in steps[:-1] if step != COMPONENTS]
    return " && ".join([*kept, f"{steps[-1]} -q {TEST_FILE}"])


def in_sh(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # A clean user environment: no venv of ours, no PYTHONPATH; pip keeps its cache and
    # configuration (HOME, PIP_*), python3 is whatever PATH finds.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "GPUCHECK_ROOT")
        and not k.startswith(("_GPUCHECK", "PYTEST_", "COV_"))
    }
    return subprocess.run(
        ["sh", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_S,
        check=False,
    )


def test_the_readme_commands_are_the_ones_this_test_runs() -> None:
    """What the slow test below relies on, checked in the fast tier: the first block installs
    gpucheck and runs the doctor, the second installs the test extra and runs pytest."""
    install, tests = readme_commands()
    assert "pip install ." in install and install.endswith(".venv/bin/gpucheck doctor"), install
    short = short_test_command(tests)
    assert "pip install -e '.[test]'" in short and COMPONENTS not in short, short
    assert short.endswith(f" -m pytest -q {TEST_FILE}"), short


@pytest.mark.slow
def test_a_fresh_clone_installs_runs_and_tests_as_the_readme_says(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path / "gpucheck"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=300)
    install, tests = readme_commands()

    # No GPU here (or whatever this machine has): the doctor says so in a report, and exits
    # with the code of its verdict, 0 ready or 1 not.
    done = in_sh(install, clone)
    assert done.returncode in (0, 1), (done.returncode, done.stderr[-3000:])
    lines = done.stdout.splitlines()  # pip's lines, then the report
    assert any(re.match(r"gpucheck \d", line) for line in lines), done.stdout[-3000:]
    assert re.search(r"\d+ passed, \d+ skipped, \d+ info", lines[-1]), done.stdout[-3000:]

    done = in_sh(short_test_command(tests), clone)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert re.search(r"^\d+ passed in ", done.stdout, re.M), done.stdout[-3000:]
    assert "failed" not in done.stdout.splitlines()[-1], done.stdout[-3000:]
