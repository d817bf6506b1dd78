"""Per-GPU health checks: lost GPUs, ECC errors, memory remapping, throttling. Each test takes a
healthy node and breaks one fact on one GPU, then checks that the finding names that GPU and says
what to do about it (the configuration checks are in test_checks_gpus_modes.py)."""

from __future__ import annotations

import pytest
from support import builders
from support import more_builders as mb
from support.evaluate import finding, the

from gpucheck.model.finding import GpuRef, Status
from gpucheck.model.snapshot import NvmlError

GIB = 1024**3


# --- gpus.lost ----------------------------------------------------------------------------------


def test_all_gpus_answering_passes() -> None:
    f = the(builders.h100_node(8), "gpus.lost")
    assert f.status is Status.PASS
    assert "All 8 GPU(s) answer" in f.title


def test_a_gpu_that_cannot_be_opened_fails_naming_it() -> None:
    snap = builders.h100_node(8)
    snap.nvml.gpus[5].handle_error = NvmlError(15, "GpuIsLost", "GPU is lost")
    f = the(snap, "gpus.lost")
    assert f.status is Status.FAIL
    assert f.title.startswith("1 GPU(s) do not answer")
    assert "GPU 5: GpuIsLost" in f.evidence
    assert "8 NVIDIA GPU(s) on the PCI bus" in f.evidence
    assert f.fix and "nvidia-smi -r" in f.fix.text and "Xid 79" in f.fix.text
    assert f.subjects.gpus == [
        GpuRef(5, "GPU-00000005-0000-0000-0000-000000000000", "00000000:68:00.0")
    ]


def test_fewer_gpus_read_than_the_driver_counts_fails() -> None:
    snap = builders.h100_node(8)
    snap.nvml.gpus = snap.nvml.gpus[:7]
    f = the(snap, "gpus.lost")
    assert f.status is Status.FAIL
    assert f.title.startswith("1 GPU(s) do not answer")
    assert "the driver counts 8 GPUs but only 7 were read" in f.evidence


def test_lost_gpu_health_is_not_judged() -> None:
    """A GPU without a handle has no facts: no other GPU check blames or clears it."""
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].handle_error = NvmlError(15, "GpuIsLost", "GPU is lost")
    snap.nvml.gpus[1].ecc_uncorrected_volatile = 9
    snap.nvml.gpus[1].compute_mode = "prohibited"
    assert the(snap, "gpus.ecc-errors").status is Status.PASS
    assert the(snap, "gpus.compute-mode").status is Status.PASS


def test_gpu_lost_skips_without_driver_facts_and_is_silent_without_a_gpu() -> None:
    snap = mb.nvml_fails(builders.h100_node(2), "DriverNotLoaded")
    assert the(snap, "gpus.lost").status is Status.SKIP
    assert finding(builders.no_gpu_machine(), "gpus.lost") is None


def test_a_gpu_on_the_bus_the_driver_does_not_see_fails_with_the_causes() -> None:
    # open-gpu-kernel-modules#789: lspci shows the RTX 3090, nvidia-smi "No devices were
    # found", the kernel log "RmInitAdapter failed!".
    snap = builders.workstation()
    snap.nvml.gpus, snap.nvml.device_count = [], 0
    snap.system.kernel_log_nvrm = [
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.144.03",
        "NVRM: RmInitAdapter: Cannot initialize GSP firmware RM",
        "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0x65:1792)",
        "NVRM: GPU 0000:02:00.0: Xid 79, pid=1, GPU has fallen off the bus.",  # another GPU
    ]
    f = the(snap, "gpus.lost")
    assert f.status is Status.FAIL
    assert f.title.startswith("1 GPU(s) on the PCI bus are not seen by the driver")
    assert f.evidence == [
        "1 NVIDIA GPU(s) on the PCI bus, the driver 570.124.04 sees 0",
        "device 0x2504 at 0000:01:00.0: not initialised by the driver",
        "kernel log: NVRM: RmInitAdapter: Cannot initialize GSP firmware RM",
        "kernel log: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0x65:1792)",
    ]
    snap.system.kernel_log_nvrm = None
    snap.system.kernel_log_error = "the kernel log is not readable by this user"
    f = the(snap, "gpus.lost")
    assert f.evidence[-1] == "kernel log: the kernel log is not readable by this user"
    assert f.fix is not None
    assert "sudo dmesg | grep -E 'NVRM|RmInitAdapter|Xid'" in f.fix.commands
    for cause in ("Above 4G Decoding", "Resizable BAR", "power", "newer driver branch"):
        assert cause in f.fix.text
    assert f.subjects.paths == ["/sys/bus/pci/devices/0000:01:00.0"]


def test_one_of_eight_gpus_missing_from_nvml_is_named_by_its_bus_address() -> None:
    snap = builders.h100_node(8)
    snap.nvml.gpus = snap.nvml.gpus[:3] + snap.nvml.gpus[4:]
    snap.nvml.device_count = 7
    f = the(snap, "gpus.lost")
    assert f.status is Status.FAIL
    assert "GH100 [H100 SXM5 80GB] at 0000:48:00.0: not initialised by the driver" in f.evidence


