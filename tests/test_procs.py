"""`gpucheck procs` on simulated machines: NVML's processes and a fake /proc's device holders
merged per PID, hidden holders, zombie contexts and leaked memory said in words, and --kill
ending exactly what it was asked to end, proven on real child processes the tests start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Simulate, run_gpucheck
from sim.scenario import GIB, MIB, HostProcess, Machine, Process, Scenario, h100, replace

from gpucheck.probes.processes import parse_cgroup

DOCKER_ID = "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708"


# --- cgroup paths, as the runtimes write them ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "container", "pod"),
    [
        # Docker with the systemd cgroup driver (cgroup v2).
        (f"0::/system.slice/docker-{DOCKER_ID}.scope\n", DOCKER_ID, None),
        # Docker with the cgroupfs driver (cgroup v1: the first line naming it wins).
        (f"12:memory:/docker/{DOCKER_ID}\n11:cpu:/docker/{DOCKER_ID}\n", DOCKER_ID, None),
        # Kubernetes on containerd, systemd driver: the pod uid with underscores.
        (
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
            "0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice/cri-containerd-"
            f"{DOCKER_ID}.scope\n",
            DOCKER_ID,
            "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        ),
        # CRI-O.
        (
            f"0::/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/crio-{DOCKER_ID}\n",
            DOCKER_ID,
            "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        ),
        # Podman.
        (
            f"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{DOCKER_ID}.scope\n",
            DOCKER_ID,
            None,
        ),
        # A login session: no container.
        ("0::/user.slice/user-1000.slice/session-3.scope\n", None, None),
    ],
)
def test_container_ids_from_cgroup_paths(text: str, container: str | None, pod: str | None) -> None:
    _, found, found_pod = parse_cgroup(text)
    assert (found, found_pod) == (container, pod)


# --- listing ---------------------------------------------------------------------------------


def procs(
    machine: Machine, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return run_gpucheck("procs", *args, env=machine.env, stdin=stdin, timeout=60)


def procs_json(machine: Machine, *args: str) -> dict[str, Any]:
    result = procs(machine, "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def busy_node() -> Scenario:
    """GPU 0: a training job (visible, device file open). GPU 1: a job NVML lists under a
    PID this /proc lacks (another namespace), and a fuser-only holder. GPU 2: 20 GiB used by
    no process. GPU 3: a zombie's context. Plus nvidia-persistenced on /dev/nvidiactl only."""
    gpus = [h100(i) for i in range(4)]
    gpus[0] = replace(
        gpus[0],
        memory_used=gpus[0].memory_used + 40 * GIB,
        processes=[Process(4242, "python3", 40 * GIB)],
    )
    gpus[1] = replace(
        gpus[1],
        memory_used=gpus[1].memory_used + 10 * GIB,
        processes=[Process(91234, "python", 10 * GIB)],
    )
    gpus[2] = replace(gpus[2], memory_used=gpus[2].memory_used + 20 * GIB)
    gpus[3] = replace(
        gpus[3],
        memory_used=gpus[3].memory_used + 5 * GIB,
        processes=[Process(5555, "python3", 5 * GIB)],
    )
    return Scenario(
        gpus=gpus,
        host_processes=[
            HostProcess(
                4242,
                ["/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidiactl"],
                cmdline=["python3", "train.py", "--epochs", "90"],
                uid=1000,
                cgroup=f"0::/system.slice/docker-{DOCKER_ID}.scope",
                nspid=[4242, 17],
            ),
            HostProcess(7777, ["/dev/nvidia1", "/dev/nvidiactl"], name="dcgm", cmdline=["dcgm"]),
            HostProcess(5555, [], name="python3", state="Z (zombie)", ppid=4000, cmdline=[]),
            HostProcess(
                1300,
                ["/dev/nvidiactl"],
                name="nvidia-persiste",
                cmdline=["/usr/bin/nvidia-persistenced", "--user", "nvidia-persistenced"],
                uid=0,
            ),
        ],
    )


