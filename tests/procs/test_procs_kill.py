"""`gpucheck procs --kill` on real child processes the tests start (listed as GPU holders by a
simulated machine whose /proc mirrors them): exactly what was asked is ended, SIGTERM then
SIGKILL after the grace period, freed memory reported, a terminal asked first, and nothing
unasked ended under any combination of the options."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from conftest import Simulate
from sim.scenario import (
    GIB,
    MIB,
    HostProcess,
    Machine,
    Process,
    Scenario,
    h100,
    replace,
)
from support.procs_children import children as children  # the fixture
from support.procs_children import running, sleeper
from support.procs_run import procs
from support.terminal import on_a_terminal

# --- ending holders: real child processes ---------------------------------------------------


def holder_machine(
    simulate: Simulate,
    job: int,
    other_job: int,
    others: int,
    bystander: int,
    desktop: int | None = None,
) -> Machine:
    """GPU 0 held by `job`, GPU 1 by `other_job` (both the caller's), GPU 0 also by `others`
    (the same caller in truth, but /proc says uid 4242: another user's). `bystander` is one of
    the caller's processes with no GPU. All four are real processes."""
    gpus = [h100(0), h100(1)]
    gpus[0] = replace(
        gpus[0],
        memory_used=gpus[0].memory_used + 30 * GIB,
        processes=[Process(job, "python3", 20 * GIB), Process(others, "python3", 10 * GIB)],
    )
    gpus[1] = replace(
        gpus[1],
        memory_used=gpus[1].memory_used + 8 * GIB,
        processes=[Process(other_job, "python3", 8 * GIB)],
    )
    return simulate(
        Scenario(
            gpus=gpus,
            live_processes=True,
            host_processes=[
                HostProcess(job, ["/dev/nvidia0", "/dev/nvidiactl"], mirror=True),
                HostProcess(other_job, ["/dev/nvidia1", "/dev/nvidiactl"], mirror=True),
                HostProcess(others, ["/dev/nvidia0"], mirror=True, mirror_uid=4242),
                HostProcess(bystander, [], mirror=True),
                *([HostProcess(desktop, ["/dev/nvidia0"], mirror=True)] if desktop else []),
            ],
        )
    )


def test_kill_ends_the_named_holder_and_reports_freed_memory(
    simulate: Simulate, children: list[subprocess.Popen[bytes]]
) -> None:
    job, other_job, others, bystander = (sleeper() for _ in range(4))
    children += [job, other_job, others, bystander]
    machine = holder_machine(simulate, job.pid, other_job.pid, others.pid, bystander.pid)
    result = procs(machine, "--kill", str(job.pid), "--yes", "--grace", "5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"will end  PID {job.pid}" in result.stdout
    assert f"PID {job.pid}: terminated: ended on SIGTERM" in result.stdout
    assert "GPU 0: 30.5 GiB -> 10.5 GiB used (20.0 GiB freed)" in result.stdout
    job.wait(timeout=5)
    assert running(other_job) and running(others) and running(bystander)


def test_kill_escalates_to_sigkill_after_the_grace_period(
    simulate: Simulate, children: list[subprocess.Popen[bytes]]
) -> None:
    stubborn = sleeper(ignore_term=True)
    rest = [sleeper() for _ in range(3)]
    children += [stubborn, *rest]
    machine = holder_machine(simulate, stubborn.pid, *(p.pid for p in rest))
    result = procs(machine, "--json", "--kill", str(stubborn.pid), "--yes", "--grace", "0.5")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["actions"] == [
        {
            "pid": stubborn.pid,
            "decision": "end",
            "reason": doc["actions"][0]["reason"],
            "outcome": "killed",
            "detail": "still alive 0.5 s after SIGTERM: ended with SIGKILL",
            "guard": "pidfd",
        }
    ]
    assert {"gpu": 0, "before": 479 * MIB + 30 * GIB, "after": 479 * MIB + 10 * GIB} in doc[
        "memory"
    ]
    assert stubborn.wait(timeout=5) == -9


def test_kill_without_a_terminal_or_yes_ends_nothing(
    simulate: Simulate, children: list[subprocess.Popen[bytes]]
) -> None:
    procs_ = [sleeper() for _ in range(4)]
    children += procs_
    machine = holder_machine(simulate, *(p.pid for p in procs_))
    result = procs(machine, "--kill", str(procs_[0].pid), stdin="y\n")
    assert result.returncode == 2
    assert result.stderr == (
        "gpucheck: ending processes asks for confirmation: run on a terminal, or add --yes "
        "(nothing was ended)\n"
    )
    assert all(running(p) for p in procs_)


@pytest.mark.slow
def test_nothing_unasked_is_ever_ended(
    simulate: Simulate, children: list[subprocess.Popen[bytes]]
) -> None:
    """Every combination of the options, on real processes: only a named caller's holder (of
    the --gpu asked, if any) or, with --kill-mine, the caller's holders of that GPU end. The
    bystander (the caller's, no GPU), a "desktop" of the caller's with GPU 0's device file
    open and no compute context, the holder /proc says is another user's, PID 1 and the test
    itself (gpucheck's parent) survive every one."""
    parent = os.getpid()
    combos = [
        (named, mine, force, gpu)
        for named in ("none", "job", "job+1", "job+parent", "bystander", "others")
        for mine in (False, True)
        for force in (False, True)
        for gpu in (None, "1")
        if named != "none" or mine
    ]
    for named, mine, force, gpu in combos:
        job, other_job, others, bystander, desktop = (sleeper() for _ in range(5))
        children += [job, other_job, others, bystander, desktop]
        machine = holder_machine(
            simulate, job.pid, other_job.pid, others.pid, bystander.pid, desktop.pid
        )
        pids = {
            "none": [],
            "job": [job.pid],
            "job+1": [job.pid, 1],
            "job+parent": [job.pid, parent],
            "bystander": [bystander.pid],
            "others": [others.pid],
        }[named]
        args = [a for pid in pids for a in ("--kill", str(pid))]
        args += ["--kill-mine"] * mine + ["--force"] * force + ["--yes", "--grace", "2"]
        args += ["--gpu", gpu] if gpu is not None else []
        result = procs(machine, *args)
        label = f"{named=} {mine=} {force=} {gpu=}: {result.stdout}{result.stderr}"
        # What may end, by the rules: a named caller's holder of the GPU asked, or with
        # --kill-mine the caller's holders of it; as root with --force, a named other's too.
        job_may_end = (named.startswith("job") or mine) and gpu in (None, "0")
        other_job_may_end = mine and gpu in (None, "1")
        others_may_end = named == "others" and force and os.getuid() == 0 and gpu in (None, "0")
        time.sleep(0.1)
        assert running(job) != job_may_end, label
        assert running(other_job) != other_job_may_end, label
        assert running(others) != others_may_end, label
        assert running(bystander), label
        assert running(desktop), label
        assert os.getpid() == parent
        # Exit 0 only when everything asked for was ended.
        expect_ok = (
            named == "none"
            or (named == "job" and job_may_end)
            or (named == "others" and others_may_end)
        )
        assert (result.returncode == 0) == expect_ok, label
        for p in (job, other_job, others, bystander, desktop):
            if p.poll() is None:
                p.kill()
            p.wait()


def test_on_a_terminal_it_asks_first_and_no_means_nothing_ends(
    simulate: Simulate, children: list[subprocess.Popen[bytes]]
) -> None:
    procs_ = [sleeper() for _ in range(4)]
    children += procs_
    machine = holder_machine(simulate, *(p.pid for p in procs_))
    target = str(procs_[0].pid)
    code, out = on_a_terminal(["procs", "--kill", target], {**os.environ, **machine.env}, b"n\n")
    assert code == 1, out
    assert f"will end  PID {target}" in out and "End 1 process? [y/N]" in out
    assert "gpucheck: nothing was ended" in out
    assert all(running(p) for p in procs_)
    code, out = on_a_terminal(
        ["procs", "--kill", target, "--grace", "5"], {**os.environ, **machine.env}, b"y\n"
    )
    assert code == 0, out
    assert f"PID {target}: terminated: ended on SIGTERM" in out
    procs_[0].wait(timeout=5)
    assert all(running(p) for p in procs_[1:])
