"""The real `gpucheck` command on simulated machines whose GPU or driver is unreachable: a GPU
fallen off the bus, a driver/library version mismatch, no permission, an old driver without the
newer NVML functions."""

from __future__ import annotations

import os

import pynvml as nv
from conftest import Simulate
from sim import scenario as sim
from sim.scenario import (
    MIB,
    Scenario,
    error,
    h100,
    h100_node,
)
from support.sim_doctor import doctor, doctor_text


def test_one_gpu_fallen_off_the_bus_among_four(simulate: Simulate) -> None:
    gpus = [h100(i) for i in range(4)]
    gpus[2].cuda_hidden = True
    machine = simulate(
        Scenario(
            gpus=gpus, faults=[error("nvmlDeviceGetHandleByIndex", nv.NVML_ERROR_GPU_IS_LOST, 2)]
        )
    )
    d = doctor(machine)
    assert d.returncode == 1
    lost = d.finding("gpus.lost")
    assert lost["status"] == "fail"
    assert lost["title"].startswith("1 GPU(s) do not answer: fallen off the bus")
    assert lost["evidence"] == ["GPU 2: GpuIsLost", "4 NVIDIA GPU(s) on the PCI bus"]
    assert "sudo nvidia-smi -r" in lost["fix"]["text"] and "Xid 79" in lost["fix"]["text"]
    assert d.gpu(2)["handle_error"]["name"] == "GpuIsLost"
    assert d.gpu(3)["name"] == "NVIDIA H100 80GB HBM3"  # the others are fully read
    assert d.status("driver.nvml") == "pass"
    assert "3 device(s)" in d.finding("cuda.driver-api")["title"]
    # The GPU checks judge the three that answer.
    assert d.finding("gpus.ecc-errors")["title"].endswith("on 3 GPU(s) since boot")
    d = doctor(machine, "--min-gpus=4")
    assert d.finding("requirements.min-gpus")["title"] == "Needs 4 GPU(s), has 3"


def test_driver_library_version_mismatch_at_init(simulate: Simulate) -> None:
    machine = simulate(
        h100_node(
            library_version="595.58.03",
            faults=[
                error("nvmlInit", nv.NVML_ERROR_LIB_RM_VERSION_MISMATCH),
                error("cuInit", sim.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH),
            ],
        )
    )
    d = doctor(machine)
    assert d.returncode == 1
    nvml = d.finding("driver.nvml")
    assert nvml["status"] == "fail"
    assert nvml["title"].startswith("Driver/library version mismatch")
    assert nvml["evidence"] == [
        "nvmlInit: LibRmVersionMismatch (RM has detected an NVML/RM version mismatch.)",
        "kernel module 590.48.01, libnvidia-ml 595.58.03",
    ]
    assert "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia" in nvml["fix"]["text"]
    # The root cause is reported once: what depends on the driver is not judged.
    assert d.statuses("fail") == {"driver.nvml"}
    assert d.finding("gpus.lost")["title"] == "No GPU facts from the driver (see driver.nvml)"
    api = d.finding("cuda.driver-api")
    assert api["status"] == "skip" and "not judged" in api["title"]
    assert api["evidence"] == ["cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"]
    out = doctor_text(machine)
    assert "✗ Driver/library version mismatch" in out
    assert "kernel module 590.48.01, libnvidia-ml 595.58.03" in out
    assert "fix: Reboot" in out


def test_no_permission(simulate: Simulate) -> None:
    machine = simulate(
        h100_node(
            device_node_mode=0o000,
            faults=[
                error("nvmlInit", nv.NVML_ERROR_NO_PERMISSION),
                error("cuInit", sim.CUDA_ERROR_NO_DEVICE),
            ],
        )
    )
    d = doctor(machine)
    assert d.returncode == 1
    nvml = d.finding("driver.nvml")
    assert nvml["status"] == "fail" and nvml["title"] == "No permission to use the GPU"
    assert nvml["evidence"] == ["nvmlInit: NoPermission (Insufficient Permissions)"]
    assert "driver.device-nodes" in nvml["fix"]["text"]
    nodes = d.finding("driver.device-nodes")
    if os.geteuid() == 0:  # root may open any node whatever its mode
        assert nodes["status"] == "pass"
    else:
        assert nodes["status"] == "fail" and "No permission" in nodes["title"]
        assert "/dev/nvidiactl ---------- group" in d.text("driver.device-nodes")


def test_old_driver_without_the_newer_nvml_functions(simulate: Simulate) -> None:
    """R470 predates nvmlDeviceGetCurrentClocksEventReasons (R535) and the _v3 process list
    (R510): the binding finds them missing (FunctionNotFound) and gpucheck falls back."""
    machine = simulate(
        Scenario(
            gpus=[sim.gt_1030()],
            driver="470.74",
            cuda=11040,
            open_kernel_module=False,
            missing=[
                "nvmlDeviceGetCurrentClocksEventReasons",
                "nvmlDeviceGetComputeRunningProcesses_v3",
                "nvmlDeviceGetMemoryInfo_v2",
                "nvmlSystemGetCudaDriverVersion_v2",
            ],
        )
    )
    d = doctor(machine)
    assert d.returncode == 0, d.statuses("fail")
    gpu = d.gpu(0)
    assert gpu["clock_event_reasons"] == ["gpu_idle"]  # from ...ClocksThrottleReasons
    assert "clock_event_reasons" not in gpu["field_errors"]
    assert d.status("gpus.throttling") == "pass"
    assert d.finding("driver.nvml")["title"] == "Driver 470.74, supports CUDA 11.4, 1 GPU(s)"
    assert gpu["power_draw_w"] is None and gpu["power_limit_w"] == 30.0
    assert d.status("gpus.pcie-link") == "pass"  # x4 of x4: the card's own width


def test_old_driver_process_list_falls_back_to_v2(simulate: Simulate) -> None:
    machine = simulate(
        Scenario(
            gpus=[sim.gt_1030()],
            driver="470.74",
            cuda=11040,
            missing=["nvmlDeviceGetComputeRunningProcesses_v3"],
        )
    )
    gpu = doctor(machine).gpu(0)
    assert gpu["processes"] == [
        {
            "pid": 2211,
            "name": "/usr/bin/python3",
            "used_memory": 300 * MIB,
            "kind": "compute",
            "gpu_instance_id": None,
            "compute_instance_id": None,
        }
    ]
    assert "processes" not in gpu["field_errors"]