def test_gpus_on_a_containers_bus_or_bound_to_vfio_are_not_the_drivers_to_see() -> None:
    snap = builders.h100_node(2)
    snap.nvml.gpus, snap.nvml.device_count = snap.nvml.gpus[:1], 1
    snap.system.pci_gpus[1].driver = "vfio-pci"
    assert the(snap, "gpus.lost").status is Status.PASS
    snap.system.pci_gpus[1].driver = "nvidia"
    snap.system.container = "docker"  # the host's bus, one GPU passed in
    assert the(snap, "gpus.lost").status is Status.PASS


def test_a_lost_gpu_reset_names_its_index() -> None:
    snap = builders.h100_node(8)
    snap.nvml.gpus[5].handle_error = NvmlError(15, "GpuIsLost", "GPU is lost")
    snap.system.kernel_log_nvrm = [
        "NVRM: Xid (PCI:0000:68:00): 79, pid=1234, GPU has fallen off the bus.",
        "NVRM: Xid (PCI:0000:18:00): 13, pid=99, Graphics Exception",
    ]
    f = the(snap, "gpus.lost")
    assert f.fix and f.fix.commands[0] == "sudo nvidia-smi -r -i 5"
    xids = [e for e in f.evidence if "Xid" in e]
    assert xids == [
        "kernel log: NVRM: Xid (PCI:0000:68:00): 79, pid=1234, GPU has fallen off the bus.",
        # NVIDIA's catalog (compat/xids.toml) says what it means and what to do
        "means: Xid 79 (GPU has fallen off the bus): NVIDIA's action RESTART_BM",
    ]
    assert f.fix.steps[0].kind.value == "reboot" and "a GPU reset is not enough" in f.fix.text
    assert [(g.index, g.pci_bus_id) for g in f.subjects.gpus] == [(5, "00000000:68:00.0")]


# --- gpus.ecc-errors ----------------------------------------------------------------------------


def test_no_ecc_errors_passes() -> None:
    f = the(builders.h100_node(8), "gpus.ecc-errors")
    assert f.status is Status.PASS
    assert "8 GPU(s)" in f.title
    assert f.evidence == []


def test_uncorrectable_ecc_errors_fail_naming_the_gpu_and_count() -> None:
    snap = builders.h100_node(8)
    snap.nvml.gpus[6].ecc_uncorrected_volatile = 3
    f = the(snap, "gpus.ecc-errors")
    assert f.status is Status.FAIL
    assert f.title.startswith("Uncorrectable ECC memory errors on 1 GPU(s)")
    assert f.evidence == [
        "GPU 6 (NVIDIA H100 80GB HBM3, 00000000:78:00.0): "
        "3 uncorrectable error(s) since the last reboot"
    ]
    assert f.fix and "sudo nvidia-smi -r -i 6" in f.fix.commands
    assert [g.uuid for g in f.subjects.gpus] == ["GPU-00000006-0000-0000-0000-000000000000"]
    assert f.fix and "Drain the node" in f.fix.text and "RMA" in f.fix.text
    assert f.subjects.gpus == [
        GpuRef(6, "GPU-00000006-0000-0000-0000-000000000000", "00000000:78:00.0")
    ]


def test_lifetime_ecc_errors_only_are_a_note_on_a_pass() -> None:
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].ecc_uncorrected_aggregate = 4
    f = the(snap, "gpus.ecc-errors")
    assert f.status is Status.PASS
    assert f.evidence == ["GPU 1 (NVIDIA H100 80GB HBM3, 00000000:28:00.0): 4 in its lifetime"]


def test_ecc_off_everywhere_is_info() -> None:
    snap = builders.h100_node(2)
    for g in snap.nvml.gpus:
        g.ecc_enabled = False
    f = the(snap, "gpus.ecc-errors")
    assert f.status is Status.INFO
    assert "ECC is off" in f.title


def test_ecc_not_supported_skips_with_the_reason() -> None:
    f = the(builders.workstation(), "gpus.ecc-errors")
    assert f.status is Status.SKIP
    assert f.evidence == ["unknown on 1 GPU(s): NotSupported"]


def test_ecc_counter_unknown_is_not_reported_as_no_errors() -> None:
    snap = builders.h100_node(2)
    for g in snap.nvml.gpus:
        g.ecc_uncorrected_volatile = None
        g.field_errors["ecc_uncorrected_volatile"] = "NotSupported"
    assert the(snap, "gpus.ecc-errors").status is not Status.PASS


# --- gpus.memory-remapping ----------------------------------------------------------------------


def test_no_pending_repairs_passes() -> None:
    f = the(builders.h100_node(8), "gpus.memory-remapping")
    assert f.status is Status.PASS


def test_pending_row_remap_warns() -> None:
    snap = builders.h100_node(4)
    snap.nvml.gpus[1].remap_pending = True
    f = the(snap, "gpus.memory-remapping")
    assert f.status is Status.WARN
    assert f.evidence == [
        "GPU 1 (NVIDIA H100 80GB HBM3, 00000000:28:00.0): a row remap is pending "
        "(takes effect at the next GPU reset)"
    ]
    assert f.fix and "nvidia-smi -r" in f.fix.text
    assert f.fix.commands == ["sudo nvidia-smi -r -i 1"]


