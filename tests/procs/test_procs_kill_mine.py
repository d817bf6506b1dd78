"""`gpucheck procs --kill` and `--kill-mine` where PIDs are not what they seem: a recycled PID
never receives a signal, and "mine" means the invoking user's processes, with host and
namespaced PIDs kept apart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Simulate
from sim.scenario import (
    GIB,
    HostProcess,
    Libraries,
    Machine,
    Process,
    Scenario,
    h100,
    replace,
)
from support.procs_children import children as children  # the fixture
from support.procs_children import running, sleeper
from support.procs_run import procs

# --- a recycled PID never receives a signal ---------------------------------------------------

NAMESPACE = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc"]


def reuse_pid(mode: str, sim_libs: Libraries, folder: Path) -> dict[str, Any]:
    """tests/support/pid_reuse.py in a new PID namespace: the confirmed process exits during --grace
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
    script = Path(__file__).parents[1] / "support" / "pid_reuse.py"
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
    """In a container with its own /proc: NVML names host PID 812345 on GPU 0,
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
    """`sudo gpucheck procs --kill-mine`: "mine" was root's, so every root job
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
