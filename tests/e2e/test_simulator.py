"""The real `gpucheck` command on simulated GPU machines (tests/sim): fake libnvidia-ml.so.1 and
libcuda.so.1 built from C against NVIDIA's nvml.h, loaded by nvidia-ml-py and ctypes through
the ordinary loader path (LD_LIBRARY_PATH), plus a fake /proc, /sys, /dev and /etc that the
system probe reads through GPUCHECK_ROOT. Each scenario asserts findings, statuses and the exit
code; a few the human text too. This module: healthy and differently configured machines (mixed
GPUs, consumer GPUs, PCIe links, MIG); faults are in test_simulator_driver.py and
test_simulator_faults.py, the probes alone in test_simulator_probes.py."""

from __future__ import annotations

from conftest import Simulate
from sim import scenario as sim
from sim.scenario import (
    MIB,
    Scenario,
    h100,
    h100_node,
    replace,
)
from support.sim_doctor import EVERYTHING_PASSES, doctor, doctor_text

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
    assert "gpus.mig" not in d.findings  # MIG off: nothing to say
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
    assert gpu["clock_sm_mhz"] == 1980  # (bench follows it during --duration)
    assert gpu["clock_event_reasons"] == ["gpu_idle"]
    assert gpu["brand"] == "NVIDIA" and gpu["processes"] == []
    assert gpu["field_errors"] == {
        "fan_speed_pct": "NotSupported",  # passively cooled
        "temperature_slowdown_c": "NotSupported",
        "temperature_shutdown_c": "NotSupported",
        "retired_pages_sbe": "NotSupported",
        "retired_pages_dbe": "NotSupported",
        "retired_pages_pending": "NotSupported",
        # this scenario has no fabric (tests/e2e/test_fabric_sim.py's HGX boards do)
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
    for check_id in (
        "requirements.min-gpus",
        "requirements.min-memory",
        "requirements.min-compute-capability",
    ):
        assert d.status(check_id) == "pass", d.finding(check_id)
    # An "80GB" H100 has 81559 MiB: less than 80 GiB.
    d = doctor(machine, "--min-memory=80GiB")
    assert d.returncode == 1
    assert d.status("requirements.min-memory") == "fail"
    assert "8 GPU(s) have less than 80GiB" in d.text("requirements.min-memory")


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
    assert d.status("gpus.pcie-link") == "pass"
    assert "gen 1 of 3 at 0% utilisation (idle: normal power saving)" in d.text("gpus.pcie-link")
    assert d.status("gpus.ecc-errors") == "skip"
    assert "driver.persistence-mode" not in d.findings  # consumer cards: not judged
    assert d.finding("cuda.driver-api")["title"] == "CUDA driver API 13.2: 2 device(s)"
    assert "device 1: NVIDIA GeForce RTX 2080 SUPER (compute 7.5)" in d.text("cuda.driver-api")
    # A job that needs Ampere or newer cannot use the Turing card.
    d = doctor(machine, "--min-compute-capability=8.0")
    assert d.returncode == 1
    req = d.finding("requirements.min-compute-capability")
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
    ecc = d.finding("gpus.ecc-errors")
    assert ecc["status"] == "skip" and ecc["title"] == "ECC: not supported by these GPUs"
    assert "NotSupported" in d.text("gpus.ecc-errors")
    assert "gpus.memory-remapping" not in d.findings and "gpus.mig" not in d.findings
    kernel = d.finding("driver.kernel-module")
    assert kernel["title"] == "nvidia kernel module 570.124.04 loaded"
    assert d.finding("cuda.driver-api")["title"] == "CUDA driver API 12.8: 1 device(s)"


def test_idle_gpu_at_pcie_gen_1_of_4_passes_but_not_under_load(simulate: Simulate) -> None:
    idle = simulate(Scenario(gpus=[sim.rtx_3060()], driver="570.124.04", cuda=12080))
    d = doctor(idle)
    assert d.returncode == 0
    link = d.finding("gpus.pcie-link")
    assert link["status"] == "pass" and link["title"] == "PCIe links at full width on 1 GPU(s)"
    assert link["evidence"] == [
        "GPU 0 (NVIDIA GeForce RTX 3060, 00000000:2D:00.0): gen 1 of 4 at 0% utilisation "
        "(idle: normal power saving)"
    ]
    busy = replace(sim.rtx_3060(), utilization=97)
    d = doctor(simulate(Scenario(gpus=[busy], driver="570.124.04", cuda=12080)))
    assert d.returncode == 0  # a warning
    assert d.status("gpus.pcie-link") == "warn"
    assert "gen 1 of 4 at 97% utilisation (under load)" in d.text("gpus.pcie-link")


def test_pcie_link_trained_at_x4_of_x16(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[*map(h100, range(3)), replace(h100(3), pcie=(5, 5, 4, 16))]))
    d = doctor(machine)
    assert d.returncode == 1
    link = d.finding("gpus.pcie-link")
    assert link["status"] == "fail"
    assert "quarter or less" in link["title"]
    assert link["evidence"] == ["GPU 3 (NVIDIA H100 80GB HBM3, 00000000:5D:00.0): x4 of x16"]
    assert "Reseat the GPU" in link["fix"]["text"]
    assert d.statuses("fail") == {"gpus.pcie-link"}


def test_a100_with_mig_enabled_and_slices(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[sim.a100_mig()], driver="535.54.03", cuda=12020))
    # CUDA_VISIBLE_DEVICES unset: a process gets one of the four slices (pytorch#102715):
    # information naming that slice and how to choose another, not a failed machine.
    d = doctor(machine)
    assert d.returncode == 0
    mig = d.finding("gpus.mig")
    assert mig["status"] == "info" and "sees one slice of 4" in mig["title"]
    first = "export CUDA_VISIBLE_DEVICES=MIG-1b3c0f2a-5d6e-5f70-8a9b-0c1d2e3f4a50"
    assert first in [step.get("command") for step in mig["fix"]["steps"]]
    assert d.statuses("fail") == set()
    # A job that needs two GPUs in one process fails, pointing at the slices.
    d = doctor(machine, "--min-gpus", "2")
    assert d.returncode == 1
    assert d.statuses("fail") == {"requirements.min-gpus"}
    # Naming the slice, as the fix says.
    env = {"CUDA_VISIBLE_DEVICES": "MIG-1b3c0f2a-5d6e-5f70-8a9b-0c1d2e3f4a50"}
    d = doctor(machine, env=env)
    assert d.returncode == 0, d.statuses("fail")
    mig = d.finding("gpus.mig")
    assert mig["status"] == "info" and mig["title"] == "MIG is on for 1 GPU(s)"
    text = d.text("gpus.mig")
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
    assert "19.5 GiB in its largest MIG device" in d.text("requirements.min-memory")


def test_mig_enabled_without_mig_devices_fails(simulate: Simulate) -> None:
    gpu = replace(sim.a100_mig(), mig_devices=[])
    d = doctor(simulate(Scenario(gpus=[gpu], driver="535.54.03", cuda=12020)))
    assert d.returncode == 1
    assert d.status("gpus.mig") == "fail"
    assert "no MIG devices exist on 1 GPU(s)" in d.finding("gpus.mig")["title"]
    assert "nvidia-smi mig -i 0 -cgi" in d.finding("gpus.mig")["fix"]["text"]
