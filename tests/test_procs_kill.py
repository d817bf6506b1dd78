"""`gpucheck procs --kill` and `--kill-mine` on real child processes the tests start (listed
as GPU holders by a simulated machine whose /proc mirrors them): exactly what was asked is
ended, SIGTERM then SIGKILL after the grace period, freed memory reported, a terminal asked
first, and nothing unasked ended under any combination of the options."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Simulate, run_gpucheck
from sim.scenario import (
    GIB,
    MIB,
    HostProcess,
    Libraries,
    Machine,
    Process,
    Scenario,
    h100,
    replace,
)
from terminal import on_a_terminal


def procs(
    machine: Machine, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return run_gpucheck("procs", *args, env=machine.env, stdin=stdin, timeout=60)


# --- ending holders: real child processes ---------------------------------------------------


def sleeper(ignore_term: bool = False) -> subprocess.Popen[bytes]:
    code = "import signal, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "print('ready', flush=True)\ntime.sleep(600)\n"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def running(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is None


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


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
    assert f"will end  PID {target}" in out and "End 1 process(es)? [y/N]" in out
    assert "gpucheck: nothing was ended" in out
    assert all(running(p) for p in procs_)
    code, out = on_a_terminal(
        ["procs", "--kill", target, "--grace", "5"], {**os.environ, **machine.env}, b"y\n"
    )
    assert code == 0, out
    assert f"PID {target}: terminated: ended on SIGTERM" in out
    procs_[0].wait(timeout=5)
    assert all(running(p) for p in procs_[1:])


# --- a recycled PID never receives a signal ---------------------------------------------------

NAMESPACE = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc"]


def reuse_pid(mode: str, sim_libs: Libraries, folder: Path) -> dict[str, Any]:
    """tests/pid_reuse.py in a new PID namespace: the confirmed process exits during --grace
    and a newcomer is started under its very PID (a real reuse, forced through ns_last_pid)."""
    if shutil.which("unshare") is None:
        pytest.fail("needs unshare(1): apt-get install util-linux", pytrace=False)
    libs = {
        "build": str(sim_libs.build_dir),
        "compiler": sim_libs.compiler,
        "object": str(sim_libs.nvml_object),
        "nvml": str(sim_libs.nvml),
        "cuda": str(sim_libs.cuda),
    }
    script = Path(__file__).parent / "pid_reuse.py"
    result = subprocess.run(
        [*NAMESPACE, sys.executable, str(script), mode, json.dumps(libs), str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if "unshare failed" in result.stderr or "unshare:" in result.stderr:
        pytest.fail(
            "needs unprivileged user and PID namespaces (unshare --user --pid): "
            f"{result.stderr.strip()} (sysctl kernel.unprivileged_userns_clone=1, or on "
            "Ubuntu 24.04 kernel.apparmor_restrict_unprivileged_userns=0)",
            pytrace=False,
        )
    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    assert found["b_pid"] == found["a_pid"], found  # the PID really was reused
    return found


def test_a_pid_reused_during_grace_gets_no_sigkill(sim_libs: Libraries, tmp_path: Path) -> None:
    """`gpucheck procs --kill A --grace 4`: A has SIGTERM, exits, and B is started as A's PID
    before the grace period ends. Signals go through the pidfd taken when A was confirmed, so
    the pidfd sees A's exit and B gets nothing (with kill(PID), B got the SIGKILL)."""
    found = reuse_pid("cli", sim_libs, tmp_path)
    assert found["b_alive"] is True and found["b_said"] is None, found
    assert found["rc"] == 0, found
    (action,) = found["actions"]
    assert (action["outcome"], action["detail"], action["guard"]) == (
        "terminated",
        "ended on SIGTERM",
        "pidfd",
    )


