"""The scheduler's health profile (`doctor --job-pids`): a node busy with its jobs is not a sick
node. GPU memory and exclusive-process GPUs held by processes of running jobs are normal; a
process of no running job holding GPU memory is leaked, and named with its GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_gpucheck
from support import builders
from support.evaluate import the

from gpucheck.checks.context import Requirements
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot, dumps

JOB = Requirements(job_pids=frozenset({4242, 4243}))


def busy_node() -> Snapshot:
    """2 H100s in exclusive-process mode (as a scheduler sets them), each held by a job's
    process with 70 GiB of 80."""
    snap = builders.h100_node(2)
    for gpu, pid in zip(snap.nvml.gpus, (4242, 4243), strict=True):
        gpu.compute_mode = "exclusive_process"
        builders.with_process(gpu, pid, "python", 70 * 1024)
    return snap


def test_without_the_profile_a_busy_node_looks_sick() -> None:
    snap = busy_node()
    assert the(snap, "gpus.memory-in-use").status is Status.WARN
    assert the(snap, "gpus.compute-mode").status is Status.FAIL


def test_memory_and_exclusive_gpus_of_running_jobs_are_normal() -> None:
    snap = busy_node()
    memory = the(snap, "gpus.memory-in-use", JOB)
    assert memory.status is Status.PASS
    assert memory.title == "GPU memory on 2 GPU(s) free or held by running jobs"
    mode = the(snap, "gpus.compute-mode", JOB)
    assert mode.status is Status.PASS
    assert mode.title == "2 GPU(s) in exclusive-process mode, held by running jobs or free"
    # An idle node under the profile: exclusive mode without holders is the scheduler's setting.
    idle = builders.h100_node(2)
    idle.nvml.gpus[1].compute_mode = "exclusive_process"
    assert the(idle, "gpus.compute-mode", Requirements(job_pids=frozenset())).status is Status.PASS


def test_a_process_of_no_running_job_is_leaked_and_named_with_its_gpu() -> None:
    snap = busy_node()
    builders.with_process(snap.nvml.gpus[1], 999, "leftover", 512)  # small, but of no job
    f = the(snap, "gpus.memory-in-use", JOB)
    assert f.status is Status.WARN
    assert f.title.startswith("1 GPU(s) have memory held by no running job")
    assert [(g.index, g.uuid) for g in f.subjects.gpus] == [
        (1, "GPU-00000001-0000-0000-0000-000000000000")
    ]
    assert "PID 999 leftover (0.5 GiB)" in f.evidence[0] and "4243" not in f.evidence[0]
    # The fix names the leaked process, never the job's.
    assert f.fix is not None and "999" in f.fix.text and "4243" not in f.fix.text
    # A display server's graphics context is no job's, and no leak either.
    snap = busy_node()
    builders.with_process(snap.nvml.gpus[0], 1500, "Xorg", 20)
    assert snap.nvml.gpus[0].processes is not None
    snap.nvml.gpus[0].processes[-1].kind = "graphics"
    assert the(snap, "gpus.memory-in-use", JOB).status is Status.PASS
    # In exclusive-process mode a process of no job holding the GPU fails compute-mode too.
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].compute_mode = "exclusive_process"
    builders.with_process(snap.nvml.gpus[0], 999, "leftover", 512)
    assert the(snap, "gpus.compute-mode", JOB).status is Status.FAIL


def test_cli_job_pids(tmp_path: Path) -> None:
    path = tmp_path / "busy.json"
    path.write_text(dumps(busy_node()))
    only = ("--only", "gpus.memory-in-use", "--only", "gpus.compute-mode", "--strict")
    assert run_gpucheck("doctor", "--from", str(path), *only).returncode == 1
    ok = run_gpucheck("doctor", "--from", str(path), *only, "--job-pids", "4242,4243")
    assert ok.returncode == 0, ok.stdout
    # Spaces and newlines separate too; "" is the profile with no job running.
    assert (
        run_gpucheck("doctor", "--from", str(path), *only, "--job-pids", "4242\n4243").returncode
        == 0
    )
    none = run_gpucheck("doctor", "--from", str(path), *only, "--job-pids", "")
    assert none.returncode == 1 and "held by no running job" in none.stdout


@pytest.mark.parametrize("bad", ["12,abc", "-5", "0"])
def test_bad_job_pids_are_a_usage_error(bad: str) -> None:
    result = run_gpucheck("doctor", "--from", "/nonexistent.json", "--job-pids", bad)
    assert result.returncode == 2
    assert (
        result.stderr.startswith("gpucheck: --job-pids: ") and len(result.stderr.splitlines()) == 1
    )


def test_the_python_api_takes_the_profile_too() -> None:
    import gpucheck

    report = gpucheck.doctor(snapshot=busy_node(), job_pids=[4242, 4243], strict=True)
    status = {f.id: f.status for f in report.findings}
    assert (
        status["gpus.memory-in-use"] is Status.PASS and status["gpus.compute-mode"] is Status.PASS
    )
    report = gpucheck.doctor(snapshot=busy_node(), strict=True)
    assert report.exit_code == 1