def test_procs_merges_nvml_and_proc_per_pid(simulate: Simulate) -> None:
    doc = procs_json(simulate(busy_node()))
    assert doc["schema_version"] == "1.0"
    rows = {p["pid"]: p for p in doc["processes"]}
    assert sorted(rows) == [1300, 4242, 5555, 7777, 91234]
    job = rows[4242]
    assert job["visible"] is True
    assert job["command"] == ["python3", "train.py", "--epochs", "90"]
    assert job["uid"] == 1000
    assert job["state"] == "running"
    assert job["container_id"] == DOCKER_ID
    assert job["nspid"] == [4242, 17]
    assert job["devices"] == ["/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidiactl"]
    assert job["memory"] == 40 * GIB
    assert job["gpus"] == [
        {
            "gpu": 0,
            "uuid": "GPU-00000000-0000-0000-0000-000000000000",
            "used_memory": 40 * GIB,
            "kind": "compute",
            "gpu_instance_id": None,
            "compute_instance_id": None,
        }
    ]
    # btime 1763880000 (2025-11-23 06:40:00 UTC) + 1_000_000 ticks / 100 Hz (2 h 46 min 40 s)
    assert job["start_time"] == "2025-11-23T09:26:40+00:00"
    # The fuser view: a device file open, no context NVML knows of.
    assert rows[7777]["gpus"] == [
        {
            "gpu": 1,
            "uuid": "GPU-00000001-0000-0000-0000-000000000000",
            "used_memory": None,
            "kind": None,
            "gpu_instance_id": None,
            "compute_instance_id": None,
        }
    ]
    assert rows[1300]["gpus"] == [] and rows[1300]["devices"] == ["/dev/nvidiactl"]
    assert rows[91234]["visible"] is False and rows[91234]["command"] is None
    assert rows[5555]["state"] == "zombie"
    # Biggest holder first.
    assert [p["pid"] for p in doc["processes"]][:3] == [4242, 91234, 5555]


def test_procs_accounts_for_hidden_holders_zombies_and_leaks(simulate: Simulate) -> None:
    doc = procs_json(simulate(busy_node()))
    gpus = {g["index"]: g for g in doc["gpus"]}
    assert gpus[0]["held_visible"] == 40 * GIB and gpus[0]["leaked"] is False
    assert gpus[1]["held_outside"] == 10 * GIB and gpus[1]["outside_pids"] == [91234]
    assert gpus[1]["leaked"] is False
    assert gpus[2]["unaccounted"] == 20 * GIB + 479 * MIB
    assert gpus[2]["leaked"] is True
    assert "`gpucheck procs`" in gpus[2]["leak_causes"]
    assert "`sudo nvidia-smi --gpu-reset -i 2`" in gpus[2]["leak_causes"]
    assert gpus[3]["zombie_pids"] == [5555]
    assert any("host PIDs" in n for n in doc["notes"])


def test_procs_table_for_a_person(simulate: Simulate) -> None:
    result = procs(simulate(busy_node()))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "GPU 0  NVIDIA H100 80GB HBM3  40.5 GiB of 79.6 GiB used" in out
    assert "python3 train.py --epochs 90" in out
    assert "3f2a1b4c5d6e" in out  # the short container id
    assert "10.0 GiB held by processes outside this container/namespace (host PIDs 91234)" in out
    assert "zombie context(s): PID 5555" in out
    assert "20.5 GiB used by no process listed" in out
    assert "Driver only (device files open, no GPU context)" in out
    assert "/usr/bin/nvidia-persistenced" in out


def test_procs_gpu_filter_by_index_and_uuid(simulate: Simulate) -> None:
    machine = simulate(busy_node())
    by_index = procs_json(machine, "--gpu", "1")
    by_uuid = procs_json(machine, "--gpu", "GPU-00000001")
    for doc in (by_index, by_uuid):
        assert [g["index"] for g in doc["gpus"]] == [1]
        assert sorted(p["pid"] for p in doc["processes"]) == [7777, 91234]


