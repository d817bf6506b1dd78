"""The scripts under integrations/ run on nodes, outside the package, under the system's
python3 (3.8+): lint them for that Python and type them strictly, one file at a time (they are
not a package, and some have no .py suffix)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

SCRIPTS = [
    "integrations/slurm/gpucheck-slurm",
    "integrations/kubernetes/gpucheck-npd",
    "integrations/github/junit_summary.py",
]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, check=False
    )


def test_ruff_for_python_38() -> None:
    lint = run("ruff", "check", "--target-version", "py38", *SCRIPTS)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    form = run("ruff", "format", "--check", "--target-version", "py38", *SCRIPTS)
    assert form.returncode == 0, form.stdout + form.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_mypy_strict(script: str) -> None:
    result = run("mypy", "--strict", "--no-incremental", script)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("script", SCRIPTS[:2])
def test_executable_with_a_python3_shebang(script: str) -> None:
    path = REPO / script
    assert path.stat().st_mode & 0o111 and path.read_text().startswith("#!/usr/bin/env python3\n")


def test_a_missing_component_fails_and_names_the_install_script() -> None:
    from support.components import INSTALL, program

    with pytest.raises(pytest.fail.Exception, match=INSTALL):
        program("gpucheck-no-such-component")


@pytest.mark.slow
def test_install_components_is_idempotent_and_quiet() -> None:
    # Run once by the README's test command before the suite: here everything is installed,
    # so a second run installs nothing and says nothing.
    result = subprocess.run(
        ["sh", str(REPO / "tests" / "install-components.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
