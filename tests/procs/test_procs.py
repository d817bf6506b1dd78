"""`gpucheck procs` on simulated machines: container ids from cgroup paths, NVML's processes and a
fake /proc's device holders merged per PID, hidden holders, zombie contexts and leaked memory
said in words, filters and usage errors (ending processes: test_procs_kill*.py)."""

from __future__ import annotations

import json

import pytest
from conftest import Simulate
from sim.scenario import (
    GIB,
    MIB,
    HostProcess,
    Scenario,
    h100,
)
from support.procs_run import DOCKER_ID, busy_node, procs, procs_json

from gpucheck.probes.processes import parse_cgroup

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


def test_procs_merges_nvml_and_proc_per_pid(simulate: Simulate) -> None:
    doc = procs_json(simulate(busy_node()))
    assert doc["schema_version"] == "1.1"
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
    assert "`sudo gpucheck procs`" in gpus[2]["leak_causes"]
    assert "`sudo nvidia-smi -r -i 2`" in gpus[2]["leak_causes"]
    assert gpus[3]["zombie_pids"] == [5555]
    assert any("host PIDs" in n for n in doc["notes"])


def test_procs_table_for_a_person(simulate: Simulate) -> None:
    result = procs(simulate(busy_node()))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "GPU 0  NVIDIA H100 80GB HBM3  40.5 GiB of 79.6 GiB used" in out
    assert "python3 train.py --epochs 90" in out
    assert "3f2a1b4c5d6e" in out  # the short container id
    assert (
        "10.0 GiB held by processes not in /proc here (PIDs 91234: exited since, or in another "
        "PID namespace)"
    ) in out
    assert "zombie context: PID 5555" in out
    assert "20.5 GiB used by no process listed" in out
    assert "Driver only (device files open, no GPU context)" in out
    # Why this "used" is more than watch's and nvidia-smi's (NVML v1 vs v2 device memory).
    assert (
        "Memory: a GPU's used counts what the driver reserves; a process's is what its own "
        "context allocated. `gpucheck watch` and nvidia-smi leave the driver's reservation out "
        "(less used)."
    ) in " ".join(out.split())
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


def test_procs_without_a_driver_says_so_not_no_gpu(simulate: Simulate) -> None:
    """GPUs on the PCI bus and no nvidia module: it said "No GPU and no process holding
    /dev/nvidia*." and exited 0, as on a machine with no GPU. Now: could not tell (5), why,
    and the /proc holders."""
    scenario = Scenario(gpus=[h100(0), h100(1)], module_loaded=False, uvm_loaded=False)
    scenario.host_processes = [HostProcess(3131, ["/dev/nvidiactl"], name="Xorg", cmdline=["Xorg"])]
    machine = simulate(scenario)
    why = (
        "the nvidia kernel module is not loaded (2 NVIDIA GPUs on the PCI bus): NVML was not "
        "asked, so no GPU's processes were listed (`gpucheck doctor` says why and what to do)"
    )
    result = procs(machine, "--json")
    assert result.returncode == 5, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["gpus"], doc["complete"], doc["unknown"], doc["notes"]) == ([], False, [why], [])
    assert [p["pid"] for p in doc["processes"]] == [3131]
    result = procs(machine)
    assert result.returncode == 5, result.stderr
    text = " ".join(result.stdout.split())
    assert text.startswith(f"? GPU holders unknown: {why}. Shown: only the /dev/nvidia* scan's")
    assert "No GPU" not in text
    # --gpu 0 said "no such GPU" (exit 2): NVML was not asked, so it could not be looked up.
    result = procs(machine, "--gpu", "0", "--json")
    assert result.returncode == 5, result.stderr
    assert json.loads(result.stdout)["unknown"] == [why]
    result = procs(machine, "--gpu", "0", "--kill-mine", "--yes")
    assert (result.returncode, result.stdout) == (5, "")
    assert result.stderr == (
        f"gpucheck: --gpu 0: NVML listed no GPU to match it against: {why}; nothing was ended\n"
    )


def test_procs_with_no_gpu_and_no_driver_says_no_gpu(simulate: Simulate) -> None:
    result = procs(simulate(Scenario(gpus=[], module_loaded=False, uvm_loaded=False)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("No GPU and no process holding /dev/nvidia*.\nnote: NVML not")


def test_force_and_yes_without_kill_are_usage_errors(simulate: Simulate) -> None:
    machine = simulate(busy_node())
    for flag in ("--force", "--yes"):
        result = procs(machine, flag)
        assert result.returncode == 2
        assert result.stderr == f"gpucheck: {flag} goes with --kill or --kill-mine\n"
