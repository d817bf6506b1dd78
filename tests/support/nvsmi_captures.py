"""Real `nvidia-smi` captures (tests/fixtures/nvsmi: telegraf's `-q -x` XML files and
nvidia_gpu_exporter's capture bundles, MIT test data, origins in its README) read into the
facts the NVML probe records, so that a healthy machine's own numbers can be diagnosed.

Only what nvidia-smi printed is read. Two facts NVML gives and these outputs do not are
literal data below: the compute capability of each XML capture's GPU (NVIDIA's CUDA GPUs
table, https://developer.nvidia.com/cuda-gpus) and the CUDA version of the one query row
without a table header.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree as ET

from gpucheck.model.snapshot import GpuFacts, GpuProcess, MigDevice
from support.builders import MIB

NVSMI = Path(__file__).parents[1] / "fixtures" / "nvsmi"

# Compute capability by XML file (the product names' GPUs in NVIDIA's CUDA GPUs table);
# gtx-1660-ti.xml names its board "Graphics Device" (driver 418.43 predates it): a GTX 1660 Ti.
XML_COMPUTE_CAPABILITY = {
    "3090-v13.xml": ("8.6", "Ampere"),
    "a100-sxm4-v12.xml": ("8.0", "Ampere"),
    "a10g.xml": ("8.6", "Ampere"),
    "dual_2070-v13.xml": ("7.5", "Turing"),
    "dual_2080-v13.xml": ("7.5", "Turing"),
    "dual_a5000-v13.xml": ("8.6", "Ampere"),
    "gt-1030.xml": ("6.1", "Pascal"),
    "gtx-1070-ti.xml": ("6.1", "Pascal"),
    "gtx-1660-ti.xml": ("7.5", "Turing"),
    "pro-6000-maxq-blackwell-v13.xml": ("12.0", "Blackwell"),
    "quadro-p2000-v12.xml": ("6.1", "Pascal"),
    "quadro-p400.xml": ("6.1", "Pascal"),
    "rtx-3060-v12.xml": ("8.6", "Ampere"),
    "rtx-3080-v12.xml": ("8.6", "Ampere"),
    "rtx-3080-v13.xml": ("8.6", "Ampere"),
    "rtx-3090-v12.xml": ("8.6", "Ampere"),
    "rtx-4000-sff-ada-v13.xml": ("8.9", "Ada Lovelace"),
    "tesla-t4.xml": ("7.5", "Turing"),
    "tesla_p4.xml": ("6.1", "Pascal"),
}

# gtx-1070-ti.xml was trimmed to its GPU block, no driver fields; NVML always has a driver: a
# stand-in, the driver of the captures telegraf added in the same commit (2a8735d1c623:
# gtx-1660-ti.xml and quadro-p400.xml, 418.43 with CUDA 10.1).
TRIMMED_DRIVER = {"gtx-1070-ti.xml": "418.43"}
TRIMMED_CUDA = {"gtx-1070-ti.xml": "10.1"}

# exporter_testdata_query.txt's real row: Windows driver 466.63, a R465 driver, which NVIDIA's
# CUDA 11.3 release notes (Table 3) list as CUDA 11.3's.
QUERY_ROW_CUDA = 11030

# nvmlClocksEventReasons bits (nvml.h), as the NVML probe names them.
CLOCK_EVENT_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


@dataclass
class Capture:
    """One machine as one nvidia-smi output showed it."""

    name: str  # "telegraf/3090-v13.xml", "nvidia_gpu_exporter/...txt@idle"
    os: str  # Linux | Windows
    driver: str | None
    cuda: int | None  # 13010 = CUDA 13.1
    gpus: list[GpuFacts]
    virtualization: list[str] = field(default_factory=list)  # per GPU, where printed


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    match = re.match(r"\s*\[?(-?\d+(?:\.\d+)?)", text)
    return float(match.group(1)) if match else None


def _int(text: str | None) -> int | None:
    value = _number(text)
    return None if value is None else int(value)


def _mib(text: str | None) -> int | None:
    value = _int(text)
    return None if value is None else value * MIB


def _flag(text: str | None) -> bool | None:
    value = (text or "").strip().strip("[]").lower()
    return {"enabled": True, "disabled": False, "yes": True, "no": False}.get(value)


def _cuda(text: str | None) -> int | None:
    match = re.match(r"\s*(\d+)\.(\d+)", text or "")
    return int(match.group(1)) * 1000 + int(match.group(2)) * 10 if match else None


# --- telegraf: nvidia-smi -q -x ---------------------------------------------------------------


def _xml_reasons(gpu: ET.Element) -> list[str] | None:
    block = gpu.find("clocks_event_reasons")
    if block is None:
        block = gpu.find("clocks_throttle_reasons")
    if block is None:
        return None
    out = []
    for child in block:
        if (child.text or "").strip() == "Active":
            reason = re.sub(r"^clocks_(event|throttle)_reason_", "", child.tag)
            out.append("display_clock_setting" if reason.startswith("display_clock") else reason)
    return out


def _xml_gpu(index: int, gpu: ET.Element, file: str) -> GpuFacts:
    cc, arch = XML_COMPUTE_CAPABILITY[file]
    power = gpu.find("gpu_power_readings")
    if power is None:
        power = gpu.find("power_readings")
    draw = limit = None
    if power is not None:
        draw = _number(power.findtext("power_draw") or power.findtext("instant_power_draw"))
        limit = _number(
            power.findtext("current_power_limit")
            or power.findtext("enforced_power_limit")
            or power.findtext("power_limit")
        )
    migs = [
        MigDevice(i, name=f"{gpu.findtext('product_name')} MIG", memory_total=_mib(total))
        for i, total in enumerate(
            m.findtext("fb_memory_usage/total") for m in gpu.findall("mig_devices/mig_device")
        )
    ]
    ecc_volatile = gpu.findtext("ecc_errors/volatile/dram_uncorrectable") or gpu.findtext(
        "ecc_errors/volatile/double_bit/total"
    )
    return GpuFacts(
        index=index,
        name=gpu.findtext("product_name"),
        uuid=gpu.findtext("uuid"),
        pci_bus_id=gpu.get("id") or gpu.findtext("pci/pci_bus_id"),
        memory_total=_mib(gpu.findtext("fb_memory_usage/total")),
        memory_used=_mib(gpu.findtext("fb_memory_usage/used")),
        memory_free=_mib(gpu.findtext("fb_memory_usage/free")),
        compute_capability=cc,
        architecture=arch,
        utilization_gpu=_int(gpu.findtext("utilization/gpu_util")),
        temperature_c=_int(gpu.findtext("temperature/gpu_temp")),
        temperature_slowdown_c=_int(gpu.findtext("temperature/gpu_temp_slow_threshold")),
        temperature_shutdown_c=_int(gpu.findtext("temperature/gpu_temp_max_threshold")),
        fan_speed_pct=_int(gpu.findtext("fan_speed")),
        power_draw_w=draw,
        power_limit_w=limit,
        clock_event_reasons=_xml_reasons(gpu),
        pcie_gen_current=_int(gpu.findtext("pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
        pcie_gen_max=_int(gpu.findtext("pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
        pcie_width_current=_int(
            gpu.findtext("pci/pci_gpu_link_info/link_widths/current_link_width")
        ),
        pcie_width_max=_int(gpu.findtext("pci/pci_gpu_link_info/link_widths/max_link_width")),
        ecc_enabled=_flag(gpu.findtext("ecc_mode/current_ecc")),
        ecc_enabled_pending=_flag(gpu.findtext("ecc_mode/pending_ecc")),
        ecc_uncorrected_volatile=_int(ecc_volatile),
        persistence_mode=_flag(gpu.findtext("persistence_mode")),
        display_active=_flag(gpu.findtext("display_active")),
        compute_mode=(gpu.findtext("compute_mode") or "default").lower().replace(" ", "_"),
        mig_enabled=_flag(gpu.findtext("mig_mode/current_mig")),
        mig_enabled_pending=_flag(gpu.findtext("mig_mode/pending_mig")),
        mig_devices=migs,
        processes=[
            GpuProcess(
                int(proc.findtext("pid") or 0),
                proc.findtext("process_name") or None,
                _mib(proc.findtext("used_memory")),
                kind="graphics" if proc.findtext("type") == "G" else "compute",
            )
            for proc in gpu.findall("processes/process_info")
        ],
    )


def read_xml(path: Path) -> Capture:
    root = ET.parse(path).getroot()
    gpus = [_xml_gpu(i, g, path.name) for i, g in enumerate(root.iter("gpu"))]
    driver_model = root.findtext("gpu/driver_model/current_dm")
    return Capture(
        name=f"telegraf/{path.name}",
        os="Windows" if driver_model in ("WDDM", "TCC") else "Linux",
        driver=root.findtext("driver_version") or TRIMMED_DRIVER.get(path.name),
        cuda=_cuda(root.findtext("cuda_version") or TRIMMED_CUDA.get(path.name)),
        gpus=gpus,
        virtualization=[
            g.findtext("gpu_virtualization_mode/virtualization_mode") or ""
            for g in root.iter("gpu")
        ],
    )


# --- nvidia_gpu_exporter: capture bundles -----------------------------------------------------


def _section(lines: list[str], title: str) -> list[str]:
    """The lines of the bundle's section `# <title>` (after its `# $` command line)."""
    for i, line in enumerate(lines):
        if line.strip() == f"# {title}":
            start = i + 1
            while start < len(lines) and lines[start].startswith("#"):
                start += 1
            end = start
            while end < len(lines) and not lines[end].startswith("#####"):
                end += 1
            return lines[start:end]
    raise KeyError(title)


