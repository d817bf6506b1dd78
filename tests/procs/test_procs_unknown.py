"""`gpucheck procs` where it could not ask: NVML's process query failing (error
999), crashing, timing out or NVML not starting printed "no process holds it" and exited 0.
Now it says the holders are unknown and why, shows the /dev/nvidia* scan's holders as such,
and exits 5 (could not tell)."""

from __future__ import annotations

import json

import pytest
from conftest import Simulate
from sim.scenario import Fault, HostProcess, Scenario, crash, error, h100, sleep
from support.procs_run import busy_node, procs, procs_json


def unanswered(*faults: Fault) -> Scenario:
    """Two idle H100s, NVML failing as `faults` say; PID 31 has GPU 1's device file open."""
    return Scenario(
        gpus=[h100(0), h100(1)],
        faults=list(faults),
        host_processes=[HostProcess(31, ["/dev/nvidia1", "/dev/nvidiactl"])],
    )


@pytest.mark.parametrize(
    ("fault", "why"),
    [
        (
            error("nvmlDeviceGetComputeRunningProcesses", 999),
            "NVML's process query failed (Unknown, error 999)",
        ),
        (
            crash("nvmlDeviceGetComputeRunningProcesses"),
            "NVML's process query crashed its caller (the other facts were read without it)",
        ),
    ],
)
def test_a_failed_process_query_is_unknown_not_no_process(
    simulate: Simulate, fault: Fault, why: str
) -> None:
    """It printed "no process holds it" and exited 0 though NVML was never answered."""
    machine = simulate(unanswered(fault))
    result = procs(machine)
    assert result.returncode == 5, result.stderr
    assert "no process holds it" not in result.stdout
    text = " ".join(result.stdout.split())  # the table wraps long lines
    assert (
        f"GPU 0 NVIDIA H100 80GB HBM3 0.5 GiB of 79.6 GiB used ? who holds it is unknown: {why}; "
        "no process has its device file open (the /dev/nvidia* scan; as root it sees every "
        "user's)"
    ) in text
    assert (
        f"? its GPU contexts are unknown: {why}; below: the processes with its device file open "
        "(the /dev/nvidia* scan)"
    ) in text
    assert " 31 " in result.stdout
    doc = json.loads(procs(machine, "--json").stdout)
    assert doc["complete"] is False and doc["unknown"] == []
    assert [(g["processes_known"], g["processes_error"]) for g in doc["gpus"]] == [(False, why)] * 2
    assert [g["unaccounted"] for g in doc["gpus"]] == [None, None]
    assert [p["pid"] for p in doc["processes"]] == [31]


def test_nvml_that_does_not_answer_in_time_is_unknown(simulate: Simulate) -> None:
    machine = simulate(unanswered(sleep("nvmlDeviceGetComputeRunningProcesses", 30)))
    result = procs(machine, "--json", "--timeout", "1")
    assert result.returncode == 5, result.stderr
    doc = json.loads(result.stdout)
    assert doc["complete"] is False
    assert doc["unknown"] == [
        "NVML did not answer in time (timed out after 1 s in "
        "nvmlDeviceGetComputeRunningProcesses gpu=0): 2 of 2 GPUs and their processes were not "
        "listed"
    ]
    assert [p["pid"] for p in doc["processes"]] == [31]
    text = " ".join(procs(machine, "--timeout", "1").stdout.split())
    assert text.startswith(
        "? GPU holders unknown: NVML did not answer in time (timed out after 1 s in "
        "nvmlDeviceGetComputeRunningProcesses gpu=0): 2 of 2 GPUs and their processes were not "
        "listed. Shown: only the /dev/nvidia* scan's processes with a GPU device file open (as "
        "root it sees every user's: `sudo gpucheck procs`, or `sudo fuser -v /dev/nvidia*`) "
        "Device files open (which GPU, and with what context, is unknown)"
    )
    assert "No GPU and no process" not in text


def test_nvml_that_crashes_at_start_is_unknown(simulate: Simulate) -> None:
    result = procs(simulate(unanswered(crash("nvmlInit"))), "--json")
    assert result.returncode == 5
    (why,) = json.loads(result.stdout)["unknown"]
    assert why.startswith("NVML crashed (crashed with SIGSEGV in nvmlInit")
    assert why.endswith("): the GPUs and their processes were not listed")


def test_kill_mine_where_nvml_could_not_answer_says_so(simulate: Simulate) -> None:
    """--kill-mine finds compute contexts through NVML: it said "none of your processes has a
    compute context" and exited 0."""
    machine = simulate(unanswered(error("nvmlDeviceGetComputeRunningProcesses", 999)))
    result = procs(machine, "--kill-mine", "--yes")
    assert result.returncode == 5, result.stderr
    assert result.stdout.startswith(
        "".join(
            f"could not tell which of your processes have a compute context: GPU {i}: NVML's process "
            "query failed (Unknown, error 999); name them with --kill PID (`gpucheck procs` lists "
            "the device files' holders)\n"
            for i in (0, 1)
        )
    )
    assert "Nothing to end" not in result.stdout


def test_a_healthy_listing_is_complete(simulate: Simulate) -> None:
    doc = procs_json(simulate(busy_node()))
    assert doc["complete"] is True and doc["unknown"] == []
    assert all(g["processes_known"] and g["processes_error"] is None for g in doc["gpus"])


def test_a_gpu_nvml_could_not_open_is_unknown_not_left_out(simulate: Simulate) -> None:
    """A GPU fallen off the bus (nvmlDeviceGetHandleByIndex: GpuIsLost) was left out of the
    list, which said it was complete and exited 0; `--gpu 1` said "No GPU and no process"."""
    machine = simulate(
        Scenario(
            gpus=[h100(0), h100(1)],
            faults=[error("nvmlDeviceGetHandleByIndex", 15, 1)],  # NVML_ERROR_GPU_IS_LOST
            host_processes=[HostProcess(31, ["/dev/nvidia1", "/dev/nvidiactl"])],
        )
    )
    why = "NVML could not open the GPU (fallen off the bus or needing a reset): GpuIsLost, error 15"
    for args in ((), ("--gpu", "1")):
        result = procs(machine, "--json", *args)
        assert result.returncode == 5, result.stderr
        doc = json.loads(result.stdout)
        assert doc["complete"] is False and doc["unknown"] == []
        lost = doc["gpus"][-1]
        assert (lost["index"], lost["processes_known"], lost["processes_error"]) == (1, False, why)
        assert lost["unaccounted"] is None and lost["memory_used"] is None
        assert [p["pid"] for p in doc["processes"]] == [31]
    assert [g["index"] for g in json.loads(procs(machine, "--json").stdout)["gpus"]] == [0, 1]
    result = procs(machine, "--gpu", "1")
    assert result.returncode == 5, result.stderr
    text = " ".join(result.stdout.split())
    assert text.startswith(
        f"GPU 1 ? who holds it is unknown: {why}; its /dev/nvidia* file is unknown too (a "
        'process with one open that no GPU here claims is listed under "Device files open") '
        "Device files open (which GPU, and with what context, is unknown)"
    )
    assert "No GPU and no process" not in text