def test_without_pidfd_the_start_time_check_spares_the_new_owner(
    sim_libs: Libraries, tmp_path: Path
) -> None:
    """The fallback where pidfd is missing: the start time is read again before SIGKILL, and a
    PID whose start time changed is another process's: its original has exited."""
    found = reuse_pid("start-time", sim_libs, tmp_path)
    assert found["b_alive"] is True and found["b_said"] is None, found
    assert found["actions"] == [
        {"outcome": "terminated", "detail": "ended on SIGTERM", "guard": "start time"}
    ]


def test_the_ender_with_a_pidfd_spares_the_new_owner(sim_libs: Libraries, tmp_path: Path) -> None:
    found = reuse_pid("pidfd", sim_libs, tmp_path)
    assert found["b_alive"] is True and found["b_said"] is None, found
    assert found["actions"] == [
        {"outcome": "terminated", "detail": "ended on SIGTERM", "guard": "pidfd"}
    ]


# --- whose processes "mine" means, and which PIDs can be acted on from here -------------------

DOCKER = "0::/system.slice/docker-{}.scope".format("ab" * 32)


def test_kill_mine_never_ends_a_host_pid_or_a_local_pid_that_shares_its_number(
    simulate: Simulate, children: list[subprocess.Popen[bytes]]
) -> None:
    """In a container with its own /proc (#21 item 6): NVML names host PID 812345 on GPU 0,
    where `sleeper` here has the device open with no context NVML names (they were merged by
    guess); on GPU 1 NVML names a host PID that equals `bystander`'s PID here. Both survive."""
    sleeping, bystander = sleeper(), sleeper()
    children += [sleeping, bystander]
    g0 = replace(h100(0), processes=[Process(812345, "python3", 20 * GIB)])
    g1 = replace(h100(1), processes=[Process(bystander.pid, "python3", 8 * GIB)])
    machine = simulate(
        Scenario(
            gpus=[g0, g1],
            live_processes=False,  # the fake NVML would look for 812345 in the real /proc
            kernel_threads=False,
            host_processes=[
                HostProcess(sleeping.pid, ["/dev/nvidia0"], mirror=True),
                HostProcess(bystander.pid, ["/dev/nvidia1"], mirror=True),
            ],
        )
    )
    (machine.root / ".dockerenv").write_text("")
    result = procs(machine, "--kill-mine", "--yes", "--grace", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Nothing to end: none of your processes has a compute context on a GPU." in result.stdout
    result = procs(machine, "--kill", "812345", "--yes", "--grace", "1")
    assert result.returncode == 1
    time.sleep(0.2)
    assert running(sleeping) and running(bystander)


def test_kill_mine_through_a_host_proc_signals_the_pid_nspid_gives_here(
    simulate: Simulate, children: list[subprocess.Popen[bytes]]
) -> None:
    """The host's /proc seen from a container: host PID 812345 is `job` here (NSpid, same PID
    namespace as gpucheck), host PID 812346 is in a sibling container's namespace."""
    job, sibling = sleeper(), sleeper()
    children += [job, sibling]
    here, there = "pid:[4026532201]", "pid:[4026532777]"
    gpu = replace(
        h100(0),
        processes=[Process(812345, "python3", 5 * GIB), Process(812346, "python3", 4 * GIB)],
    )
    machine = simulate(
        Scenario(
            gpus=[gpu],
            live_processes=False,  # the fake NVML would look for 812345 in the real /proc
            own_nspid=[812300, os.getpid()],
            own_pid_ns=here,
            host_processes=[
                HostProcess(
                    812345,
                    ["/dev/nvidia0"],
                    mirror=True,
                    mirror_pid=job.pid,
                    nspid=[812345, job.pid],
                    pid_ns=here,
                ),
                HostProcess(
                    812346,
                    ["/dev/nvidia0"],
                    mirror=True,
                    mirror_pid=sibling.pid,
                    nspid=[812346, sibling.pid],
                    pid_ns=there,
                ),
            ],
        )
    )
    result = procs(machine, "--kill-mine", "--yes", "--grace", "5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"will end  PID {job.pid} " in result.stdout
    assert f"PID {job.pid}: terminated: ended on SIGTERM" in result.stdout
    job.wait(timeout=5)
    assert running(sibling)
    result = procs(machine, "--kill", "812346", "--yes")
    assert result.returncode == 1
    assert (
        "not ending PID 812346: it is in another PID namespace than gpucheck's: it cannot be "
        "acted on from here; end it where it runs"
    ) in result.stdout
    assert running(sibling)


def procs_as_sudo(machine: Machine, sudo_uid: int, *args: str) -> subprocess.CompletedProcess[str]:
    """gpucheck as root run through sudo by user `sudo_uid`: root in a user namespace (so the
    test needs no root), SUDO_UID set as sudo sets it."""
    if shutil.which("unshare") is None:
        pytest.fail("needs unshare(1): apt-get install util-linux", pytrace=False)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env.update(machine.env, SUDO_UID=str(sudo_uid), SUDO_USER="alice")
    return subprocess.run(
        ["unshare", "--user", "--map-root-user", sys.executable, "-m", "gpucheck", "procs", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_sudo_kill_mine_ends_only_the_invoking_users_jobs_in_this_container(
    simulate: Simulate, children: list[subprocess.Popen[bytes]]
) -> None:
    """`sudo gpucheck procs --kill-mine` (#21 item 7): "mine" was root's, so every root job
    (another container's training run included) was ended. Now it is SUDO_UID's, in
    gpucheck's own container: `ours` ends; `roots` (root's, another container) and `theirs`
    (the same user's, in another container) are listed and survive; named, `theirs` ends."""
    ours, roots, theirs = sleeper(), sleeper(), sleeper()
    children += [ours, roots, theirs]
    gpu = replace(
        h100(0),
        processes=[Process(p.pid, "python3", 4 * GIB) for p in (ours, roots, theirs)],
    )
    machine = simulate(
        Scenario(
            gpus=[gpu],
            live_processes=True,
            host_processes=[
                HostProcess(ours.pid, ["/dev/nvidia0"], mirror=True, mirror_uid=4242),
                HostProcess(
                    roots.pid, ["/dev/nvidia0"], mirror=True, mirror_uid=0, mirror_cgroup=DOCKER
                ),
                HostProcess(
                    theirs.pid, ["/dev/nvidia0"], mirror=True, mirror_uid=4242, mirror_cgroup=DOCKER
                ),
            ],
        )
    )
    result = procs_as_sudo(machine, 4242, "--kill-mine", "--yes", "--grace", "5")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"will end  PID {ours.pid} " in result.stdout
    assert (
        f"not ending PID {theirs.pid}: it is in another container (abababababab) than gpucheck: "
        "--kill-mine ends only this container's; name it with --kill to end it"
    ) in result.stdout
    assert f"PID {roots.pid}" not in result.stdout
    ours.wait(timeout=5)
    time.sleep(0.2)
    assert running(roots) and running(theirs)
    result = procs_as_sudo(machine, 4242, "--kill", str(roots.pid), "--yes")
    assert result.returncode == 1
    assert f"not ending PID {roots.pid}: it belongs to" in result.stdout
    assert ": add --force to end another user's" in result.stdout
    result = procs_as_sudo(machine, 4242, "--kill", str(theirs.pid), "--yes", "--grace", "5")
    assert result.returncode == 0, result.stdout + result.stderr
    theirs.wait(timeout=5)
    assert running(roots)


@pytest.mark.parametrize(
    ("mode", "guard"), [("send-pidfd", "pidfd"), ("send-start-time", "start time")]
)
def test_a_signal_to_a_confirmed_process_that_exited_reaches_no_one(
    sim_libs: Libraries, tmp_path: Path, mode: str, guard: str
) -> None:
    """The confirmed process exits and its PID goes to a newcomer before SIGTERM is sent: the
    pidfd refuses (the process it names is gone), and so does the start-time check."""
    found = reuse_pid(mode, sim_libs, tmp_path)
    assert found["b_alive"] is True and found["b_said"] is None, found
    assert found["actions"] == [{"sent": False, "exited": True, "guard": guard}]
