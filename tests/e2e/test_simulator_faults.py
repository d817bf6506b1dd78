"""The real `gpucheck` command on simulated machines with faults: ECC errors, row remapping,
throttling, processes holding memory, compute modes, CUDA_VISIBLE_DEVICES, cuInit failures, and
NVML hanging, crashing or erring for one GPU."""

from __future__ import annotations

import re

import pynvml as nv
import pytest
from conftest import Simulate
from sim import scenario as sim
from sim.scenario import (
    MIB,
    HostProcess,
    Process,
    Scenario,
    crash,
    error,
    h100,
    h100_node,
    replace,
)
from support.sim_doctor import doctor, doctor_text


def test_uncorrectable_ecc_errors(simulate: Simulate) -> None:
    gpus = [h100(i) for i in range(8)]
    gpus[5] = replace(gpus[5], ecc_uncorrected=(2, 7))
    gpus[1] = replace(gpus[1], ecc_uncorrected=(0, 3))  # errors before this boot only
    d = doctor(simulate(Scenario(gpus=gpus)))
    assert d.returncode == 1
    ecc = d.finding("gpus.ecc-errors")
    assert ecc["status"] == "fail"
    assert ecc["title"].startswith("Uncorrectable ECC memory errors on 1 GPU(s)")
    assert ecc["evidence"] == [
        "GPU 5 (NVIDIA H100 80GB HBM3, 00000000:AB:00.0): 2 uncorrectable error(s) since the "
        "last reboot"
    ]
    assert "RMA" in ecc["fix"]["text"] and "nvidia-smi -r -i" in ecc["fix"]["text"]
    assert d.gpu(5)["ecc_uncorrected_aggregate"] == 7


def test_row_remap_pending_warns(simulate: Simulate) -> None:
    gpus = [h100(i) for i in range(8)]
    gpus[6] = replace(gpus[6], remapped_rows=(0, 1, True, False))
    d = doctor(simulate(Scenario(gpus=gpus)))
    assert d.returncode == 0
    remap = d.finding("gpus.memory-remapping")
    assert remap["status"] == "warn"
    assert remap["title"] == "Memory repairs pending on 1 GPU(s) until they are reset"
    assert remap["evidence"] == [
        "GPU 6 (NVIDIA H100 80GB HBM3, 00000000:BA:00.0): a row remap is pending (takes effect "
        "at the next GPU reset)"
    ]
    assert d.gpu(6)["remapped_rows_uncorrectable"] == 1


def test_row_remap_failed_fails(simulate: Simulate) -> None:
    gpus = [h100(i) for i in range(8)]
    gpus[6] = replace(gpus[6], remapped_rows=(0, 1, True, False))
    gpus[7] = replace(gpus[7], remapped_rows=(3, 512, False, True))
    d = doctor(simulate(Scenario(gpus=gpus)), "--strict")
    assert d.returncode == 1
    remap = d.finding("gpus.memory-remapping")
    assert remap["status"] == "fail"  # a failure outranks the pending one
    assert remap["evidence"] == [
        "GPU 7 (NVIDIA H100 80GB HBM3, 00000000:DB:00.0): row remapping failed (no spare rows left)"
    ]
    assert "RMA" in remap["fix"]["text"] and "dcgmi diag" in remap["fix"]["text"]


def test_thermal_and_power_brake_slowdown(simulate: Simulate) -> None:
    hw = nv.nvmlClocksEventReasonHwSlowdown
    gpus = [h100(i) for i in range(8)]
    gpus[0] = replace(
        gpus[0], temperature=88, clock_event_reasons=hw | nv.nvmlClocksEventReasonHwThermalSlowdown
    )
    gpus[4] = replace(
        gpus[4], clock_event_reasons=hw | nv.nvmlClocksEventReasonHwPowerBrakeSlowdown
    )
    d = doctor(simulate(Scenario(gpus=gpus)))
    assert d.returncode == 1
    throttle = d.finding("gpus.throttling")
    assert throttle["status"] == "fail"
    assert throttle["title"] == "2 GPU(s) are slowed down by hardware protection"
    assert throttle["evidence"] == [
        "GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0): hardware slowdown (clocks cut by half "
        "or more), hardware thermal slowdown (too hot) (88 °C)",
        "GPU 4 (NVIDIA H100 80GB HBM3, 00000000:9A:00.0): hardware slowdown (clocks cut by half "
        "or more), power brake slowdown (external power supply signal) (41 °C)",
    ]
    assert "power delivery" in throttle["fix"]["text"]
    assert d.gpu(0)["clock_event_reasons"] == ["hw_slowdown", "hw_thermal_slowdown"]


