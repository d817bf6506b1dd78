"""integrations/slurm/gpucheck-slurm against a real single-node Slurm (support/slurm_cluster.py:
Debian's slurmctld and slurmd with munge, started here on loopback in a temporary folder and
stopped after)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO
from support.components import program, run, wait_for
from support.slurm_cluster import SlurmCluster, slurm_cluster

SCRIPT = REPO / "integrations" / "slurm" / "gpucheck-slurm"
FIXTURES = REPO / "tests" / "fixtures" / "integrations"
HEALTHY, FAILING = FIXTURES / "healthy-h100x2.json", FIXTURES / "ecc-h100x2.json"
NODE = "gpunode"
GPUCHECK = f"env PYTHONPATH={REPO / 'src'} {sys.executable} -m gpucheck"


@dataclass
class Slurm(SlurmCluster):
    """The cluster, with the settings of the wrapped script's modes and its health runs."""

    def configure(self, mode: str, **settings: str) -> None:
        """The settings file the wrapped script reads in this mode ("" disables the mode)."""
        conf = self.root / f"{mode}.conf"
        if not settings:
            conf.unlink(missing_ok=True)
            return
        lines = [f'{key}="{value}"' for key, value in settings.items()]
        conf.write_text("\n".join([f'SCONTROL="{program("scontrol")}"', *lines]) + "\n")

    def health_runs(self) -> int:
        log = self.root / "health.runs"
        return len(log.read_text().splitlines()) if log.exists() else 0

    def wait_health_runs(self, count: int = 2) -> None:
        start = self.health_runs()
        wait_for(f"{count} health check runs", lambda: self.health_runs() >= start + count, 30)


def _wrapper(root: Path, mode: str) -> Path:
    """What slurm.conf names: sets the environment slurmd does not give (SLURM_CONF, the
    settings file) and runs the shipped script under this interpreter. With no settings file
    the mode is off (exit 0), so a test drives one mode at a time."""
    path = root / f"{mode}.sh"
    path.write_text(
        "#!/bin/sh\n"
        f"[ -f {root}/{mode}.conf ] || exit 0\n"
        f"echo run >> {root}/{mode}.runs\n"
        f"SLURM_CONF={root}/slurm.conf GPUCHECK_SLURM_CONF={root}/{mode}.conf "
        f"exec {sys.executable} {SCRIPT} {mode} 2>>{root}/{mode}.log\n"
    )
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slurm]:
    program("sbatch")
    program("scancel")
    root = tmp_path_factory.mktemp("slurm")
    health, prolog = _wrapper(root, "health"), _wrapper(root, "prolog")
    extra = f"HealthCheckProgram={health}\nHealthCheckInterval=1\nProlog={prolog}\n"
    with slurm_cluster(root, "gpucheck-test", NODE, extra) as cluster:
        yield Slurm(cluster.root, cluster.env, cluster.node_name)


@pytest.mark.slow
def test_health_check_drains_a_failing_node_and_resumes_it_when_healthy(slurm: Slurm) -> None:
    slurm.configure("health", GPUCHECK=GPUCHECK, GPUCHECK_FROM=str(FAILING))
    wait_for("the failing node drained", lambda: "DRAIN" in slurm.node()[0], 60, slurm.logs())
    reason = slurm.node()[1]
    assert reason.startswith("gpucheck: gpus.ecc-errors: "), reason
    assert "uncorrectable ECC" in reason or "ECC" in reason, reason
    slurm.wait_health_runs()  # draining again for the same reason leaves the drain as it is
    assert slurm.node()[1] == reason

    slurm.configure("health", GPUCHECK=GPUCHECK, GPUCHECK_FROM=str(HEALTHY))
    wait_for("the healthy node resumed", lambda: "DRAIN" not in slurm.node()[0], 60)
    assert slurm.node()[0].startswith("IDLE")

    # A drain that gpucheck did not set is not gpucheck's to lift.
    slurm.scontrol("update", f"nodename={NODE}", "state=drain", "reason=disk replacement")
    slurm.wait_health_runs()
    assert slurm.node() == ("IDLE+DRAIN", "disk replacement")
    slurm.scontrol("update", f"nodename={NODE}", "state=resume")
    slurm.configure("health")


