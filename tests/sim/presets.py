"""GPU presets for simulated machines, with property values from the real nvidia-smi outputs in
../shared/nvsmi, named beside each preset."""

from __future__ import annotations

import dataclasses
from typing import Any

import pynvml as nv

from sim.model import MIB, Gpu, MigDevice, Process, Scenario

# --- GPU presets, from real nvidia-smi outputs ----------------------------------------------

# A DGX/HGX H100 board's bus numbers, GPU 0 to 7.
HGX_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


def h100(index: int = 0) -> Gpu:
    """nvidia_gpu_exporter/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt, idle `-q`.
    R590 on Hopper reports temperature limits only as T.Limit margins (the absolute
    thresholds are not supported), and retired pages are N/A (row remapping replaced them).
    UUIDs and serials are masked in the capture; these keep its masked form, made unique."""
    return Gpu(
        name="NVIDIA H100 80GB HBM3",
        uuid=f"GPU-{index:08d}-0000-0000-0000-000000000000",
        serial=f"165{index:010d}",
        pci_bus_id=f"00000000:{HGX_BUSES[index % 8]:02X}:00.0",
        pci_device_id=0x233010DE,
        pci_subsystem_id=0x16C110DE,
        brand=nv.NVML_BRAND_NVIDIA,
        architecture=nv.NVML_DEVICE_ARCH_HOPPER,
        memory_total=81559 * MIB,
        memory_used=479 * MIB,
        memory_reserved=479 * MIB,
        compute_capability=(9, 0),
        utilization=0,
        temperature=41,
        temperature_thresholds=None,
        power_draw_mw=69_620,
        power_limit_mw=700_000,
        fan=None,
        clock_event_reasons=nv.nvmlClocksEventReasonGpuIdle,
        pcie=(5, 5, 16, 16),
        ecc=(True, True),
        retired_pages=None,
        remapped_rows=(0, 0, False, False),
        persistence=True,
        display_active=False,
        mig=(False, False),
    )


def a100_mig() -> Gpu:
    """telegraf/a100-sxm4-v12.xml (driver 535.54.03): A100-SXM4-80GB with MIG on and four
    1g.20gb MIG devices (GPU instances 3-6, 19968 MiB each; the XML lists no MIG UUIDs, so
    these are made up in NVIDIA's format). Utilisation is N/A with MIG on; persistence off."""
    return Gpu(
        name="NVIDIA A100-SXM4-80GB",
        uuid="GPU-513536b6-7d19-9063-b049-1e69664bb298",
        serial="1650522003820",
        pci_bus_id="00000000:01:00.0",
        pci_device_id=0x20B210DE,
        pci_subsystem_id=0x147F10DE,
        brand=nv.NVML_BRAND_NVIDIA,
        architecture=nv.NVML_DEVICE_ARCH_AMPERE,
        memory_total=81920 * MIB,
        memory_used=50 * MIB,
        compute_capability=(8, 0),
        utilization=None,
        temperature=27,
        temperature_thresholds=(89, 92),
        power_draw_mw=67_030,
        power_limit_mw=500_000,
        fan=None,
        pcie=(4, 4, 16, 16),
        ecc=(True, True),
        retired_pages=None,
        remapped_rows=(0, 0, False, False),
        persistence=False,
        mig=(True, True),
        mig_devices=[
            MigDevice(
                slot=i,
                name="NVIDIA A100-SXM4-80GB MIG 1g.20gb",
                uuid=f"MIG-1b3c{i}f2a-5d6e-5f70-8a9b-0c1d2e3f4a5{i}",
                memory=19968 * MIB,
            )
            for i in range(4)
        ],
    )


