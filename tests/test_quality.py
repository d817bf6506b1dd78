"""Lint, format and types are part of the suite, so `pytest` alone says whether a change is
ready, here and in CI."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, check=False
    )


def test_ruff_lint() -> None:
    result = run("ruff", "check", "src", "tests", "benchmarks", "scripts", "integrations")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = run(
        "ruff", "format", "--check", "src", "tests", "benchmarks", "scripts", "integrations"
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