def test_failed_row_remap_fails() -> None:
    snap = builders.h100_node(4)
    snap.nvml.gpus[2].remap_pending = True  # failed outranks pending
    snap.nvml.gpus[3].remap_failed = True
    f = the(snap, "gpus.memory-remapping")
    assert f.status is Status.FAIL
    assert len(f.evidence) == 1 and f.evidence[0].startswith("GPU 3 ")
    assert [g.index for g in f.subjects.gpus] == [3]
    assert "no spare rows left" in f.evidence[0]
    assert f.fix and "RMA" in f.fix.text and "dcgmi diag" in f.fix.text


def test_pending_page_retirement_warns() -> None:
    snap = mb.t4_vm()  # T4: page retirement, no row remapping
    snap.nvml.gpus[0].retired_pages_pending = True
    f = the(snap, "gpus.memory-remapping")
    assert f.status is Status.WARN
    assert "a page retirement is pending" in f.evidence[0]
    assert "Tesla T4" in f.evidence[0]


def test_retired_pages_without_pending_are_a_note() -> None:
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].retired_pages_dbe = 2
    f = the(snap, "gpus.memory-remapping")
    assert f.status is Status.PASS
    assert any("2 page(s) retired for double-bit errors" in e for e in f.evidence)


def test_remapping_not_reported_skips() -> None:
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].remap_pending = None
    snap.nvml.gpus[0].retired_pages_pending = None
    assert the(snap, "gpus.memory-remapping").status is Status.SKIP


# --- gpus.throttling ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("hw_slowdown", "hardware slowdown"),
        ("hw_thermal_slowdown", "too hot"),
        ("hw_power_brake_slowdown", "power brake"),
    ],
)
def test_hardware_slowdown_fails(reason: str, words: str) -> None:
    snap = builders.h100_node(8)
    gpu = snap.nvml.gpus[4]
    gpu.clock_event_reasons = ["sw_power_cap", reason]
    gpu.temperature_c = 88
    gpu.temperature_slowdown_c = 87  # as a driver reporting absolute thresholds would
    f = the(snap, "gpus.throttling")
    assert f.status is Status.FAIL
    assert f.title.startswith("1 GPU(s)")
    assert len(f.evidence) == 1
    assert f.evidence[0].startswith("GPU 4 (NVIDIA H100 80GB HBM3")
    assert words in f.evidence[0]
    assert "(88 °C, slowdown at 87 °C)" in f.evidence[0]
    assert f.fix and "cooling" in f.fix.text and "power" in f.fix.text
    assert f.title == "1 GPU(s) are slowed down by hardware protection"
    assert [(s.kind.value, s.command, [g.index for g in s.gpus]) for s in f.fix.steps] == [
        ("command", "nvidia-smi -i 4 -q -d PERFORMANCE,TEMPERATURE,POWER", [4]),
        ("hardware", None, [4]),
    ]


def test_software_thermal_slowdown_warns() -> None:
    snap = builders.h100_node(2)
    snap.nvml.gpus[0].clock_event_reasons = ["sw_thermal_slowdown"]
    snap.nvml.gpus[0].temperature_c = 80
    f = the(snap, "gpus.throttling")
    assert f.status is Status.WARN
    assert f.evidence[0].startswith("GPU 0 ")
    assert "software thermal slowdown (80 °C" in f.evidence[0]
    assert f.fix and "cooling" in f.fix.text
    assert f.title == "1 GPU(s) run hot enough to lower their clocks"
    assert [(s.kind.value, s.command, [g.index for g in s.gpus]) for s in f.fix.steps] == [
        ("hardware", None, [0]),
        ("command", "nvidia-smi -i 0 -q -d TEMPERATURE,PERFORMANCE", [0]),
    ]


def test_close_to_the_slowdown_temperature_warns() -> None:
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].clock_event_reasons = []
    snap.nvml.gpus[0].temperature_slowdown_c = 87
    snap.nvml.gpus[0].temperature_c = 83
    f = the(snap, "gpus.throttling")
    assert f.status is Status.WARN
    assert "close to its slowdown temperature" in f.evidence[0]


@pytest.mark.parametrize(
    "reasons", [["gpu_idle"], ["sw_power_cap"], ["gpu_idle", "sw_power_cap"], []]
)
def test_idle_and_power_cap_alone_pass(reasons: list[str]) -> None:
    snap = builders.h100_node(2)
    for g in snap.nvml.gpus:
        g.clock_event_reasons = list(reasons)
    f = the(snap, "gpus.throttling")
    assert f.status is Status.PASS


def test_throttle_reasons_unknown_skip() -> None:
    snap = builders.workstation()
    snap.nvml.gpus[0].clock_event_reasons = None
    snap.nvml.gpus[0].field_errors["clock_event_reasons"] = "NotSupported"
    f = the(snap, "gpus.throttling")
    assert f.status is Status.SKIP
    assert f.evidence == ["unknown on 1 GPU(s): NotSupported"]
