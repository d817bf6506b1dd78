"""The doctor and `gpucheck procs` on the same facts: holders the doctor names, PIDs inside and
outside containers, MIG instances, the JSON schema, the snapshot and redaction, hostile names,
and output that cannot be written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Simulate, run_gpucheck
from sim.scenario import (
    GIB,
    HostProcess,
    Process,
    Scenario,
    h100,
    replace,
)
from support.procs_run import DOCKER_ID, busy_node, procs, procs_json

# --- the doctor uses the same facts -----------------------------------------------------------


def test_doctor_names_hidden_holders_zombies_and_leaks_and_points_at_procs(
    simulate: Simulate,
) -> None:
    machine = simulate(busy_node())
    result = run_gpucheck(
        "doctor", "--json", "--only", "gpus.memory-in-use", env=machine.env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    (found,) = json.loads(result.stdout)["findings"]
    assert found["status"] == "warn"
    assert found["evidence"] == [
        "GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0): 40.5 GiB of 79.6 GiB used by PID 4242 "
        "python3 (40.0 GiB)",
        # On a host (no container), a PID NVML lists that /proc lacks holds memory for no
        # live process here: named, though under half the GPU.
        "GPU 1 (NVIDIA H100 80GB HBM3, 00000000:2A:00.0): 10.5 GiB of 79.6 GiB used by PID 91234 "
        "python (10.0 GiB) [not in /proc here: exited since, or in another PID namespace]",
        "GPU 2 (NVIDIA H100 80GB HBM3, 00000000:3A:00.0): 20.5 GiB of 79.6 GiB used; 20.5 GiB "
        "by no process listed (another container or VM, a leaked context, or the driver itself)",
        "GPU 3 (NVIDIA H100 80GB HBM3, 00000000:5D:00.0): 5.5 GiB of 79.6 GiB used by PID 5555 "
        "python3 (5.0 GiB) [zombie: exited, not reaped by its parent 4000]",
    ]
    fix = found["fix"]
    assert (
        "PID(s) 5555 exited but were not reaped: end or restart their parent (4000)" in fix["text"]
    )
    commands = [step["command"] for step in fix["steps"] if step["command"]]
    assert "gpucheck procs --kill 4242" in commands
    assert "gpucheck procs" in commands
    # The GPUs whose memory no live process holds: GPU 1's PID is gone (PID 4242, which NVML
    # also lists, is in /proc: this is the driver's namespace), GPU 2's memory is leaked.
    # GPU 0's live job is never reset under it.
    assert "sudo nvidia-smi -r -i 1,2" in commands


def test_doctor_names_a_holder_outside_the_namespace_on_a_full_gpu(simulate: Simulate) -> None:
    gpu = h100(0)
    gpu = replace(
        gpu, memory_used=gpu.memory_used + 60 * GIB, processes=[Process(91234, "python", 60 * GIB)]
    )
    machine = simulate(Scenario(gpus=[gpu, h100(1)]))
    result = run_gpucheck(
        "doctor", "--json", "--only", "gpus.memory-in-use", env=machine.env, timeout=60
    )
    (found,) = json.loads(result.stdout)["findings"]
    assert found["evidence"] == [
        "GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0): 60.5 GiB of 79.6 GiB used by PID 91234 "
        "python (60.0 GiB) [not in /proc here: exited since, or in another PID namespace]"
    ]
    assert found["fix"]["text"].startswith("Memory held by no process here: see every holder")
    assert found["fix"]["text"].endswith("; or use the other GPUs: `export CUDA_VISIBLE_DEVICES=1`")
    last = found["fix"]["steps"][-1]
    assert (last["command"], last["tool"], last["option"]) == (
        "export CUDA_VISIBLE_DEVICES=1",
        "env",
        1,
    )


def test_in_a_container_host_pids_are_shown_as_such_never_matched_by_guess(
    simulate: Simulate,
) -> None:
    """Inside a container with its own /proc NVML reports host PIDs. GPU 0's host PID 812345
    and PID 31 here (GPU 0's device open, no context NVML names) were merged as one process
    by guess, and --kill-mine then ended PID 31. NVML's 40, which is also a PID
    here, is a coincidence: a container's /proc does not speak the host's PIDs."""
    g0, g1 = h100(0), h100(1)
    g0 = replace(
        g0, memory_used=g0.memory_used + 12 * GIB, processes=[Process(812345, "python", 12 * GIB)]
    )
    g1 = replace(
        g1, memory_used=g1.memory_used + 3 * GIB, processes=[Process(40, "python", 3 * GIB)]
    )
    scenario = Scenario(
        gpus=[g0, g1],
        kernel_threads=False,  # the container's own /proc
        own_cgroup=f"0::/system.slice/docker-{DOCKER_ID}.scope",
        host_processes=[
            HostProcess(31, ["/dev/nvidia0", "/dev/nvidiactl"], cmdline=["sleep", "600"]),
            HostProcess(40, ["/dev/nvidia1"], cmdline=["python", "a.py"]),
        ],
    )
    machine = simulate(scenario)
    (machine.root / ".dockerenv").write_text("")
    doc = procs_json(machine)
    rows = {(p["pid"], p["visible"]): p for p in doc["processes"]}
    assert sorted(rows) == [(31, True), (40, False), (40, True), (812345, False)]
    assert (
        rows[(812345, False)]["local_pid"] is None and rows[(812345, False)]["memory"] == 12 * GIB
    )
    assert rows[(40, False)]["local_pid"] is None and rows[(40, False)]["memory"] == 3 * GIB
    assert rows[(31, True)]["memory"] == 0 and rows[(31, True)]["local_pid"] == 31
    assert rows[(40, True)]["memory"] == 0 and rows[(40, True)]["command"] == ["python", "a.py"]
    gpus = {g["index"]: g for g in doc["gpus"]}
    assert (gpus[0]["held_visible"], gpus[0]["held_outside"]) == (0, 12 * GIB)
    assert (gpus[1]["held_outside"], gpus[1]["outside_pids"]) == (3 * GIB, [40])
    assert (
        "NVML lists PIDs that are not in this container: the driver reports host PIDs (it does "
        "not know PID namespaces); their memory is shown as held outside, and they cannot be "
        "acted on from here"
    ) in doc["notes"]
    text = procs(machine).stdout
    assert "812345 (host)" in text
    assert "12.0 GiB held by processes outside this container (host PIDs 812345)" in text
    result = procs(machine, "--kill", "812345", "--yes")
    assert result.returncode == 1
    assert (
        "not ending PID 812345: NVML lists it, but it is not in this PID namespace (a host PID): "
        "end it where it runs"
    ) in result.stdout


def test_a_host_proc_seen_from_a_container_maps_host_pids_through_nspid(
    simulate: Simulate,
) -> None:
    """The host's /proc mounted in a container (nvidia-docker#1483): its PIDs are NVML's, and
    NSpid gives each the PID it has here, where it shares gpucheck's PID namespace."""
    here, there = "pid:[4026532201]", "pid:[4026532777]"
    gpu = replace(
        h100(0),
        memory_used=h100(0).memory_used + 9 * GIB,
        processes=[Process(812345, "python", 5 * GIB), Process(812346, "python", 4 * GIB)],
    )
    scenario = Scenario(
        gpus=[gpu],
        own_nspid=[812300, 12],
        own_pid_ns=here,
        host_processes=[
            HostProcess(812345, ["/dev/nvidia0"], nspid=[812345, 31], pid_ns=here),
            HostProcess(812346, ["/dev/nvidia0"], nspid=[812346, 31], pid_ns=there),
        ],
    )
    doc = procs_json(simulate(scenario))
    rows = {p["pid"]: p for p in doc["processes"]}
    assert (rows[812345]["local_pid"], rows[812345]["elsewhere"]) == (31, False)
    assert (rows[812346]["local_pid"], rows[812346]["elsewhere"]) == (None, True)
    assert doc["gpus"][0]["held_visible"] == 9 * GIB


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


def test_hostile_process_names_are_shown_escaped(simulate: Simulate) -> None:
    """A process names itself: control characters and rich markup are text, never acted on."""
    gpu = replace(h100(0), processes=[Process(6000, "x", 1 * GIB)])
    evil = HostProcess(
        6000, ["/dev/nvidia0"], name="\x1b]0;pwned\x07", cmdline=["[bold]x[/]", "\x1b[31mred"]
    )
    result = procs(simulate(Scenario(gpus=[gpu], host_processes=[evil])))
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "[bold]x[/] \\x1b[31mred" in result.stdout


def test_a_reader_that_goes_away_is_not_an_error(simulate: Simulate) -> None:
    env = {**os.environ, **simulate(busy_node()).env}
    out = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{sys.executable} -m gpucheck procs | head -c 10"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert out.stdout == "GPU 0  NVI"
    assert out.stderr == ""
    assert out.returncode == 0  # gpucheck's own status, through pipefail


def test_procs_output_that_cannot_be_written_is_exit_4(simulate: Simulate) -> None:
    env = {**os.environ, **simulate(busy_node()).env}
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "gpucheck", "procs", "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    assert result.returncode == 4
    assert result.stderr.startswith("gpucheck: cannot write the report to standard output:")


def test_a_redacted_snapshot_names_no_process_owner(simulate: Simulate) -> None:
    result = run_gpucheck("snapshot", "--redact", env=simulate(busy_node()).env, timeout=60)
    assert result.returncode == 0, result.stderr
    found = {p["pid"]: p for p in json.loads(result.stdout)["processes"]["processes"]}
    assert found[1300]["user"] == "<redacted>" and found[1300]["uid"] == 0  # root, everywhere
    assert found[4242]["devices"] == ["/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidiactl"]


@pytest.mark.parametrize("option", ["--grace", "--timeout"])
@pytest.mark.parametrize("value", ["nan", "NaN", "-nan"])
def test_not_a_number_of_seconds_is_a_usage_error(
    simulate: Simulate, option: str, value: str
) -> None:
    """click's range check lets NaN through: `--grace nan` ended with SIGKILL at
    once, `--timeout nan` was an internal error. Nothing is listed or ended."""
    machine = simulate(busy_node())
    result = procs(machine, option, value, "--kill", "4242", "--yes")
    assert result.returncode == 2
    assert result.stdout == ""
    bounds = {"--grace": "0 to 600", "--timeout": "0.5 to 600"}[option]
    assert result.stderr == f"gpucheck: {option}: nan is not a number from {bounds}\n"


@pytest.mark.parametrize(
    ("pid2", "expected"),
    [
        # kthreadd, as a host's /proc/2/stat reads (flags 0x208040: PF_KTHREAD set).
        ("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 9 0\n", True),
        # A container's PID 2: a shell started by `docker exec` (flags 0x400100).
        ("2 (bash) S 0 2 2 34816 2 4194560 0 0 0 0 0 0 0 0 20 0 1 0 4242 0\n", False),
        (None, False),  # a container with no PID 2
    ],
)
def test_this_proc_is_the_hosts_where_kernel_threads_show(
    tmp_path: Path, pid2: str | None, expected: bool
) -> None:
    from gpucheck.procs.view import kernel_threads_visible

    (tmp_path / "1").mkdir()
    if pid2 is not None:
        (tmp_path / "2").mkdir()
        (tmp_path / "2" / "stat").write_text(pid2)
    assert kernel_threads_visible(tmp_path) is expected
    assert kernel_threads_visible(tmp_path / "missing") is None


def test_start_time_and_namespaces_are_read_past_an_odd_command_name(tmp_path: Path) -> None:
    """One parser of /proc/PID/stat and NSpid serves the snapshot, the kill guard and the
    view: a command name with spaces and parentheses (the kernel keeps it as given) shifts no
    field, and a status without NSpid (Linux before 4.1) reads as no namespaces."""
    from gpucheck.probes.processes import nspid, read_process, status_fields
    from gpucheck.procs.signals import start_ticks

    folder = tmp_path / "4242"
    folder.mkdir()
    (folder / "stat").write_text(
        "4242 (a) S (b)) D 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 98765 0\n"
    )
    (folder / "status").write_text("Name:\ta) S (b\nState:\tD (disk sleep)\nNSpid:\t4242\t17\n")
    assert start_ticks(tmp_path, 4242) == (98765, "D")
    assert start_ticks(tmp_path, 4243) is None
    found = read_process(tmp_path, 4242)
    assert found is not None and found.nspid == [4242, 17] and found.state == "D"
    assert nspid(status_fields("Name:\tbash\nPid:\t12\n")) == []
