"""The doctor as a gate never says "Ready" for what it could not judge: a --python that is not
a Python interpreter (its probe script cannot run) answers "could not tell" (exit 5); a partial
snapshot brings no requirement nobody asked for, and says what it left unjudged once a cause."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Simulate, run_gpucheck
from sim import scenario as sim
from support import builders

from gpucheck.model.snapshot import dumps


def test_a_python_that_is_not_python_is_could_not_tell_not_ready(simulate: Simulate) -> None:
    machine = simulate(sim.h100_node(2))
    out = run_gpucheck("doctor", "--python", "/bin/sh", env=machine.env)
    assert out.returncode == 5, out.stdout + out.stderr
    last = out.stdout.rstrip().splitlines()[-1]
    assert last.startswith(
        "? Could not tell: --python /bin/sh could not be probed, so its frameworks were not "
        "judged (is it a Python interpreter? exited with status 2"
    ), last
    as_json = run_gpucheck("doctor", "--python", "/bin/sh", "--json", env=machine.env)
    summary = json.loads(as_json.stdout)["summary"]
    assert (as_json.returncode, summary["exit_code"], summary["ready"]) == (5, 5, False)
    assert summary["reason"].startswith("--python /bin/sh could not be probed")


def partial_snapshot(tmp_path: Path) -> Path:
    """An H100 node's snapshot with the nvml, cuda and environments fact groups left out (as
    a hand-trimmed or older snapshot arrives)."""
    data = json.loads(dumps(builders.h100_node(2)))
    for group in ("nvml", "cuda", "environments"):
        del data[group]
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(data))
    return path


def test_a_partial_snapshot_brings_no_requirement_nobody_asked_for(tmp_path: Path) -> None:
    path = partial_snapshot(tmp_path)
    report = json.loads(run_gpucheck("doctor", "--from", str(path), "--json").stdout)
    assert [f["id"] for f in report["findings"] if f["id"].startswith("requirements.")] == []
    asked = run_gpucheck("doctor", "--from", str(path), "--json", "--min-gpus", "2")
    (require,) = [f for f in json.loads(asked.stdout)["findings"] if f["id"].startswith("require")]
    assert (require["id"], require["status"]) == ("requirements.min-gpus", "skip")


def test_skipped_findings_are_one_line_per_cause_naming_the_checks(tmp_path: Path) -> None:
    out = run_gpucheck("doctor", "--from", str(partial_snapshot(tmp_path)))
    lines = out.stdout.splitlines()
    cuda = [line for line in lines if "the snapshot has no cuda facts" in line]
    assert cuda == [
        "  - Not judged: the snapshot has no cuda facts  [cuda.driver-api, cuda.toolkit, "
        "cuda.runtime-libraries]"
    ]
    nvml = [line for line in lines if "the snapshot has no nvml facts" in line]
    assert len(nvml) == 2  # one in Driver, one in GPUs: each section's own checks
    assert nvml[0].startswith("  - Not judged: the snapshot has no nvml facts  [driver.")