def test_procs_unknown_gpu_is_a_usage_error(simulate: Simulate) -> None:
    result = procs(simulate(busy_node()), "--gpu", "9")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpucheck: --gpu 9: no such GPU (GPUs: 0 (GPU-")


def test_procs_without_a_driver_lists_proc_holders_and_says_why(
    simulate: Simulate,
) -> None:
    scenario = Scenario(gpus=[h100(0)], module_loaded=False)
    scenario.host_processes = [HostProcess(3131, ["/dev/nvidiactl"], name="Xorg", cmdline=["Xorg"])]
    doc = procs_json(simulate(scenario))
    assert doc["gpus"] == []
    assert [p["pid"] for p in doc["processes"]] == [3131]
    assert doc["notes"][0].startswith("NVML not asked: nvmlInit not called")


def test_force_and_yes_without_kill_are_usage_errors(simulate: Simulate) -> None:
    machine = simulate(busy_node())
    for flag in ("--force", "--yes"):
        result = procs(machine, flag)
        assert result.returncode == 2
        assert result.stderr == f"gpucheck: {flag} goes with --kill or --kill-mine\n"


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


# --- the doctor uses the same facts -----------------------------------------------------------


def test_doctor_names_hidden_holders_zombies_and_leaks_and_points_at_procs(
    simulate: Simulate,
) -> None:
    machine = simulate(busy_node())
    result = run_gpucheck(
        "doctor", "--json", "--only", "gpu.memory-in-use", env=machine.env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    (found,) = json.loads(result.stdout)["findings"]
    assert found["status"] == "warn"
    assert found["evidence"] == [
        "GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0): 40.5 GiB of 79.6 GiB used by PID 4242 "
        "python3 (40.0 GiB)",
        "GPU 2 (NVIDIA H100 80GB HBM3, 00000000:3A:00.0): 20.5 GiB of 79.6 GiB used; 20.5 GiB "
        "by no process listed (another container or VM, a leaked context, or the driver itself)",
        "GPU 3 (NVIDIA H100 80GB HBM3, 00000000:5D:00.0): 5.5 GiB of 79.6 GiB used by PID 5555 "
        "python3 (5.0 GiB) [zombie: exited, not reaped by its parent 4000]",
    ]
    fix = found["fix"]
    assert (
        "PID(s) 5555 exited but were not reaped: end or restart their parent (4000)" in fix["text"]
    )
    assert "gpucheck procs --kill 4242" in fix["commands"]
    assert "gpucheck procs" in fix["commands"]
    assert "sudo nvidia-smi --gpu-reset -i 2" in fix["commands"]


def test_doctor_names_a_holder_outside_the_namespace_on_a_full_gpu(simulate: Simulate) -> None:
    gpu = h100(0)
    gpu = replace(
        gpu, memory_used=gpu.memory_used + 60 * GIB, processes=[Process(91234, "python", 60 * GIB)]
    )
    machine = simulate(Scenario(gpus=[gpu, h100(1)]))
    result = run_gpucheck(
        "doctor", "--json", "--only", "gpu.memory-in-use", env=machine.env, timeout=60
    )
    (found,) = json.loads(result.stdout)["findings"]
    assert found["evidence"] == [
        "GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0): 60.5 GiB of 79.6 GiB used by PID 91234 "
        "python (60.0 GiB) [not in this PID namespace: a host PID, another container's]"
    ]
    assert found["fix"]["text"].startswith("Memory held by no process here: see every holder")
    assert found["fix"]["text"].endswith("; or use the other GPUs (CUDA_VISIBLE_DEVICES)")


def test_in_a_container_the_one_unattributed_holder_is_matched_to_the_host_pid(
    simulate: Simulate,
) -> None:
    """Inside a container NVML reports host PIDs. GPU 0's job is PID 31 here and 812345 on the
    host; GPU 1's two host PIDs cannot be told apart from its two local holders: left alone."""
    g0, g1 = h100(0), h100(1)
    g0 = replace(
        g0, memory_used=g0.memory_used + 12 * GIB, processes=[Process(812345, "python", 12 * GIB)]
    )
    g1 = replace(
        g1,
        memory_used=g1.memory_used + 6 * GIB,
        processes=[Process(812400, "python", 3 * GIB), Process(812401, "python", 3 * GIB)],
    )
    scenario = Scenario(
        gpus=[g0, g1],
        host_processes=[
            HostProcess(31, ["/dev/nvidia0", "/dev/nvidiactl"], cmdline=["python", "train.py"]),
            HostProcess(40, ["/dev/nvidia1"], cmdline=["python", "a.py"]),
            HostProcess(41, ["/dev/nvidia1"], cmdline=["python", "b.py"]),
        ],
    )
    machine = simulate(scenario)
    (machine.root / ".dockerenv").write_text("")
    doc = procs_json(machine)
    rows = {p["pid"]: p for p in doc["processes"]}
    assert sorted(rows) == [31, 40, 41, 812400, 812401]
    assert rows[31]["nvml_pid"] == 812345 and rows[31]["memory"] == 12 * GIB
    assert rows[31]["visible"] is True
    gpus = {g["index"]: g for g in doc["gpus"]}
    assert (gpus[0]["held_visible"], gpus[0]["held_outside"]) == (12 * GIB, 0)
    assert (gpus[1]["held_outside"], gpus[1]["outside_pids"]) == (6 * GIB, [812400, 812401])
    assert (
        "PID 31 here is NVML's PID 812345 (a host PID): the only process with GPU 0 open that "
        "NVML does not name, and the only PID NVML names that is not here"
    ) in doc["notes"]
    assert any(n.startswith("NVML lists PIDs that are not in this container") for n in doc["notes"])
    text = procs(machine).stdout
    assert "31 (host 812345)" in text
    assert (
        "6.0 GiB held by processes outside this container/namespace (host PIDs 812400, 812401)"
        in text
    )


def test_mig_instances_show_per_process(simulate: Simulate) -> None:
    from sim.scenario import a100_mig

    gpu = a100_mig()
    gpu = replace(
        gpu,
        memory_used=gpu.memory_used + 9 * GIB,
        processes=[Process(2500, "python", 9 * GIB, gpu_instance=3, compute_instance=0)],
    )
    doc = procs_json(simulate(Scenario(gpus=[gpu])))
    (row,) = doc["processes"]
    assert row["gpus"][0]["gpu_instance_id"] == 3 and row["gpus"][0]["compute_instance_id"] == 0
    assert row["gpus"][0]["used_memory"] == 9 * GIB


def test_procs_json_follows_its_schema(simulate: Simulate) -> None:
    import jsonschema

    schema = run_gpucheck("schema", "--procs")
    assert schema.returncode == 0
    doc = procs_json(simulate(busy_node()))
    jsonschema.validate(doc, json.loads(schema.stdout))
    assert json.loads(schema.stdout)["$defs"]["ProcessRow"]["required"][:2] == ["pid", "visible"]


def _on_a_terminal(args: list[str], env: dict[str, str], answer: bytes) -> tuple[int, str]:
    """Run gpucheck with a pseudo-terminal as stdin/stdout, answering its question."""
    import pty
    import select

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, **env},
    )
    os.close(follower)
    out = b""
    answered = False
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if not answered and b"[y/N]" in out:
                os.write(leader, answer)
                answered = True
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    return proc.returncode, out.decode("utf-8", "replace")


def test_on_a_terminal_it_asks_first_and_no_means_nothing_ends(
    simulate: Simulate, children: list[subprocess.Popen[bytes]]
) -> None:
    procs_ = [sleeper() for _ in range(4)]
    children += procs_
    machine = holder_machine(simulate, *(p.pid for p in procs_))
    target = str(procs_[0].pid)
    code, out = _on_a_terminal(["procs", "--kill", target], machine.env, b"n\n")
    assert code == 1, out
    assert f"will end  PID {target}" in out and "End 1 process(es)? [y/N]" in out
    assert "gpucheck: nothing was ended" in out
    assert all(running(p) for p in procs_)
    code, out = _on_a_terminal(["procs", "--kill", target, "--grace", "5"], machine.env, b"y\n")
    assert code == 0, out
    assert f"PID {target}: terminated: ended on SIGTERM" in out
    procs_[0].wait(timeout=5)
    assert all(running(p) for p in procs_[1:])


def test_the_doctors_snapshot_holds_the_holders_but_no_command_lines(simulate: Simulate) -> None:
    """Snapshots travel (fleets, bug threads): a command line may carry a token."""
    result = run_gpucheck("snapshot", env=simulate(busy_node()).env, timeout=60)
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)["processes"]
    assert facts["scanned"] is True
    found = {p["pid"]: p for p in facts["processes"]}
    assert sorted(found) == [1300, 4242, 5555, 7777]
    assert found[4242]["devices"] == ["/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidiactl"]
    assert found[4242]["container_id"] == DOCKER_ID
    assert all(p["cmdline"] is None for p in facts["processes"])
