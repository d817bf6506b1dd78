"""Healthy machines give no FAIL: a CI gate that blocks a machine that
works costs more trust than a missed warning.

Every real nvidia-smi capture in tests/fixtures/nvsmi (telegraf's XML files, the
nvidia_gpu_exporter bundles idle and under load, its query test row) is read into the facts
the NVML probe records (tests/support/nvsmi_captures.py), put on a machine whose driver answers as the
capture shows, and diagnosed by every check. Each is a case of its own. The README of the
captures names the legitimate oddities they carry: idle PCIe downtraining to gen 1, x8 links,
a vGPU guest with no PCIe facts, a board the driver could not name, R610's new header.
"""

from __future__ import annotations

import pytest
from support import builders, evaluate, nvsmi_captures

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot

CAPTURES = nvsmi_captures.all_captures()


def machine(capture: nvsmi_captures.Capture) -> Snapshot:
    """A machine whose driver shows what `capture` showed, everything else healthy."""
    snap = builders.node(capture.gpus, driver=capture.driver or "", cuda=capture.cuda or 0)
    if capture.driver is None:  # gtx-1070-ti.xml was trimmed to its GPU block
        snap.nvml.driver_version = snap.nvml.nvml_version = None
    if capture.cuda is None:
        snap.nvml.cuda_driver_version = snap.cuda.driver.driver_version = None
    sysf = snap.system
    if capture.os == "Windows":
        sysf.os, sysf.kernel = "Windows", "10.0.22631"
        sysf.os_release = None
        sysf.nvidia_module_version = sysf.nvidia_module_banner = None
        sysf.nvidia_module_loaded = None
        sysf.nvidia_modules = []
    else:
        sysf.nvidia_module_version = capture.driver
        sysf.nvidia_module_banner = (
            f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {capture.driver}  Release Build"
            if capture.driver
            else None
        )
    for dev, gpu in zip(sysf.pci_gpus, capture.gpus, strict=True):
        dev.name = None  # the pci.ids name is not in the capture
        dev.class_code = "0x030200" if gpu.display_active is False else "0x030000"
    return snap


@pytest.mark.parametrize("capture", CAPTURES, ids=[c.name for c in CAPTURES])
def test_a_real_healthy_capture_has_no_fail(capture: nvsmi_captures.Capture) -> None:
    findings = evaluate.run_checks(machine(capture))
    failed = [f"{f.id}: {f.title}" for f in findings if f.status is Status.FAIL]
    assert failed == [], capture.name


def test_the_captures_are_all_read() -> None:
    """29 data files (README), the 10 bundles twice (idle and load): 40 machines."""
    assert len(CAPTURES) == 19 + 2 * 10 + 1
    assert sum(len(c.gpus) for c in CAPTURES) == 19 + 3 + 2 * 10 + 1  # three dual-GPU files


def test_the_legitimate_oddities_are_read_as_printed() -> None:
    """The README's edge cases, so that 'no FAIL' above is about them."""
    by = {c.name: c for c in CAPTURES}
    idle_4090 = by[
        "nvidia_gpu_exporter/linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt@idle"
    ]
    assert (idle_4090.gpus[0].pcie_gen_current, idle_4090.gpus[0].pcie_gen_max) == (1, 4)
    loaded = by[
        "nvidia_gpu_exporter/linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt@load"
    ]
    assert loaded.gpus[0].pcie_gen_current == 4
    t4 = by["telegraf/tesla-t4.xml"].gpus[0]
    assert (t4.pcie_width_current, t4.pcie_width_max) == (8, 16)
    assert by["telegraf/dual_2070-v13.xml"].gpus[1].pcie_width_current == 8
    p4 = by["telegraf/tesla_p4.xml"]
    assert p4.virtualization == ["VGPU"] and p4.gpus[0].name == "GRID P4-1Q"
    assert p4.gpus[0].pcie_gen_current is None and p4.os == "Windows"
    assert by["telegraf/gtx-1660-ti.xml"].gpus[0].name == "Graphics Device"
    r610 = by["nvidia_gpu_exporter/linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.txt@idle"]
    assert (r610.driver, r610.cuda) == ("610.57.04", 13030)  # "CUDA UMD Version: 13.3"
    mig = by["nvidia_gpu_exporter/linux-x86_64__nvidia-h100-mig__590.48.01.txt@idle"].gpus[0]
    assert mig.mig_enabled is True and len(mig.mig_devices) == 4
    a100 = by["telegraf/a100-sxm4-v12.xml"].gpus[0]
    assert a100.mig_enabled is True and len(a100.mig_devices) == 4
    assert by["telegraf/3090-v13.xml"].gpus[0].clock_event_reasons == ["sw_power_cap"]


def test_a_vgpu_guests_desktop_memory_warns_naming_its_holders() -> None:
    """tesla_p4.xml: a GRID P4-1Q guest on Windows, 807 of 1024 MiB used by C+G processes whose
    sizes WDDM does not report. A warning, and its fix names the PIDs (it had no fix at all)."""
    capture = next(c for c in CAPTURES if c.name == "telegraf/tesla_p4.xml")
    found = evaluate.the(machine(capture), "gpus.memory-in-use")
    assert found.status is Status.WARN
    assert found.fix is not None
    assert "PID(s) 1188, 2124, 3696" in found.fix.text and "gpucheck procs" in found.fix.text