def rtx_3060() -> Gpu:
    """telegraf/rtx-3060-v12.xml (driver 570.124.04, CUDA 12.8): a consumer card idling at
    PCIe gen 1 of 4; ECC, row remapping, MIG and the serial number are N/A."""
    return Gpu(
        name="NVIDIA GeForce RTX 3060",
        uuid="GPU-d6889ff6-2523-9142-ca3c-1ca3f396a625",
        serial=None,
        pci_bus_id="00000000:2D:00.0",
        pci_device_id=0x248710DE,
        pci_subsystem_id=0x36583842,
        pci_class="0x030000",
        brand=nv.NVML_BRAND_GEFORCE,
        architecture=nv.NVML_DEVICE_ARCH_AMPERE,
        memory_total=12288 * MIB,
        memory_used=116 * MIB,
        compute_capability=(8, 6),
        utilization=0,
        temperature=42,
        temperature_thresholds=(95, 98),
        power_draw_mw=11_630,
        power_limit_mw=170_000,
        fan=0,
        pcie=(1, 4, 16, 16),
        ecc=None,
        retired_pages=None,
        remapped_rows=None,
        persistence=True,
        mig=None,
    )


def rtx_4080_super() -> Gpu:
    """nvidia_gpu_exporter/linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt, idle."""
    return Gpu(
        name="NVIDIA GeForce RTX 4080 SUPER",
        uuid="GPU-00000000-0000-0000-0000-000000004080",
        serial=None,
        pci_bus_id="00000000:01:00.0",
        pci_device_id=0x270210DE,
        pci_subsystem_id=0x51101462,
        pci_class="0x030000",
        brand=nv.NVML_BRAND_GEFORCE,
        architecture=nv.NVML_DEVICE_ARCH_ADA,
        memory_total=16376 * MIB,
        memory_used=596 * MIB,
        compute_capability=(8, 9),
        temperature=43,
        temperature_thresholds=(96, 101),
        power_draw_mw=27_740,
        power_limit_mw=320_000,
        fan=0,
        pcie=(1, 4, 16, 16),
        display_active=True,
        mig=None,
    )


def rtx_2080_super() -> Gpu:
    """nvidia_gpu_exporter/linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt, idle."""
    return Gpu(
        name="NVIDIA GeForce RTX 2080 SUPER",
        uuid="GPU-00000000-0000-0000-0000-000000002080",
        serial=None,
        pci_bus_id="00000000:0C:00.0",
        pci_device_id=0x1E8110DE,
        pci_subsystem_id=0x40051458,
        pci_class="0x030000",
        brand=nv.NVML_BRAND_GEFORCE,
        architecture=nv.NVML_DEVICE_ARCH_TURING,
        memory_total=8192 * MIB,
        memory_used=214 * MIB,
        compute_capability=(7, 5),
        temperature=40,
        temperature_thresholds=(97, 100),
        power_draw_mw=37_620,
        power_limit_mw=250_000,
        fan=38,
        pcie=(1, 3, 16, 16),
        display_active=True,
        mig=None,
    )


def gt_1030() -> Gpu:
    """telegraf/gt-1030.xml (driver 470.74, CUDA 11.4): a Pascal card on an x4 link; power
    draw N/A. The capture's processes are graphics ones; a compute process is added here."""
    return Gpu(
        name="NVIDIA GeForce GT 1030",
        uuid="GPU-857c6374-f681-cf3a-f99f-9063a87b8ac0",
        serial=None,
        pci_bus_id="00000000:2D:00.0",
        pci_device_id=0x1D0110DE,
        pci_subsystem_id=0x8C981462,
        pci_class="0x030000",
        brand=nv.NVML_BRAND_GEFORCE,
        architecture=nv.NVML_DEVICE_ARCH_PASCAL,
        memory_total=1998 * MIB,
        memory_used=875 * MIB,
        compute_capability=(6, 1),
        temperature=36,
        temperature_thresholds=(99, 102),
        power_draw_mw=None,
        power_limit_mw=30_000,
        fan=35,
        pcie=(3, 3, 4, 4),
        display_active=True,
        mig=None,
        processes=[Process(2211, "/usr/bin/python3", 300 * MIB)],
    )


def h100_node(count: int = 8, **changes: Any) -> Scenario:
    """A healthy HGX H100 node on driver 590.48.01 (CUDA 13.1), open kernel module."""
    return Scenario(gpus=[h100(i) for i in range(count)], **changes)


def replace(gpu: Gpu, **changes: Any) -> Gpu:
    return dataclasses.replace(gpu, **changes)
