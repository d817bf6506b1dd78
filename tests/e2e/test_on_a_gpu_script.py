"""scripts/on_a_gpu.sh: every gpucheck command under a time budget, each one's output under
$OUT, a summary line per command, one archive; here on a machine without a GPU, with this
test venv's interpreter (ON_A_GPU_PYTHON), so no venv is built."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import REPO

SCRIPT = REPO / "scripts" / "on_a_gpu.sh"


def run(out: Path, budget: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OUT": str(out),
        "ON_A_GPU_PYTHON": sys.executable,
        "ON_A_GPU_BUDGET_S": budget,
    }
    return subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
def test_every_command_runs_and_leaves_its_output(tmp_path: Path) -> None:
    done = run(tmp_path, "240")
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "summary.txt").read_text()
    for name in ("doctor", "doctor-json", "doctor-deep", "snapshot", "procs", "watch", "bench"):
        assert f"\n{name}: exit " in "\n" + summary, name
    assert "explain-sample: exit 1" in summary  # Xid 79 in the captured log: a FAIL
    assert "preflight:" in summary
    assert (tmp_path / "outputs" / "snapshot.json").stat().st_size > 0
    assert "Xid 79" in (tmp_path / "outputs" / "explain-sample.out").read_text()
    with tarfile.open(tmp_path / "outputs.tar.gz") as archive:
        names = archive.getnames()
    assert "outputs/doctor.out" in names and "summary.txt" in names


def test_a_spent_budget_skips_every_command_and_says_so(tmp_path: Path) -> None:
    done = run(tmp_path, "0")
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "summary.txt").read_text()
    assert "doctor: skipped (the 0 s budget is spent)" in summary
    assert "bench: skipped (the 0 s budget is spent)" in summary
    assert not (tmp_path / "outputs" / "doctor.out").exists()


def test_a_budget_that_is_not_a_number_is_a_usage_error(tmp_path: Path) -> None:
    done = run(tmp_path, "8m")
    assert done.returncode == 2
    assert done.stderr == "on_a_gpu.sh: ON_A_GPU_BUDGET_S must be a whole number of seconds\n"