def test_near_the_slowdown_temperature_warns(simulate: Simulate) -> None:
    gpu = replace(sim.a100_mig(), temperature=86, mig=(False, False), mig_devices=[])
    d = doctor(simulate(Scenario(gpus=[gpu], driver="535.54.03", cuda=12020)))
    assert d.status("gpus.throttling") == "warn"
    assert "close to its slowdown temperature (86 °C, slowdown at 89 °C)" in d.text(
        "gpus.throttling"
    )


def test_a_process_holding_most_of_a_gpus_memory(simulate: Simulate) -> None:
    gpus = [h100(i) for i in range(8)]
    hog = Process(48213, "/usr/bin/python3", 74 * 1024 * MIB)
    gpus[2] = replace(gpus[2], processes=[hog], memory_used=gpus[2].memory_used + hog.used)
    # The hog as /proc shows it too: a process with /dev/nvidia2 open.
    holder = HostProcess(48213, ["/dev/nvidia2", "/dev/nvidiactl"], name="python3")
    machine = simulate(Scenario(gpus=gpus, host_processes=[holder]))
    d = doctor(machine)
    assert d.returncode == 0
    mem = d.finding("gpus.memory-in-use")
    assert mem["status"] == "warn"
    assert mem["title"] == "1 GPU(s) already have most of their memory in use"
    assert mem["evidence"] == [
        "GPU 2 (NVIDIA H100 80GB HBM3, 00000000:3A:00.0): 74.5 GiB of 79.6 GiB used by PID 48213 "
        "/usr/bin/python3 (74.0 GiB)"
    ]
    assert (
        "ps -o pid,user,cmd -p 48213" in mem["fix"]["text"] and "kill 48213" in mem["fix"]["text"]
    )
    assert "or use the other GPUs" in mem["fix"]["text"]
    assert d.gpu(2)["processes"] == [
        {
            "pid": 48213,
            "name": "/usr/bin/python3",
            "used_memory": 74 * 1024 * MIB,
            "kind": "compute",
            "gpu_instance_id": None,
            "compute_instance_id": None,
        }
    ]
    assert doctor(machine, "--strict").returncode == 1


def test_exclusive_process_compute_mode(simulate: Simulate) -> None:
    gpus = [h100(i) for i in range(8)]
    for i in (0, 1):
        gpus[i].compute_mode = nv.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS
    machine = simulate(Scenario(gpus=gpus))
    d = doctor(machine)
    assert d.returncode == 0
    mode = d.finding("gpus.compute-mode")
    assert mode["status"] == "warn"
    assert mode["title"].startswith("2 GPU(s) in exclusive-process mode")
    assert mode["evidence"][0].endswith("00000000:18:00.0): exclusive_process")
    assert [s["command"] for s in mode["fix"]["steps"]] == ["sudo nvidia-smi -i 0,1 -c DEFAULT"]
    assert [g["index"] for g in mode["subjects"]["gpus"]] == [0, 1]
    assert doctor(machine, "--strict").returncode == 1
    out = doctor_text(machine)
    assert "! 2 GPU(s) in exclusive-process mode" in out


@pytest.mark.parametrize(
    ("visible", "status", "title", "cuda_devices", "rc"),
    [
        ("0,1", "info", "CUDA_VISIBLE_DEVICES shows 2 of 8 GPUs", 2, 0),
        ("GPU-00000007", "info", "CUDA_VISIBLE_DEVICES shows 1 of 8 GPUs", 1, 0),
        ("", "fail", "CUDA_VISIBLE_DEVICES hides all 8 GPUs", 0, 1),
        ("-1", "fail", "CUDA_VISIBLE_DEVICES hides all 8 GPUs", 0, 1),
        (
            "0,9,1",
            "warn",
            "CUDA_VISIBLE_DEVICES names a GPU that does not exist: CUDA sees 1 of 8",
            1,
            0,
        ),
    ],
)
def test_cuda_visible_devices_hiding_gpus(
    simulate: Simulate, visible: str, status: str, title: str, cuda_devices: int, rc: int
) -> None:
    d = doctor(simulate(h100_node()), env={"CUDA_VISIBLE_DEVICES": visible})
    assert d.returncode == rc
    cvd = d.finding("system.cuda-visible-devices")
    assert (cvd["status"], cvd["title"]) == (status, title)
    # The simulated libcuda applies the variable as CUDA does; the counts agree.
    assert d.snapshot["cuda"]["driver"]["device_count"] == cuda_devices
    assert d.status("cuda.driver-api") == "pass"


