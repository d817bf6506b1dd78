"""gpus.memory-in-use on a host: a PID NVML lists with memory that the host's /proc lacks is a
process that exited while the driver keeps its context (qizhou000/VisEdit#5: kill -9 says "no
such process", nvidia-smi --query-compute-apps still lists it with 10151 MiB); inside a
container the same PID is a host PID, another namespace's, and no leak."""

from __future__ import annotations

import pytest
from support import builders
from support.evaluate import the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import GpuProcess, HostProcess, ProcessFacts, Snapshot

MIB = 1024 * 1024


def _held_by_absent_pid(
    container: str | None, sees_every_pid: bool | None = True, init_name: str | None = "systemd"
) -> Snapshot:
    snap = builders.h100_node(1)
    gpu = snap.nvml.gpus[0]
    gpu.memory_used = 10151 * MIB
    gpu.memory_free = (gpu.memory_total or 0) - gpu.memory_used
    gpu.processes = [GpuProcess(pid=3180842, used_memory=10151 * MIB, kind="compute")]
    snap.processes = ProcessFacts(
        scanned=True, processes=[], sees_every_pid=sees_every_pid, init_name=init_name
    )
    snap.system.container = container
    return snap


def test_on_a_host_memory_of_a_pid_not_in_proc_warns_and_offers_a_reset() -> None:
    f = the(_held_by_absent_pid(None), "gpus.memory-in-use")
    assert f.status is Status.WARN
    assert "memory held by no live process" in f.title
    assert any("PID 3180842" in line for line in f.evidence)
    assert f.fix is not None and "sudo nvidia-smi -r -i 0" in f.fix.commands


def test_in_a_container_a_host_pid_is_another_namespace_and_passes() -> None:
    assert the(_held_by_absent_pid("docker"), "gpus.memory-in-use").status is Status.PASS


def test_a_proc_that_hides_other_users_pids_is_no_evidence_of_a_dead_process() -> None:
    # proc(5): with hidepid=2 ("invisible") an unprivileged user sees only their own PIDs, so
    # another user's running job is absent from /proc too: no "held by no live process" there.
    snap = _held_by_absent_pid(None, sees_every_pid=False)
    assert the(snap, "gpus.memory-in-use").status is Status.PASS


def test_unknown_whether_proc_lists_every_pid_is_no_evidence_either() -> None:
    snap = _held_by_absent_pid(None, sees_every_pid=None)
    assert the(snap, "gpus.memory-in-use").status is Status.PASS


@pytest.mark.parametrize("first", ["bash", "bwrap", "appinit", None])
def test_a_private_pid_namespace_without_container_markers_is_no_evidence(
    first: str | None,
) -> None:
    # unshare -p --mount-proc, bubblewrap, Apptainer --pid: PID 1 is the sandbox's own first
    # program and none of the driver's (host) PIDs is in this /proc.
    snap = _held_by_absent_pid(None, init_name=first)
    assert the(snap, "gpus.memory-in-use").status is Status.PASS


def test_the_reset_names_the_gpu_whose_holder_is_gone_not_the_busy_one() -> None:
    # GPU 0 busy with a live job (PID 4242 in /proc: this /proc is the driver's namespace),
    # GPU 1 holding 10151 MiB under a PID /proc lacks: only GPU 1 is worth a reset.
    snap = builders.h100_node(2)
    busy, dead = snap.nvml.gpus
    snap.processes = ProcessFacts(
        scanned=True, processes=[HostProcess(pid=4242, name="python")], sees_every_pid=True
    )
    busy.memory_used = int((busy.memory_total or 0) * 0.9)
    busy.processes = [GpuProcess(pid=4242, used_memory=busy.memory_used, kind="compute")]
    dead.memory_used = 10151 * MIB
    dead.processes = [GpuProcess(pid=3180842, used_memory=10151 * MIB, kind="compute")]
    f = the(snap, "gpus.memory-in-use")
    assert f.status is Status.WARN
    assert f.fix is not None
    assert "sudo nvidia-smi -r -i 1" in f.fix.commands
    assert not any("nvidia-smi -r -i 0" in c for c in f.fix.commands)


def test_a_busy_gpu_with_live_holders_only_gets_no_reset() -> None:
    snap = builders.h100_node(1)
    gpu = snap.nvml.gpus[0]
    snap.processes = ProcessFacts(
        scanned=True, processes=[HostProcess(pid=4242, name="python")], sees_every_pid=True
    )
    gpu.memory_used = int((gpu.memory_total or 0) * 0.9)
    gpu.processes = [GpuProcess(pid=4242, used_memory=gpu.memory_used, kind="compute")]
    f = the(snap, "gpus.memory-in-use")
    assert f.status is Status.WARN and f.fix is not None
    assert not any("nvidia-smi -r" in c for c in f.fix.commands)