def _rows(block: list[str]) -> list[dict[str, str]]:
    text = "\n".join(line for line in block if line.strip())
    reader = csv.reader(io.StringIO(text))
    header = [h.strip().split(" [")[0] for h in next(reader)]
    return [dict(zip(header, (v.strip() for v in row), strict=True)) for row in reader if row]


def _query_gpu(row: dict[str, str], migs: list[MigDevice], cc_arch: str | None) -> GpuFacts:
    active = row.get("clocks_event_reasons.active", "")
    bits = int(active, 16) if active.startswith("0x") else None
    return GpuFacts(
        index=int(row["index"]),
        name=row["name"],
        uuid=row["uuid"],
        pci_bus_id=row["pci.bus_id"],
        memory_total=_mib(row.get("memory.total")),
        memory_used=_mib(row.get("memory.used")),
        memory_free=_mib(row.get("memory.free")),
        compute_capability=row["compute_cap"],
        architecture=cc_arch,
        utilization_gpu=_int(row.get("utilization.gpu")),
        temperature_c=_int(row.get("temperature.gpu")),
        fan_speed_pct=_int(row.get("fan.speed")),
        power_draw_w=_number(row.get("power.draw")),
        power_limit_w=_number(row.get("enforced.power.limit") or row.get("power.limit")),
        clock_event_reasons=None
        if bits is None
        else [name for bit, name in CLOCK_EVENT_BITS.items() if bits & bit],
        pcie_gen_current=_int(row.get("pcie.link.gen.current")),
        pcie_gen_max=_int(row.get("pcie.link.gen.max")),
        pcie_width_current=_int(row.get("pcie.link.width.current")),
        pcie_width_max=_int(row.get("pcie.link.width.max")),
        ecc_enabled=_flag(row.get("ecc.mode.current")),
        ecc_enabled_pending=_flag(row.get("ecc.mode.pending")),
        ecc_uncorrected_volatile=_int(row.get("ecc.errors.uncorrected.volatile.total")),
        ecc_uncorrected_aggregate=_int(row.get("ecc.errors.uncorrected.aggregate.total")),
        retired_pages_sbe=_int(row.get("retired_pages.single_bit_ecc.count")),
        retired_pages_dbe=_int(row.get("retired_pages.double_bit.count")),
        retired_pages_pending=_flag(row.get("retired_pages.pending")),
        remapped_rows_correctable=_int(row.get("remapped_rows.correctable")),
        remapped_rows_uncorrectable=_int(row.get("remapped_rows.uncorrectable")),
        remap_pending=_flag(row.get("remapped_rows.pending")),
        remap_failed=_flag(row.get("remapped_rows.failure")),
        persistence_mode=_flag(row.get("persistence_mode")),
        display_active=_flag(row.get("display_active")),
        compute_mode=(row.get("compute_mode") or "Default").lower().replace(" ", "_"),
        mig_enabled=_flag(row.get("mig.mode.current")),
        mig_enabled_pending=_flag(row.get("mig.mode.pending")),
        mig_devices=migs,
        processes=[],
    )


