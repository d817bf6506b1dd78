"""The probes alone on the simulated libraries (no fake root needed), and the scenario file
format."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from conftest import Simulate
from sim import scenario as sim
from sim.scenario import (
    MIB,
    Machine,
    Scenario,
    crash,
    error,
    h100_node,
    replace,
)

from gpucheck.probes.native import probe_cuda_driver
from gpucheck.probes.nvml import probe_nvml

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