@pytest.mark.slow
def test_a_hung_gpucheck_is_killed_and_drains_the_node(slurm: Slurm) -> None:
    marker = f"sleep 987.{os.getpid()}"  # a doctor that hangs, and its child
    hang = f"sh -c '{marker}; :' --"
    slurm.configure("health", GPUCHECK=hang, TIMEOUT="2")
    wait_for("the hung node drained", lambda: "DRAIN" in slurm.node()[0], 60, slurm.logs())
    assert slurm.node()[1] == "gpucheck: timed out after 2 s (hung driver?)"
    slurm.configure("health")
    # Each run's doctor and its child are killed at the bound (they would sleep 987 s): once
    # no new run starts, none is left.
    wait_for(
        "the hung doctors to be killed",
        lambda: not [p for p in Path("/proc").glob("[0-9]*/cmdline") if marker in _read(p)],
        15,
    )
    slurm.scontrol("update", f"nodename={NODE}", "state=resume")


@pytest.mark.slow
def test_gpucheck_that_cannot_judge_leaves_the_node_alone(slurm: Slurm) -> None:
    conf = slurm.root / "direct.conf"
    for gpucheck, source in ((GPUCHECK, "/nonexistent.json"), ("/nonexistent/gpucheck", "")):
        conf.write_text(
            f'GPUCHECK="{gpucheck}"\nGPUCHECK_FROM="{source}"\nNODE={NODE}\n'
            f'SCONTROL="{program("scontrol")}"\n'
        )
        env = {**slurm.env, "GPUCHECK_SLURM_CONF": str(conf)}
        result = run(sys.executable, str(SCRIPT), "health", env=env)
        assert result.returncode == 0, result.stderr
        assert "could not judge gpunode" in result.stderr and "left as it is" in result.stderr
        state, reason = slurm.node()
        assert "DRAIN" not in state and reason == "", (state, reason)


@pytest.mark.slow
def test_prolog_drains_a_failing_node_and_the_job_waits(slurm: Slurm) -> None:
    slurm.configure("prolog", GPUCHECK=GPUCHECK, GPUCHECK_FROM=str(FAILING))
    out = slurm.root / "job.out"
    result = run(program("sbatch"), "--output", str(out), "--wrap", "echo ran", env=slurm.env)
    assert result.returncode == 0, result.stderr
    job = result.stdout.split()[-1]
    wait_for("the prolog to drain the node", lambda: "DRAIN" in slurm.node()[0], 60, slurm.logs())
    assert slurm.node()[1].startswith("gpucheck: gpus.ecc-errors: ")
    shown = slurm.scontrol("show", "job", job)
    ran = out.exists() and "ran" in out.read_text()
    assert "JobState=PENDING" in shown and not ran, shown  # requeued, not run on this node
    # ...and held: Slurm's answer to a failed prolog, without nohold_on_prolog_fail.
    assert "Reason=launch_failed_requeued_held" in shown and "Priority=0 " in shown, shown

    # Healthy again: with the node resumed, a job runs. (A new one: Slurm holds a requeued job
    # back for a while before it may start again.)
    assert run(program("scancel"), job, env=slurm.env).returncode == 0
    slurm.configure("prolog", GPUCHECK=GPUCHECK, GPUCHECK_FROM=str(HEALTHY))
    slurm.scontrol("update", f"nodename={NODE}", "state=resume")
    out = slurm.root / "job2.out"
    result = run(program("sbatch"), "--output", str(out), "--wrap", "echo ran", env=slurm.env)
    assert result.returncode == 0, result.stderr
    wait_for("the job to run", lambda: out.exists() and "ran" in out.read_text(), 30, slurm.logs())
    assert "DRAIN" not in slurm.node()[0]
    slurm.configure("prolog")


@pytest.mark.slow
def test_with_nohold_on_prolog_fail_the_requeued_job_is_not_held(slurm: Slurm) -> None:
    conf = slurm.root / "slurm.conf"
    original = conf.read_text()
    conf.write_text(original + "SchedulerParameters=nohold_on_prolog_fail\n")
    slurm.scontrol("reconfigure")
    job = ""
    try:
        slurm.configure("prolog", GPUCHECK=GPUCHECK, GPUCHECK_FROM=str(FAILING))
        out = slurm.root / "nohold.out"
        result = run(program("sbatch"), "--output", str(out), "--wrap", "echo ran", env=slurm.env)
        assert result.returncode == 0, result.stderr
        job = result.stdout.split()[-1]
        wait_for("the prolog to drain the node", lambda: "DRAIN" in slurm.node()[0], 60)
        wait_for(
            "the job to be requeued",
            lambda: "JobState=PENDING" in slurm.scontrol("show", "job", job),
            30,
        )
        shown = slurm.scontrol("show", "job", job)
        assert "requeued_held" not in shown and "Priority=0 " not in shown, shown
    finally:
        if job:
            run(program("scancel"), job, env=slurm.env)
        slurm.configure("prolog")
        conf.write_text(original)
        slurm.scontrol("reconfigure")
        slurm.scontrol("update", f"nodename={NODE}", "state=resume")


