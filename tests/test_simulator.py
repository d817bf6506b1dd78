"""The real `gpucheck` command on simulated GPU machines (tests/sim): fake libnvidia-ml.so.1 and
libcuda.so.1 built from C against NVIDIA's nvml.h, loaded by nvidia-ml-py and ctypes through
the ordinary loader path (LD_LIBRARY_PATH), plus a fake /proc, /sys, /dev and /etc that the
system probe reads through GPUCHECK_ROOT. Each scenario asserts findings, statuses and the
exit code; a few the human text too. Probe-level tests at the end need no fake root.

The CUDA toolkit, runtime and cuDNN checks look at this machine's own disks (/usr/local/cuda,
ldconfig, site-packages), not at the simulated machine, so the end-to-end runs skip them.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pynvml as nv
import pytest
from conftest import Simulate, run_gpucheck
from sim import scenario as sim
from sim.scenario import (
    MIB,
    HostProcess,
    Machine,
    Process,
    Scenario,
    crash,
    error,
    h100,
    h100_node,
    replace,
)

from gpucheck.probes.native import probe_cuda_driver
from gpucheck.probes.nvml import probe_nvml
from gpucheck.report.schema import report_schema

HOST_DEPENDENT = ("cuda.toolkit", "cuda.runtime-libraries", "cudnn")
ROOT_HOOK = (
    "gpucheck must read /proc, /sys, /dev and /etc under $GPUCHECK_ROOT (ProbeOptions.root "
    "defaulting to Path(os.environ.get('GPUCHECK_ROOT') or '/') in gpucheck/probes/__init__.py)"
)


# --- fixtures ---------------------------------------------------------------------------------


# --- running the doctor -----------------------------------------------------------------------


@dataclass
class Doctor:
    returncode: int
    report: dict[str, Any]
    stderr: str
    seconds: float

    @property
    def findings(self) -> dict[str, dict[str, Any]]:
        return {f["id"]: f for f in self.report["findings"]}

    def finding(self, check_id: str) -> dict[str, Any]:
        found = self.findings.get(check_id)
        assert found is not None, f"no {check_id} finding in {sorted(self.findings)}"
        return found

    def status(self, check_id: str) -> str | None:
        found = self.findings.get(check_id)
        return found["status"] if found else None

    def text(self, check_id: str) -> str:
        """Title, evidence and fix of one finding, as one string to search."""
        f = self.finding(check_id)
        return "\n".join([f["title"], *f["evidence"], (f["fix"] or {}).get("text", "")])

    def statuses(self, *wanted: str) -> set[str]:
        return {i for i, f in self.findings.items() if f["status"] in wanted}

    @property
    def snapshot(self) -> dict[str, Any]:
        return self.report["snapshot"]  # type: ignore[no-any-return]

    def gpu(self, index: int) -> dict[str, Any]:
        return self.snapshot["nvml"]["gpus"][index]  # type: ignore[no-any-return]

    def probe(self, name: str) -> dict[str, Any]:
        return next(p for p in self.snapshot["probes"] if p["name"] == name)


def _on_the_simulated_machine(report: dict[str, Any], machine: Machine) -> None:
    system = report["snapshot"]["system"]
    want = sorted(g.pci_address for g in machine.scenario.gpus)
    got = sorted(d["address"] for d in system["pci_gpus"])
    if got != want:
        pytest.fail(
            f"gpucheck did not read the simulated machine's files: PCI GPUs {got}, expected "
            f"{want} from {machine.root}. {ROOT_HOOK}.",
            pytrace=False,
        )
    assert system["nvidia_module_version"] == machine.scenario.kernel_module_version
    library = report["snapshot"]["nvml"]["library_path"]
    assert library is None or library.startswith(str(machine.lib_dir)), library


def doctor(
    machine: Machine, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> Doctor:
    """`gpucheck doctor --json ARGS` on the simulated machine."""
    skips = [a for check_id in HOST_DEPENDENT for a in ("--skip", check_id)]
    start = time.monotonic()
    result = run_gpucheck(
        "doctor", "--json", *skips, *args, env={**machine.env, **(env or {})}, timeout=timeout
    )
    seconds = time.monotonic() - start
    assert result.returncode in (0, 1), (result.returncode, result.stderr)
    try:
        report = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"not JSON: {result.stdout[:500]!r}\nstderr: {result.stderr}")
    jsonschema.Draft202012Validator(report_schema()).validate(report)
    assert report["summary"]["exit_code"] == result.returncode
    assert "Traceback" not in result.stderr, result.stderr
    _on_the_simulated_machine(report, machine)
    return Doctor(result.returncode, report, result.stderr, seconds)


def doctor_text(machine: Machine, *args: str, env: dict[str, str] | None = None) -> str:
    """The human report (no colour: not a terminal)."""
    skips = [a for check_id in HOST_DEPENDENT for a in ("--skip", check_id)]
    result = run_gpucheck("doctor", *skips, *args, env={**machine.env, **(env or {})})
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


EVERYTHING_PASSES = {
    "system.gpu-present",
    "system.nouveau",
    "driver.kernel-module",
    "driver.nvml",
    "driver.device-nodes",
    "driver.uvm",
    "driver.persistence-mode",
    "gpu.lost",
    "gpu.ecc-errors",
    "gpu.memory-remapping",
    "gpu.throttling",
    "gpu.pcie-link",
    "gpu.compute-mode",
    "gpu.memory-in-use",
    "cuda.driver-api",
}


# --- whole machines ---------------------------------------------------------------------------


def test_healthy_8_gpu_h100_node(simulate: Simulate) -> None:
    machine = simulate(h100_node())
    d = doctor(machine)
    assert d.returncode == 0
    assert d.report["summary"]["ready"] is True
    # gpucheck's own environment holds its NVML binding: judged too, by how old it is.
    own = {"frameworks.nvml-bindings"}
    assert d.statuses("pass") - own == EVERYTHING_PASSES
    assert d.statuses("warn", "fail", "error", "skip") - own == set()
    assert "gpu.mig" not in d.findings  # MIG off: nothing to say
    assert d.finding("system.gpu-present")["title"] == "8 NVIDIA GPUs on the PCI bus"
    assert "GH100[H100 SXM5 80GB] at 0000:18:00.0" in d.finding("system.gpu-present")["evidence"]
    assert "590.48.01 loaded (open kernel module)" in d.finding("driver.kernel-module")["title"]
    assert d.finding("driver.nvml")["title"] == "Driver 590.48.01, supports CUDA 13.1, 8 GPU(s)"
    assert d.finding("cuda.driver-api")["title"] == "CUDA driver API 13.1: 8 device(s)"
    assert "device 7: NVIDIA H100 80GB HBM3 (compute 9.0)" in d.text("cuda.driver-api")
    # The facts came through the real binding from the C table.
    gpu = d.gpu(3)
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["pci_bus_id"] == "00000000:5D:00.0"
    assert gpu["memory_total"] == 81559 * MIB
    assert gpu["compute_capability"] == "9.0" and gpu["architecture"] == "Hopper"
    assert gpu["power_limit_w"] == 700.0 and gpu["power_draw_w"] == 69.6
    assert gpu["clock_event_reasons"] == ["gpu_idle"]
    assert gpu["brand"] == "NVIDIA" and gpu["processes"] == []
    assert gpu["field_errors"] == {
        "fan_speed_pct": "NotSupported",  # passively cooled
        "temperature_slowdown_c": "NotSupported",
        "temperature_shutdown_c": "NotSupported",
        "retired_pages_sbe": "NotSupported",
        "retired_pages_dbe": "NotSupported",
        "retired_pages_pending": "NotSupported",
        # this scenario has no fabric (tests/test_fabric_sim.py's HGX boards do)
        "fabric_state": "NotSupported",
        "nvlink_active": "NotSupported",
    }
    assert d.snapshot["nvml"]["library_path"] == str(machine.lib_dir / "libnvidia-ml.so.590.48.01")
    assert {p["status"] for p in d.snapshot["probes"]} == {"ok"}


def test_healthy_node_meets_a_jobs_requirements_strictly(simulate: Simulate) -> None:
    machine = simulate(h100_node())
    d = doctor(
        machine,
        "--min-gpus=8",
        "--min-memory=80GB",
        "--min-compute-capability=9.0",
        "--strict",
    )
    assert d.returncode == 0
    for check_id in ("require.min-gpus", "require.min-memory", "require.min-compute-capability"):
        assert d.status(check_id) == "pass", d.finding(check_id)
    # An "80GB" H100 has 81559 MiB: less than 80 GiB.
    d = doctor(machine, "--min-memory=80GiB")
    assert d.returncode == 1
    assert d.status("require.min-memory") == "fail"
    assert "8 GPU(s) have less than 80GiB" in d.text("require.min-memory")


def test_healthy_node_text_report(simulate: Simulate) -> None:
    out = doctor_text(simulate(h100_node()))
    assert "✓ 8 NVIDIA GPUs on the PCI bus" in out
    assert "✓ Driver 590.48.01, supports CUDA 13.1, 8 GPU(s)" in out
    assert "✓ CUDA driver API 13.1: 8 device(s)" in out
    assert "Ready" in out.splitlines()[-1]


def test_mixed_workstation_with_two_different_gpus(simulate: Simulate) -> None:
    machine = simulate(
        Scenario(gpus=[sim.rtx_4080_super(), sim.rtx_2080_super()], driver="595.71.05", cuda=13020)
    )
    d = doctor(machine)
    assert d.returncode == 0
    assert [g["name"] for g in d.snapshot["nvml"]["gpus"]] == [
        "NVIDIA GeForce RTX 4080 SUPER",
        "NVIDIA GeForce RTX 2080 SUPER",
    ]
    assert [g["compute_capability"] for g in d.snapshot["nvml"]["gpus"]] == ["8.9", "7.5"]
    assert d.gpu(1)["architecture"] == "Turing" and d.gpu(0)["architecture"] == "Ada Lovelace"
    # Both idle at PCIe gen 1: power saving, which passes.
    assert d.status("gpu.pcie-link") == "pass"
    assert "gen 1 of 3 at 0% utilisation (idle: normal power saving)" in d.text("gpu.pcie-link")
    assert d.status("gpu.ecc-errors") == "skip"
    assert "driver.persistence-mode" not in d.findings  # consumer cards: not judged
    assert d.finding("cuda.driver-api")["title"] == "CUDA driver API 13.2: 2 device(s)"
    assert "device 1: NVIDIA GeForce RTX 2080 SUPER (compute 7.5)" in d.text("cuda.driver-api")
    # A job that needs Ampere or newer cannot use the Turing card.
    d = doctor(machine, "--min-compute-capability=8.0")
    assert d.returncode == 1
    req = d.finding("require.min-compute-capability")
    assert req["status"] == "fail" and req["title"] == "1 GPU(s) are below compute capability 8.0"
    assert req["evidence"] == ["GPU 1 (NVIDIA GeForce RTX 2080 SUPER, 00000000:0C:00.0): 7.5"]


def test_consumer_gpu_without_fan_ecc_and_power_limit_queries(simulate: Simulate) -> None:
    gpu = replace(sim.rtx_3060(), fan=None, power_limit_mw=None)
    machine = simulate(
        Scenario(gpus=[gpu], driver="570.124.04", cuda=12080, open_kernel_module=False)
    )
    d = doctor(machine)
    assert d.returncode == 0, d.statuses("fail")
    facts = d.gpu(0)
    assert facts["ecc_enabled"] is None and facts["power_limit_w"] is None
    assert facts["power_draw_w"] == 11.6
    assert facts["field_errors"] == {
        "serial": "NotSupported",
        "fan_speed_pct": "NotSupported",
        "power_limit_w": "NotSupported",
        "ecc_enabled": "NotSupported",
        "mig_enabled": "NotSupported",
        "fabric_state": "NotSupported",  # not NVSwitch-attached
        "nvlink_active": "NotSupported",  # no NVLink
    }
    ecc = d.finding("gpu.ecc-errors")
    assert ecc["status"] == "skip" and ecc["title"] == "ECC: not supported by these GPUs"
    assert "NotSupported" in d.text("gpu.ecc-errors")
    assert "gpu.memory-remapping" not in d.findings and "gpu.mig" not in d.findings
    kernel = d.finding("driver.kernel-module")
    assert kernel["title"] == "nvidia kernel module 570.124.04 loaded"
    assert d.finding("cuda.driver-api")["title"] == "CUDA driver API 12.8: 1 device(s)"


def test_idle_gpu_at_pcie_gen_1_of_4_passes_but_not_under_load(simulate: Simulate) -> None:
    idle = simulate(Scenario(gpus=[sim.rtx_3060()], driver="570.124.04", cuda=12080))
    d = doctor(idle)
    assert d.returncode == 0
    link = d.finding("gpu.pcie-link")
    assert link["status"] == "pass" and link["title"] == "PCIe links at full width on 1 GPU(s)"
    assert link["evidence"] == [
        "GPU 0 (NVIDIA GeForce RTX 3060, 00000000:2D:00.0): gen 1 of 4 at 0% utilisation "
        "(idle: normal power saving)"
    ]
    busy = replace(sim.rtx_3060(), utilization=97)
    d = doctor(simulate(Scenario(gpus=[busy], driver="570.124.04", cuda=12080)))
    assert d.returncode == 0  # a warning
    assert d.status("gpu.pcie-link") == "warn"
    assert "gen 1 of 4 at 97% utilisation (under load)" in d.text("gpu.pcie-link")


def test_pcie_link_trained_at_x4_of_x16(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[*map(h100, range(3)), replace(h100(3), pcie=(5, 5, 4, 16))]))
    d = doctor(machine)
    assert d.returncode == 1
    link = d.finding("gpu.pcie-link")
    assert link["status"] == "fail"
    assert "quarter or less" in link["title"]
    assert link["evidence"] == ["GPU 3 (NVIDIA H100 80GB HBM3, 00000000:5D:00.0): x4 of x16"]
    assert "Reseat the GPU" in link["fix"]["text"]
    assert d.statuses("fail") == {"gpu.pcie-link"}


def test_a100_with_mig_enabled_and_slices(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[sim.a100_mig()], driver="535.54.03", cuda=12020))
    # CUDA_VISIBLE_DEVICES unset: a process gets one of the four slices (pytorch#102715):
    # information naming that slice and how to choose another, not a failed machine.
    d = doctor(machine)
    assert d.returncode == 0
    mig = d.finding("gpu.mig")
    assert mig["status"] == "info" and "sees one slice of 4" in mig["title"]
    first = "export CUDA_VISIBLE_DEVICES=MIG-1b3c0f2a-5d6e-5f70-8a9b-0c1d2e3f4a50"
    assert first in [step.get("command") for step in mig["fix"]["steps"]]
    assert d.statuses("fail") == set()
    # A job that needs two GPUs in one process fails, pointing at the slices.
    d = doctor(machine, "--min-gpus", "2")
    assert d.returncode == 1
    assert d.statuses("fail") == {"require.min-gpus"}
    # Naming the slice, as the fix says.
    env = {"CUDA_VISIBLE_DEVICES": "MIG-1b3c0f2a-5d6e-5f70-8a9b-0c1d2e3f4a50"}
    d = doctor(machine, env=env)
    assert d.returncode == 0, d.statuses("fail")
    mig = d.finding("gpu.mig")
    assert mig["status"] == "info" and mig["title"] == "MIG is on for 1 GPU(s)"
    text = d.text("gpu.mig")
    assert "GPU 0 (NVIDIA A100-SXM4-80GB, 00000000:01:00.0): 4 MIG device(s)" in text
    assert "NVIDIA A100-SXM4-80GB MIG 1g.20gb MIG-1b3c0f2a-5d6e-5f70-8a9b-0c1d2e3f4a50" in text
    assert "CUDA_VISIBLE_DEVICES=MIG-<uuid>" in text
    devices = d.gpu(0)["mig_devices"]
    assert [m["index"] for m in devices] == [0, 1, 2, 3]
    assert {m["memory_total"] for m in devices} == {19968 * MIB}
    assert d.gpu(0)["field_errors"]["utilization_gpu"] == "NotSupported"  # with MIG on
    # CUDA sees one MIG device, not the whole GPU: not a missing device.
    assert d.status("cuda.driver-api") == "pass"
    assert "device 0: NVIDIA A100-SXM4-80GB MIG 1g.20gb (compute 8.0)" in d.text("cuda.driver-api")
    # The real capture has persistence off on this data-centre GPU: a warning, not a failure.
    assert d.status("driver.persistence-mode") == "warn"
    # What one process gets is one slice.
    d = doctor(machine, "--min-memory=40GiB", env=env)
    assert d.returncode == 1
    assert "19.5 GiB in its largest MIG device" in d.text("require.min-memory")


def test_mig_enabled_without_mig_devices_fails(simulate: Simulate) -> None:
    gpu = replace(sim.a100_mig(), mig_devices=[])
    d = doctor(simulate(Scenario(gpus=[gpu], driver="535.54.03", cuda=12020)))
    assert d.returncode == 1
    assert d.status("gpu.mig") == "fail"
    assert "no MIG devices exist on 1 GPU(s)" in d.finding("gpu.mig")["title"]
    assert "nvidia-smi mig -i 0 -cgi" in d.finding("gpu.mig")["fix"]["text"]


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
    lost = d.finding("gpu.lost")
    assert lost["status"] == "fail"
    assert lost["title"].startswith("1 GPU(s) do not answer: fallen off the bus")
    assert lost["evidence"] == ["GPU 2: GpuIsLost", "4 NVIDIA GPU(s) on the PCI bus"]
    assert "sudo nvidia-smi -r" in lost["fix"]["text"] and "Xid 79" in lost["fix"]["text"]
    assert d.gpu(2)["handle_error"]["name"] == "GpuIsLost"
    assert d.gpu(3)["name"] == "NVIDIA H100 80GB HBM3"  # the others are fully read
    assert d.status("driver.nvml") == "pass"
    assert "3 device(s)" in d.finding("cuda.driver-api")["title"]
    # The GPU checks judge the three that answer.
    assert d.finding("gpu.ecc-errors")["title"].endswith("on 3 GPU(s) since boot")
    d = doctor(machine, "--min-gpus=4")
    assert d.finding("require.min-gpus")["title"] == "Needs 4 GPU(s), has 3"


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
    assert d.finding("gpu.lost")["title"] == "No GPU facts from the driver (see driver.nvml)"
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
    assert d.status("gpu.throttling") == "pass"
    assert d.finding("driver.nvml")["title"] == "Driver 470.74, supports CUDA 11.4, 1 GPU(s)"
    assert gpu["power_draw_w"] is None and gpu["power_limit_w"] == 30.0
    assert d.status("gpu.pcie-link") == "pass"  # x4 of x4: the card's own width


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


def test_uncorrectable_ecc_errors(simulate: Simulate) -> None:
    gpus = [h100(i) for i in range(8)]
    gpus[5] = replace(gpus[5], ecc_uncorrected=(2, 7))
    gpus[1] = replace(gpus[1], ecc_uncorrected=(0, 3))  # errors before this boot only
    d = doctor(simulate(Scenario(gpus=gpus)))
    assert d.returncode == 1
    ecc = d.finding("gpu.ecc-errors")
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
    remap = d.finding("gpu.memory-remapping")
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
    remap = d.finding("gpu.memory-remapping")
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
    throttle = d.finding("gpu.throttling")
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
    assert d.status("gpu.throttling") == "warn"
    assert "close to its slowdown temperature (86 °C, slowdown at 89 °C)" in d.text(
        "gpu.throttling"
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
    mem = d.finding("gpu.memory-in-use")
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
    mode = d.finding("gpu.compute-mode")
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
    req = d.finding("require.min-gpus")
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
        d.finding("gpu.ecc-errors")["title"] == "No uncorrectable ECC errors on 1 GPU(s) since boot"
    )


# --- the probes alone (no fake root needed) -------------------------------------------------


def probe_env(machine: Machine, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    return {**env, **machine.env, **extra}


def test_probe_not_supported_fields_are_field_errors(simulate: Simulate) -> None:
    gpu = replace(sim.rtx_3060(), fan=None, power_limit_mw=None)
    machine = simulate(Scenario(gpus=[gpu], driver="570.124.04", cuda=12080))
    facts, run = probe_nvml(30, env=probe_env(machine), init=True)
    assert run.status == "ok", run.error
    assert facts.driver_version == "570.124.04" and facts.cuda_driver_version == 12080
    assert facts.library_path == str(machine.lib_dir / "libnvidia-ml.so.570.124.04")
    (g,) = facts.gpus
    assert g.field_errors == {
        "serial": "NotSupported",
        "fan_speed_pct": "NotSupported",
        "power_limit_w": "NotSupported",
        "ecc_enabled": "NotSupported",
        "mig_enabled": "NotSupported",
        "fabric_state": "NotSupported",  # not NVSwitch-attached
        "nvlink_active": "NotSupported",  # no NVLink
    }
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current) == (1, 4, 16)
    assert (g.temperature_c, g.temperature_slowdown_c, g.temperature_shutdown_c) == (42, 95, 98)
    assert g.uuid == "GPU-d6889ff6-2523-9142-ca3c-1ca3f396a625"
    assert g.display_active is False and g.persistence_mode is True


def test_probe_crash_costs_one_field(simulate: Simulate) -> None:
    machine = simulate(h100_node(4, faults=[crash("nvmlDeviceGetTemperature", 2)]))
    facts, run = probe_nvml(30, env=probe_env(machine), init=True)
    assert run.status == "crashed"
    assert run.error is not None
    assert "crashed with SIGSEGV in nvmlDeviceGetTemperature gpu=2" in run.error
    assert run.error.endswith("the other facts are complete")
    assert len(facts.gpus) == 4
    for g in facts.gpus:
        assert g.temperature_c is None and g.field_errors["temperature_c"] == "Crashed"
        assert g.name == "NVIDIA H100 80GB HBM3" and g.power_limit_w == 700.0
        assert g.ecc_uncorrected_volatile == 0 and g.remap_failed is False


def test_probe_hang_times_out(simulate: Simulate) -> None:
    machine = simulate(h100_node(2, faults=[sim.sleep("nvmlDeviceGetUUID", 60, 1)]))
    start = time.monotonic()
    facts, run = probe_nvml(2, env=probe_env(machine), init=True)
    assert time.monotonic() - start < 15
    assert run.status == "timeout"
    assert run.error is not None
    assert re.fullmatch(r"timed out after (2|1\.9\d*) s in nvmlDeviceGetUUID gpu=1", run.error)
    # What came before the hang is kept: the header and GPU 0.
    assert facts.driver_version == "590.48.01" and facts.device_count == 2
    assert [g.index for g in facts.gpus] == [0]


def test_probe_missing_functions_fall_back(simulate: Simulate) -> None:
    machine = simulate(
        Scenario(
            gpus=[sim.gt_1030()],
            driver="470.74",
            cuda=11040,
            missing=["nvmlDeviceGetCurrentClocksEventReasons"],
        )
    )
    facts, run = probe_nvml(30, env=probe_env(machine), init=True)
    assert run.status == "ok", run.error
    (g,) = facts.gpus
    assert g.clock_event_reasons == ["gpu_idle"]
    assert "clock_event_reasons" not in g.field_errors


def test_probe_a_function_missing_with_no_fallback(simulate: Simulate) -> None:
    machine = simulate(h100_node(1, missing=["nvmlDeviceGetRemappedRows"]))
    facts, run = probe_nvml(30, env=probe_env(machine), init=True)
    assert run.status == "ok", run.error
    assert facts.gpus[0].field_errors["remap_pending"] == "FunctionNotFound"
    assert facts.gpus[0].remap_pending is None


def test_probe_cuda_driver_devices(simulate: Simulate) -> None:
    machine = simulate(
        Scenario(gpus=[sim.rtx_4080_super(), sim.rtx_2080_super()], driver="595.71.05", cuda=13020)
    )
    facts, run = probe_cuda_driver(30, probe_env(machine), init=True)
    assert run.status == "ok", run.error
    assert facts.init_result == 0 and facts.driver_version == 13020
    assert facts.library_path == str(machine.lib_dir / "libcuda.so.595.71.05")
    assert [(d.name, d.compute_capability, d.memory_total) for d in facts.devices] == [
        ("NVIDIA GeForce RTX 4080 SUPER", "8.9", 16376 * MIB),
        ("NVIDIA GeForce RTX 2080 SUPER", "7.5", 8192 * MIB),
    ]
    facts, _ = probe_cuda_driver(30, probe_env(machine, CUDA_VISIBLE_DEVICES="1"), init=True)
    assert [d.name for d in facts.devices] == ["NVIDIA GeForce RTX 2080 SUPER"]
    machine = simulate(h100_node(1, faults=[error("cuInit", sim.CUDA_ERROR_NO_DEVICE)]))
    facts, run = probe_cuda_driver(30, probe_env(machine), init=True)
    assert (facts.init_result, facts.init_error_name) == (100, "CUDA_ERROR_NO_DEVICE")


def test_scenario_file_format(tmp_path: Path) -> None:
    """The file the C libraries parse: see tests/sim/README.md."""
    text = Scenario(
        gpus=[sim.rtx_3060()],
        driver="570.124.04",
        cuda=12080,
        faults=[sim.sleep("nvmlInit", 30), crash("nvmlDeviceGetTemperature", 0)],
        missing=["nvmlDeviceGetCurrentClocksEventReasons"],
    ).text()
    lines = text.splitlines()
    assert "driver 570.124.04" in lines and "cuda 12080" in lines
    assert "gpu 0 name NVIDIA GeForce RTX 3060" in lines
    assert "gpu 0 pci 00000000:2D:00.0 0x248710de 0x36583842" in lines
    assert "fault nvmlInit * sleep 30" in lines
    assert "fault nvmlDeviceGetTemperature 0 crash 0" in lines
    assert "fault nvmlDeviceGetEccMode 0 error 3" in lines  # ecc=None: not supported
    assert "missing nvmlDeviceGetCurrentClocksEventReasons" in lines
    assert lines.index("fault nvmlInit * sleep 30") < lines.index(
        "fault nvmlDeviceGetEccMode 0 error 3"
    )
