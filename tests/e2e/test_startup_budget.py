"""The start-up budget: `gpucheck --help` and `doctor --from FILE --json` against a minimal typer
app, measured by benchmarks/startup.py --check in interleaved rounds and printed (pytest -s
shows the table). Its budgets are generous (a CPU-time ratio swings with a shared machine's
load): the steady gate against a costly import is tests/e2e/test_startup_imports.py."""

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
    print(result.stdout)
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
    medians = {"floor": 0.100, "gpucheck --help": 0.201, "doctor --from --json": 0.300}
    assert startup.over_budget(medians, "floor") == [
        "gpucheck --help: 2.010x the typer app's CPU time, over its budget of 2.0x"
    ]
    medians["gpucheck --help"] = 0.100
    assert startup.over_budget(medians, "floor") == []