def _read(path: Path) -> str:
    try:
        return path.read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _running_job(slurm: Slurm, name: str) -> tuple[str, list[int]]:
    """A real job holding the node (sleep), and its PIDs as `scontrol listpids` gives them."""
    result = run(
        program("sbatch"),
        "--output",
        str(slurm.root / f"{name}.out"),
        "--wrap",
        "sleep 300",
        env=slurm.env,
    )
    assert result.returncode == 0, result.stderr
    job = result.stdout.split()[-1]
    wait_for(
        "the job to run",
        lambda: "JobState=RUNNING" in slurm.scontrol("show", "job", job),
        30,
        slurm.logs(),
    )

    def pids() -> list[int]:
        listed = run(program("scontrol"), "listpids", job, env=slurm.env)
        return [int(r.split()[0]) for r in listed.stdout.splitlines()[1:] if r.strip()]

    wait_for("the job's processes", lambda: bool(pids()), 30)
    return job, pids()


@pytest.mark.slow
def test_a_node_busy_with_its_job_is_not_drained_but_a_leaked_process_is(
    slurm: Slurm, tmp_path: Path
) -> None:
    from support import builders

    from gpucheck.model.snapshot import dumps

    job, pids = _running_job(slurm, "busy")
    # The job's process holds 70 GiB of GPU 0 in exclusive-process mode (as the scheduler set
    # it): with --strict, gpucheck alone would fail gpus.compute-mode and warn memory-in-use.
    snap = builders.h100_node(2)
    for gpu in snap.nvml.gpus:
        gpu.compute_mode = "exclusive_process"
    builders.with_process(snap.nvml.gpus[0], pids[0], "python", 70 * 1024)
    busy = tmp_path / "busy.json"
    busy.write_text(dumps(snap))
    slurm.configure("health", GPUCHECK=GPUCHECK, GPUCHECK_FROM=str(busy), GPUCHECK_ARGS="--strict")
    slurm.wait_health_runs(3)
    state, reason = slurm.node()
    assert "DRAIN" not in state and state.startswith(("ALLOCATED", "MIXED")), (
        state,
        reason,
        slurm.logs(),
    )

    # Without the job-aware profile the same busy node is drained for running its job.
    slurm.configure(
        "health",
        GPUCHECK=GPUCHECK,
        GPUCHECK_FROM=str(busy),
        GPUCHECK_ARGS="--strict",
        JOB_AWARE="no",
    )
    wait_for("the busy node drained", lambda: "DRAIN" in slurm.node()[0], 60, slurm.logs())
    assert slurm.node()[1].startswith("gpucheck: gpus.compute-mode, gpus.memory-in-use: GPU 0 (")
    slurm.configure("health")  # off while the node is resumed, so no run drains it again
    slurm.scontrol("update", f"nodename={NODE}", "state=resume")
    assert "DRAIN" not in slurm.node()[0]

    # A process of no running job holding memory on GPU 1: leaked, and the reason names GPU 1.
    builders.with_process(snap.nvml.gpus[1], 999_999, "leftover", 512)
    leaked = tmp_path / "leaked.json"
    leaked.write_text(dumps(snap))
    slurm.configure(
        "health", GPUCHECK=GPUCHECK, GPUCHECK_FROM=str(leaked), GPUCHECK_ARGS="--strict"
    )
    wait_for("the node drained", lambda: "DRAIN" in slurm.node()[0], 60, slurm.logs())
    reason = slurm.node()[1]
    head = "gpucheck: gpus.compute-mode, gpus.memory-in-use: GPU 1 (GPU-00000001-0000-0000-0000-000000000000): "
    assert reason.startswith(head), reason
    assert len(reason) <= 160 and reason.endswith("..."), reason  # the title is cut, not the GPU
    slurm.configure("health")
    assert run(program("scancel"), job, env=slurm.env).returncode == 0
    wait_for("the job to end", lambda: not slurm.node()[0].startswith(("ALLOCATED", "MIXED")), 30)
    slurm.scontrol("update", f"nodename={NODE}", "state=resume")
