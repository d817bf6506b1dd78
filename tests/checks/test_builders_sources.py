"""The snapshot builders say which real nvidia-smi output their values come from; this keeps
them honest, so that check tests run on machines that exist."""

from __future__ import annotations

import re
from xml.etree import ElementTree as ET

from conftest import SHARED_NVSMI
from support import builders

MIB = 1024**2


def _q_field(text: str, name: str) -> str:
    match = re.search(rf"^\s+{re.escape(name)}\s+: (.+)$", text, re.MULTILINE)
    assert match, name
    return match.group(1).strip()


def test_h100_builder_matches_the_h100_capture() -> None:
    text = (
        SHARED_NVSMI / "nvidia_gpu_exporter/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
    ).read_text()
    gpu = builders.h100(0)
    assert _q_field(text, "Product Name") == gpu.name
    assert _q_field(text, "Product Architecture") == gpu.architecture
    assert gpu.memory_total is not None
    assert f"Total                                          : {gpu.memory_total // MIB} MiB" in text
    assert _q_field(text, "Current Power Limit") == f"{gpu.power_limit_w:.2f} W"
    assert _q_field(text, "GPU Current Temp") == f"{gpu.temperature_c} C"
    assert _q_field(text, "GPU Slowdown T.Limit Temp").endswith(" C")  # a margin, not a threshold
    assert gpu.temperature_slowdown_c is None
    snap = builders.h100_node(1)
    assert f"Driver Version: {snap.nvml.driver_version}" in text.replace("  ", " ")
    assert "CUDA Version: 13.1" in text.replace("  ", " ")
    assert snap.nvml.cuda_driver_version == 13010


def _xml_gpu(name: str) -> tuple[ET.Element, ET.Element]:
    root = ET.parse(SHARED_NVSMI / "telegraf" / name).getroot()
    gpu = root.find("gpu")
    assert gpu is not None
    return root, gpu


def _mib(element: ET.Element, path: str) -> int:
    return int((element.findtext(path) or "").split()[0]) * MIB


def test_rtx_3060_builder_matches_its_capture() -> None:
    root, xml = _xml_gpu("rtx-3060-v12.xml")
    gpu = builders.rtx_3060()
    assert xml.findtext("product_name") == gpu.name
    assert _mib(xml, "fb_memory_usage/total") == gpu.memory_total
    assert xml.findtext("pci/pci_gpu_link_info/pcie_gen/max_link_gen") == str(gpu.pcie_gen_max)
    assert xml.findtext("pci/pci_gpu_link_info/pcie_gen/current_link_gen") == str(
        gpu.pcie_gen_current
    )
    assert xml.findtext("temperature/gpu_temp_slow_threshold") == f"{gpu.temperature_slowdown_c} C"
    snap = builders.workstation()
    assert root.findtext("driver_version") == snap.nvml.driver_version
    assert root.findtext("cuda_version") == "12.8" and snap.nvml.cuda_driver_version == 12080


def test_a100_mig_builder_matches_its_capture() -> None:
    _, xml = _xml_gpu("a100-sxm4-v12.xml")
    gpu = builders.a100_mig()
    assert xml.findtext("product_name") == gpu.name
    assert xml.findtext("uuid") == gpu.uuid
    assert _mib(xml, "fb_memory_usage/total") == gpu.memory_total
    migs = xml.findall("mig_devices/mig_device")
    assert len(migs) == len(gpu.mig_devices)
    assert [_mib(m, "fb_memory_usage/total") for m in migs] == [
        m.memory_total for m in gpu.mig_devices
    ]
    assert xml.findtext("mig_mode/current_mig") == "Enabled"
    assert xml.findtext("temperature/gpu_temp") == f"{gpu.temperature_c} C"
    assert xml.findtext("temperature/gpu_temp_slow_threshold") == f"{gpu.temperature_slowdown_c} C"
    assert xml.findtext("temperature/gpu_temp_max_threshold") == f"{gpu.temperature_shutdown_c} C"
