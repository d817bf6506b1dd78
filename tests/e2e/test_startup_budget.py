"""The start-up budget: `gpucheck --help` and `doctor --from FILE --json` against a minimal typer
app, measured by benchmarks/startup.py --check in interleaved rounds. An import moved to the
top of a module that the start-up cannot afford shows up here, not in a comment."""

import subprocess
import sys

import pytest
from conftest import REPO

BENCHMARK = REPO / "benchmarks" / "startup.py"


@pytest.mark.slow
def test_startup_stays_within_its_budget() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--check", "--runs", "11"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_budget_check_refuses_too_few_rounds() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--check", "--runs", "3"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--runs must be at least 9" in result.stderr


def test_a_row_over_its_budget_is_named() -> None:
    sys.path.insert(0, str(BENCHMARK.parent))
    try:
        import startup
    finally:
        sys.path.remove(str(BENCHMARK.parent))
    medians = {"floor": 0.100, "gpucheck --help": 0.136, "doctor --from --json": 0.150}
    assert startup.over_budget(medians, "floor") == [
        "gpucheck --help: 1.360x the typer app's CPU time, over its budget of 1.35x"
    ]
    medians["gpucheck --help"] = 0.100
    assert startup.over_budget(medians, "floor") == []