def test_cuda_visible_devices_and_a_jobs_gpu_count(simulate: Simulate) -> None:
    d = doctor(simulate(h100_node()), "--min-gpus=4", env={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert d.returncode == 1
    req = d.finding("requirements.min-gpus")
    assert req["title"] == "Needs 4 GPU(s), has 2"
    assert req["evidence"] == ["2 usable GPU(s) of 8 (CUDA_VISIBLE_DEVICES)"]


@pytest.mark.parametrize(
    ("code", "name", "words"),
    [
        (sim.CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY", "fabric manager"),
        (sim.CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "missing nvidia-uvm"),
        (sim.CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "not permitted"),
    ],
)
def test_cuinit_failing_while_nvml_works(
    simulate: Simulate, code: int, name: str, words: str
) -> None:
    d = doctor(simulate(h100_node(faults=[error("cuInit", code)])))
    assert d.returncode == 1
    api = d.finding("cuda.driver-api")
    assert api["status"] == "fail"
    assert words in api["title"]
    assert api["evidence"][:2] == [
        f"cuInit(0) = {code} ({name})",
        "while NVML works (driver 590.48.01)",
    ]
    assert d.status("driver.nvml") == "pass"
    assert d.statuses("fail") == {"cuda.driver-api"}


def test_nvml_init_hanging_longer_than_the_time_bound(simulate: Simulate) -> None:
    machine = simulate(h100_node(faults=[sim.sleep("nvmlInit", 60)]))
    d = doctor(machine, "--timeout", "2", timeout=60)
    # A correctness bound (the doctor answers within about its --timeout), not a benchmark.
    assert d.seconds < 20, d.seconds
    assert d.returncode == 1
    nvml = d.finding("driver.nvml")
    assert nvml["status"] == "fail"
    # "after 2 s", or the part of the 2 s left when the child started (1.99999 s).
    assert re.fullmatch(r"NVML timed out after (2|1\.9\d*) s in nvmlInit", nvml["title"])
    assert "Xid" in nvml["fix"]["text"]
    assert d.probe("nvml")["status"] == "timeout"
    # libcuda, probed beside it, still answers.
    assert d.probe("cuda_driver")["status"] == "ok"
    assert d.snapshot["cuda"]["driver"]["device_count"] == 8


def test_a_crash_inside_an_nvml_call(simulate: Simulate) -> None:
    machine = simulate(h100_node(4, faults=[crash("nvmlDeviceGetTemperature", 2)]))
    d = doctor(machine)
    assert d.returncode == 0  # a warning: every other fact is known
    nvml = d.finding("driver.nvml")
    assert nvml["status"] == "warn"
    assert nvml["title"] == "NVML answers, but one of its calls crashed the probe"
    crashed = d.probe("nvml")
    assert crashed["status"] == "crashed"
    assert "crashed with SIGSEGV in nvmlDeviceGetTemperature gpu=2" in crashed["error"]
    assert "retried without nvmlDeviceGetTemperature" in crashed["error"]
    assert crashed["error"] in nvml["evidence"]
    gpus = d.snapshot["nvml"]["gpus"]
    assert [g["name"] for g in gpus] == ["NVIDIA H100 80GB HBM3"] * 4
    assert all(g["temperature_c"] is None for g in gpus)
    assert all(g["field_errors"]["temperature_c"] == "Crashed" for g in gpus)
    assert all(g["power_limit_w"] == 700.0 for g in gpus)
    assert d.statuses("fail") == set()
    assert "! NVML answers, but one of its calls crashed" in doctor_text(machine)


def test_a_crash_in_nvml_init(simulate: Simulate) -> None:
    d = doctor(simulate(h100_node(faults=[crash("nvmlInit")])))
    assert d.returncode == 1
    nvml = d.finding("driver.nvml")
    assert nvml["status"] == "fail"
    assert nvml["title"].startswith("NVML probe crashed with SIGSEGV in nvmlInit")
    assert d.probe("nvml")["status"] == "crashed"


def test_nvml_errors_for_one_gpu_only(simulate: Simulate) -> None:
    machine = simulate(
        h100_node(
            2,
            faults=[
                error("nvmlDeviceGetPowerUsage", nv.NVML_ERROR_UNKNOWN, 1),
                error("nvmlDeviceGetEccMode", nv.NVML_ERROR_CORRUPTED_INFOROM, 1),
            ],
        )
    )
    d = doctor(machine)
    assert d.returncode == 0
    assert d.gpu(0)["power_draw_w"] == 69.6 and d.gpu(0)["ecc_enabled"] is True
    assert d.gpu(1)["field_errors"]["power_draw_w"] == "Unknown"
    assert d.gpu(1)["field_errors"]["ecc_enabled"] == "CorruptedInforom"
    assert (
        d.finding("gpus.ecc-errors")["title"]
        == "No uncorrectable ECC errors on 1 GPU(s) since boot"
    )