# Architectures by compute capability major.minor, for the bundles (which print compute_cap).
ARCHITECTURE = {"7.5": "Turing", "8.9": "Ada Lovelace", "9.0": "Hopper"}


def _mig_devices(listing: list[str]) -> list[MigDevice]:
    out = []
    for line in listing:
        match = re.match(r"\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[^)]+)\)", line)
        if match:
            out.append(MigDevice(int(match.group(2)), match.group(3), f"MIG {match.group(1)}"))
    return out


def read_bundle(path: Path, phase: str) -> Capture:
    lines = path.read_text(errors="replace").splitlines()
    (row,) = _rows(_section(lines, f"{phase} :: query-gpu (csv, what the exporter parses)"))
    table = "\n".join(_section(lines, f"{phase} :: nvidia-smi (default table)"))
    cuda = re.search(r"CUDA (?:UMD )?Version:\s*(\d+\.\d+)", table)
    migs = _mig_devices(_section(lines, "capabilities :: list (-L)"))
    query = "\n".join(_section(lines, f"{phase} :: query (-q)"))
    virt = re.search(r"Virtualization Mode\s*:\s*(.+)", query)
    gpu = _query_gpu(row, migs, ARCHITECTURE.get(row["compute_cap"]))
    return Capture(
        name=f"nvidia_gpu_exporter/{path.name}@{phase}",
        os="Windows" if path.name.startswith("windows") else "Linux",
        driver=row["driver_version"],
        cuda=_cuda(cuda.group(1) if cuda else None),
        gpus=[gpu],
        virtualization=[virt.group(1).strip()] if virt else [],
    )


def read_query_testdata(path: Path) -> Capture:
    """exporter_testdata_query.txt: its first row only (the second is synthetic)."""
    row = _rows(path.read_text().splitlines())[0]
    row = {**row, "memory.total": "8192 MiB"}  # not queried: the RTX 2080 SUPER's 8 GiB
    gpu = _query_gpu(row, [], "Turing")
    return Capture(
        name=f"nvidia_gpu_exporter/{path.name}",
        os="Windows",
        driver=row["driver_version"],
        cuda=QUERY_ROW_CUDA,
        gpus=[gpu],
    )


def all_captures() -> list[Capture]:
    out = [read_xml(p) for p in sorted((NVSMI / "telegraf").glob("*.xml"))]
    for path in sorted((NVSMI / "nvidia_gpu_exporter").glob("*__*.txt")):
        out += [read_bundle(path, "idle"), read_bundle(path, "load")]
    out.append(read_query_testdata(NVSMI / "nvidia_gpu_exporter" / "exporter_testdata_query.txt"))
    return out
