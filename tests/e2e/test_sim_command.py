"""`python -m tests.sim SCENARIO --out DIR`: a simulated GPU machine from the shell, for a bug
report's "reproduce with" (docs/testing.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def sim_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.sim", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_printed_environment_puts_gpucheck_on_the_simulated_machine(tmp_path: Path) -> None:
    out = tmp_path / "node"
    made = sim_command("ecc-errors", "--gpus", "2", "--out", str(out))
    assert made.returncode == 0, made.stderr
    assert made.stdout == "".join((out / "env.sh").read_text().splitlines(True)[1:])
    assert f"export GPUCHECK_ROOT={out / 'root'}\n" in made.stdout
    # What a user does with it: source it in a shell, then run the real command.
    shell = f'. "{out}/env.sh" && exec "$0" -m gpucheck doctor --json'
    result = subprocess.run(
        ["sh", "-c", shell, sys.executable],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    status = {f["id"]: f["status"] for f in report["findings"]}
    assert status["gpus.ecc-errors"] == "fail" and status["driver.nvml"] == "pass"
    gpus = report["snapshot"]["nvml"]["gpus"]
    assert [g["name"] for g in gpus] == ["NVIDIA H100 80GB HBM3"] * 2
    assert gpus[0]["ecc_uncorrected_volatile"] == 2


def test_list_and_bad_uses() -> None:
    listed = sim_command("--list")
    assert listed.returncode == 0
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert {"h100-node", "driver-mismatch", "gpu-lost", "nvml-hang", "nvml-crash"} <= set(names)
    for args in (["nope", "--out", "/tmp/x"], ["h100-node"], ["h100-node", "--out", str(REPO)]):
        bad = sim_command(*args)
        assert bad.returncode == 2, (args, bad.stderr)
        assert bad.stderr.splitlines()[-1].startswith("python -m tests.sim: error: ")


def test_a_python_without_the_test_extra_gets_one_line_naming_the_venv() -> None:
    # -S: no site-packages, as a system python3 run from the clone has none of the extra.
    ran = subprocess.run(
        [sys.executable, "-S", "-m", "tests.sim", "--list"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 1
    assert ran.stderr == (
        "python -m tests.sim needs the test extra (nvidia-ml-py, ...): run it with the venv's "
        "python (.venv/bin/python -m tests.sim ...), after pip install -e '.[test]'\n"
    )
