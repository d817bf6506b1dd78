"""Per-GPU configuration checks: PCIe link, compute mode, MIG, memory in use, and a consumer
GPU's unknowns. Each test takes a healthy node and changes one fact on one GPU, then checks that
the finding names that GPU and says what to do about it."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import builders
from support import more_builders as mb
from support.builders import MIB
from support.evaluate import finding, run_checks, the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import GpuProcess, MigDevice

GIB = 1024**3


# --- gpus.pcie-link -----------------------------------------------------------------------------


def test_full_width_links_pass() -> None:
    f = the(builders.h100_node(8), "gpus.pcie-link")
    assert f.status is Status.PASS
    assert f.evidence == []


def test_x4_of_x16_fails() -> None:
    snap = builders.h100_node(8)
    snap.nvml.gpus[7].pcie_width_current = 4
    f = the(snap, "gpus.pcie-link")
    assert f.status is Status.FAIL
    assert f.evidence == ["GPU 7 (NVIDIA H100 80GB HBM3, 00000000:88:00.0): x4 of x16"]
    assert f.fix and "Reseat" in f.fix.text


def test_x8_of_x16_warns() -> None:
    f = the(mb.t4_vm(), "gpus.pcie-link")  # the real T4 capture: x8 of x16 in a cloud VM
    assert f.status is Status.WARN
    assert f.evidence == ["GPU 0 (Tesla T4, 00000000:00:1E.0): x8 of x16"]
    assert f.fix and "hypervisor" in f.fix.text


def test_idle_gpu_at_gen1_of_4_passes_with_a_note() -> None:
    snap = builders.workstation()  # RTX 3060 idle at gen 1 of 4
    f = the(snap, "gpus.pcie-link")
    assert f.status is Status.PASS
    assert f.evidence == [
        "GPU 0 (NVIDIA GeForce RTX 3060, 00000000:01:00.0): gen 1 of 4 at 0% utilisation "
        "(idle: normal power saving)"
    ]


def test_gen1_of_4_under_load_warns() -> None:
    snap = builders.workstation()
    snap.nvml.gpus[0].utilization_gpu = 90
    f = the(snap, "gpus.pcie-link")
    assert f.status is Status.WARN
    assert f.evidence == [
        "GPU 0 (NVIDIA GeForce RTX 3060, 00000000:01:00.0): gen 1 of 4 at 90% utilisation "
        "(under load)"
    ]


def test_gen1_of_5_with_the_load_unknown_warns_how_to_recheck_under_load() -> None:
    # open-gpu-kernel-modules#1010: Gen1 of Gen5, idle or a link that cannot retrain.
    snap = builders.workstation()
    snap.nvml.gpus[0].pcie_gen_max = 5
    snap.nvml.gpus[0].utilization_gpu = None
    f = the(snap, "gpus.pcie-link")
    assert f.status is Status.WARN
    assert f.evidence == [
        "GPU 0 (NVIDIA GeForce RTX 3060, 00000000:01:00.0): gen 1 of 5 at unknown utilisation "
        "(idle, or a link that cannot train)"
    ]
    assert f.fix and "under load" in f.fix.text
    assert f.fix.commands == [
        "nvidia-smi -i 0 --query-gpu=pcie.link.gen.current,pcie.link.gen.max,utilization.gpu "
        "--format=csv",
        "gpucheck bench --quick",
    ]


def test_pcie_unknown_skips() -> None:
    snap = builders.workstation()
    snap.nvml.gpus[0].pcie_width_current = None
    snap.nvml.gpus[0].field_errors["pcie_width_current"] = "NotSupported"
    assert the(snap, "gpus.pcie-link").status is Status.SKIP


# --- gpus.compute-mode --------------------------------------------------------------------------


def test_default_compute_mode_passes() -> None:
    f = the(builders.h100_node(8), "gpus.compute-mode")
    assert f.status is Status.PASS


def test_exclusive_process_warns_with_the_command_for_that_gpu() -> None:
    snap = builders.h100_node(8)
    snap.nvml.gpus[3].compute_mode = "exclusive_process"
    f = the(snap, "gpus.compute-mode")
    assert f.status is Status.WARN
    assert f.evidence == ["GPU 3 (NVIDIA H100 80GB HBM3, 00000000:48:00.0): exclusive_process"]
    assert f.fix and f.fix.commands == ["sudo nvidia-smi -i 3 -c DEFAULT"]
    assert [g.index for g in f.subjects.gpus] == [3]


def test_prohibited_fails_with_the_command_for_those_gpus() -> None:
    snap = builders.h100_node(8)
    snap.nvml.gpus[1].compute_mode = "prohibited"
    snap.nvml.gpus[6].compute_mode = "prohibited"
    snap.nvml.gpus[3].compute_mode = "exclusive_process"  # the worse one is reported
    f = the(snap, "gpus.compute-mode")
    assert f.status is Status.FAIL
    assert "prohibited on 2 GPU(s)" in f.title
    assert f.fix and f.fix.commands == ["sudo nvidia-smi -i 1,6 -c DEFAULT"]
    assert [g.uuid for g in f.subjects.gpus] == [
        "GPU-00000001-0000-0000-0000-000000000000",
        "GPU-00000006-0000-0000-0000-000000000000",
    ]


def test_exclusive_gpu_held_by_a_process_fails_naming_it() -> None:
    # digits#2005: K40m in E. Process with the digits server on it (74 MiB).
    snap = builders.h100_node(2)
    snap.nvml.gpus[0].compute_mode = "exclusive_process"
    builders.with_process(snap.nvml.gpus[0], 4711, "digits", 74)
    f = the(snap, "gpus.compute-mode")
    assert f.status is Status.FAIL
    assert "already held by another process" in f.title
    assert "busy or unavailable" in f.title
    assert f.evidence == [
        "GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0): exclusive_process, held by "
        "PID 4711 digits (0.1 GiB)"
    ]
    assert f.fix is not None
    assert f.fix.commands == [
        "export CUDA_VISIBLE_DEVICES=1",
        "ps -o pid,user,cmd -p 4711",
        "sudo nvidia-smi -i 0 -c DEFAULT",
    ]
    assert "exclusive-process mode" in f.fix.text


def test_exclusive_gpu_busy_with_no_process_listed_fails_too() -> None:
    # jade#73: E. Process V100s, 9 GB used at 98%, "no process running on the GPU".
    snap = builders.h100_node(1)
    gpu = snap.nvml.gpus[0]
    gpu.compute_mode, gpu.memory_used, gpu.utilization_gpu = "exclusive_process", 9 * GIB, 98
    f = the(snap, "gpus.compute-mode")
    assert f.status is Status.FAIL
    assert "a context not listed here (9.0 GiB used, 98% busy" in f.evidence[0]
    assert f.fix and "the host" in f.fix.text


def test_exclusive_gpu_with_processes_unknown_only_warns() -> None:
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].compute_mode = "exclusive_process"
    snap.nvml.gpus[0].processes = None
    snap.nvml.gpus[0].memory_used = 9 * GIB
    assert the(snap, "gpus.compute-mode").status is Status.WARN


# --- gpus.mig -----------------------------------------------------------------------------------


def test_mig_off_says_nothing() -> None:
    assert finding(builders.h100_node(2), "gpus.mig") is None


def test_mig_on_with_a_slice_named_is_info_about_mig_uuids() -> None:
    snap = builders.node([builders.a100_mig(0)])
    snap.system.env["CUDA_VISIBLE_DEVICES"] = "MIG-00000002-1111-2222-3333-444444444444"
    f = the(snap, "gpus.mig")
    assert f.status is Status.INFO
    assert "MIG is on for 1 GPU(s)" in f.title
    assert "4 MIG device(s)" in f.evidence[0]
    assert "MIG-00000000-1111-2222-3333-444444444444" in f.evidence[0]
    assert "MIG-00000003-1111-2222-3333-444444444444" in f.evidence[0]
    assert any("CUDA_VISIBLE_DEVICES=MIG-<uuid>" in e for e in f.evidence)


def test_mig_with_cuda_visible_devices_unset_is_information_naming_the_slice() -> None:
    # pytorch#102715 / #131650: four slices, CUDA_VISIBLE_DEVICES unset, device_count() == 1.
    # A single-slice job runs (on the first slice): information with the way to choose,
    # never a failure of a healthy MIG machine.
    snap = builders.node([builders.a100_mig(0)])
    f = the(snap, "gpus.mig")
    assert f.status is Status.INFO
    assert f.title == (
        "MIG is on: with CUDA_VISIBLE_DEVICES unset, a CUDA process sees one slice of 4 "
        "(NVIDIA A100-SXM4-80GB MIG 1g.20gb MIG-00000000-1111-2222-3333-444444444444)"
    )
    assert "CUDA_VISIBLE_DEVICES is unset" in f.evidence
    assert f.fix is not None
    assert f.fix.commands == [
        "export CUDA_VISIBLE_DEVICES=MIG-00000000-1111-2222-3333-444444444444",
        "sudo nvidia-smi -i 0 -mig 0",
    ]
    assert "MIG-00000003-1111-2222-3333-444444444444" in f.fix.text
    other = [s.command for s in f.fix.steps if s.option == 1]
    assert other == ["sudo nvidia-smi -i 0 -mig 0"]


def test_mig_with_a_whole_gpu_index_in_cuda_visible_devices_warns() -> None:
    snap = builders.node([builders.a100_mig(0)])
    snap.system.env["CUDA_VISIBLE_DEVICES"] = "0"
    f = the(snap, "gpus.mig")
    assert f.status is Status.WARN
    assert f.title == (
        "MIG is on and CUDA_VISIBLE_DEVICES names whole GPUs, not MIG slices: a CUDA process "
        "sees one slice of 4 (NVIDIA A100-SXM4-80GB MIG 1g.20gb "
        "MIG-00000000-1111-2222-3333-444444444444)"
    )
    assert "CUDA_VISIBLE_DEVICES = '0'" in f.evidence


def test_checks_page_says_what_gpu_mig_does_with_several_slices() -> None:
    # The page must not promise a failure the check deliberately does not give: one job per
    # slice (a scheduler's CUDA_VISIBLE_DEVICES, or none) is a healthy MIG node.
    page = (Path(__file__).parents[3] / "docs" / "checks.md").read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith("| `gpus.mig` |"))
    assert "naming whole GPUs (warn: a CUDA process sees one slice of them" in row
    assert "several slices with it unset (info" in row
    assert "MIG on without MIG devices (fail)" in row
    assert row.count("(fail") == 1


def test_mig_with_a_single_slice_is_info() -> None:
    gpu = builders.a100_mig(0)
    gpu.mig_devices = gpu.mig_devices[:1]
    assert the(builders.node([gpu]), "gpus.mig").status is Status.INFO


def test_mig_with_many_devices_lists_four_then_an_ellipsis() -> None:
    gpu = builders.a100_mig(0)
    gpu.mig_devices += [
        MigDevice(i, f"MIG-{i:08d}-1111-2222-3333-444444444444", "1g.10gb", 9728 * MIB)
        for i in range(4, 7)
    ]
    f = the(builders.node([gpu]), "gpus.mig")
    assert "7 MIG device(s)" in f.evidence[0]
    assert f.evidence[0].endswith(" ...")
    assert "MIG-00000004" not in f.evidence[0]


def test_mig_on_without_devices_fails() -> None:
    gpu = builders.a100_mig(0)
    gpu.mig_devices = []
    f = the(builders.node([builders.h100(1), gpu]), "gpus.mig")
    assert f.status is Status.FAIL
    assert f.evidence == ["GPU 0 (NVIDIA A100-SXM4-80GB, 00000000:01:00.0)"]
    assert f.fix and "sudo nvidia-smi mig -i 0 -cgi" in f.fix.text and "-mig 0" in f.fix.text


def test_mig_change_pending_warns() -> None:
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].mig_enabled_pending = True
    f = the(snap, "gpus.mig")
    assert f.status is Status.WARN
    assert f.evidence == [
        "GPU 1 (NVIDIA H100 80GB HBM3, 00000000:28:00.0): MIG off now, on after reset"
    ]
    assert f.fix and "nvidia-smi -r" in f.fix.text


# --- gpus.memory-in-use -------------------------------------------------------------------------


def test_free_memory_passes_and_notes_running_processes() -> None:
    snap = builders.h100_node(2)
    builders.with_process(snap.nvml.gpus[0], 1234, "python", 2048)
    f = the(snap, "gpus.memory-in-use")
    assert f.status is Status.PASS
    assert f.evidence == [
        "GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0): 1 process(es), 2.1 GiB used"
    ]


def test_a_process_holding_most_memory_warns_naming_its_pid() -> None:
    snap = builders.h100_node(2)
    builders.with_process(snap.nvml.gpus[1], 4242, "python", 70 * 1024)  # 70 GiB of 80
    f = the(snap, "gpus.memory-in-use")
    assert f.status is Status.WARN
    assert f.title.startswith("1 GPU(s)")
    assert len(f.evidence) == 1
    assert f.evidence[0].startswith("GPU 1 (NVIDIA H100 80GB HBM3, 00000000:28:00.0): 70.1 GiB")
    assert "of 79.6 GiB used by PID 4242 python (70.0 GiB)" in f.evidence[0]
    assert f.fix is not None
    assert "ps -o pid,user,cmd -p 4242" in f.fix.text
    assert "kill 4242" in f.fix.text
    assert "the other GPUs" in f.fix.text  # GPU 0 is free


def test_memory_held_by_no_listed_process_says_look_on_the_host() -> None:
    snap = builders.h100_node(1)
    gpu = snap.nvml.gpus[0]
    gpu.memory_used = 60 * GIB
    f = the(snap, "gpus.memory-in-use")
    assert f.status is Status.WARN
    assert "no process listed" in f.evidence[0]
    assert f.fix and "nvidia-smi on the host" in f.fix.text
    assert "other GPUs" not in f.fix.text  # there are none


def test_the_biggest_processes_come_first() -> None:
    snap = builders.h100_node(1)
    gpu = snap.nvml.gpus[0]
    gpu.processes = [
        GpuProcess(10, "small", 1 * GIB),
        GpuProcess(20, "big", 50 * GIB),
        GpuProcess(30, "mid", 10 * GIB),
    ]
    gpu.memory_used = 61 * GIB
    f = the(snap, "gpus.memory-in-use")
    assert f.status is Status.WARN
    ev = f.evidence[0]
    assert ev.index("PID 20 big") < ev.index("PID 30 mid") < ev.index("PID 10 small")


# --- a consumer GPU: unknowns are not passes ---------------------------------------------------


def test_consumer_gpu_unsupported_facts_skip_and_nothing_fails() -> None:
    snap = builders.workstation()
    gpu = snap.nvml.gpus[0]
    assert gpu.ecc_enabled is None and gpu.mig_enabled is None and gpu.serial is None
    findings = {f.id: f for f in run_checks(snap)}
    assert findings["gpus.ecc-errors"].status is Status.SKIP
    assert not [f.id for f in findings.values() if f.status in (Status.FAIL, Status.ERROR)]
    # the unknowns (ECC, remapping behind it, MIG) are never reported as passes
    for check_id in ("gpus.ecc-errors", "gpus.memory-remapping", "gpus.mig"):
        f = findings.get(check_id)
        assert f is None or f.status is not Status.PASS, check_id
    passes = [f for f in findings.values() if f.status is Status.PASS]
    assert not [f.id for f in passes if "ECC" in f.title or "MIG" in f.title]


def test_consumer_gpu_with_more_unknowns_still_never_passes_them() -> None:
    snap = builders.workstation()
    gpu = snap.nvml.gpus[0]
    gpu.clock_event_reasons = None
    gpu.pcie_width_current = gpu.pcie_width_max = None
    gpu.pcie_gen_current = gpu.pcie_gen_max = None
    findings = {f.id: f for f in run_checks(snap)}
    assert findings["gpus.throttling"].status is Status.SKIP
    assert findings["gpus.pcie-link"].status is Status.SKIP


def test_compute_mode_unknown_is_not_a_pass() -> None:
    snap = builders.workstation()
    snap.nvml.gpus[0].compute_mode = None
    snap.nvml.gpus[0].field_errors["compute_mode"] = "NotSupported"
    f = finding(snap, "gpus.compute-mode")
    assert f is None or f.status is not Status.PASS


def test_memory_use_unknown_is_not_a_pass() -> None:
    snap = builders.workstation()
    snap.nvml.gpus[0].memory_used = None
    snap.nvml.gpus[0].memory_free = None
    snap.nvml.gpus[0].field_errors["memory_used"] = "Unknown"
    f = finding(snap, "gpus.memory-in-use")
    assert f is None or f.status is not Status.PASS


@pytest.mark.parametrize(
    ("check_id", "field"),
    [
        ("gpus.ecc-errors", "ecc_uncorrected_volatile"),
        ("gpus.throttling", "clock_event_reasons"),
        ("gpus.pcie-link", "pcie_width_current"),
        ("gpus.compute-mode", "compute_mode"),
        ("gpus.memory-in-use", "memory_used"),
    ],
)
def test_a_pass_counts_only_the_gpus_whose_fact_is_known(check_id: str, field: str) -> None:
    snap = builders.h100_node(2)
    setattr(snap.nvml.gpus[1], field, None)
    snap.nvml.gpus[1].field_errors[field] = "GpuIsLost"
    f = the(snap, check_id)
    assert f.status is Status.PASS
    assert " 1 GPU(s)" in f.title
    assert "unknown on 1 GPU(s): GpuIsLost" in f.evidence
