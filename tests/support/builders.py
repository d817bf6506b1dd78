"""Snapshot builders for check tests, with property values taken from real nvidia-smi
outputs in tests/fixtures/nvsmi (named beside each builder), so that fixtures look like machines.

Each builder returns a fresh, healthy snapshot; a test changes the one fact it is about.
"""

from __future__ import annotations

import copy
from typing import Any

from gpucheck.model.snapshot import (
    CudaDevice,
    CudaDriverFacts,
    CudaFacts,
    CudnnFacts,
    DeviceNode,
    GpuFacts,
    GpuProcess,
    LibraryCopy,
    MigDevice,
    NvccFacts,
    NvmlFacts,
    PciDevice,
    ProbeRun,
    Snapshot,
    SystemFacts,
)

MIB = 1024**2
BINDING = "13.615.71"  # nvidia-ml-py's version, as the NVML probe records it
LIBCUDA = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"


# What a capture of a card with ECC shows when no error was ever counted.
NO_ECC_ERRORS: dict[str, Any] = {
    "ecc_enabled": True,
    "ecc_enabled_pending": True,
    "ecc_uncorrected_volatile": 0,
    "ecc_uncorrected_aggregate": 0,
    "retired_pages_sbe": 0,
    "retired_pages_dbe": 0,
    "retired_pages_pending": False,
}


def idle_gpu(
    index: int,
    name: str,
    uuid: str,
    pci_bus_id: str,
    brand: str,
    memory_mib: tuple[int, int],
    compute: tuple[str, str],
    pcie: tuple[int, int, int, int],
    **facts: Any,
) -> GpuFacts:
    """A GPU at rest as a real capture shows it (each builder names its capture): no
    utilisation, the gpu_idle clock event, no process, the default compute mode. memory_mib:
    (total, used); compute: (capability, architecture); pcie: (generation now, at most, width
    now, at most); `facts`: the rest the capture says."""
    total, used = memory_mib
    generation, generation_max, width, width_max = pcie
    return GpuFacts(
        index=index,
        name=name,
        uuid=uuid,
        pci_bus_id=pci_bus_id,
        brand=brand,
        memory_total=total * MIB,
        memory_used=used * MIB,
        memory_free=(total - used) * MIB,
        compute_capability=compute[0],
        architecture=compute[1],
        utilization_gpu=0,
        clock_event_reasons=["gpu_idle"],
        pcie_gen_current=generation,
        pcie_gen_max=generation_max,
        pcie_width_current=width,
        pcie_width_max=width_max,
        compute_mode="default",
        processes=[],
        **facts,
    )


def h100(index: int) -> GpuFacts:
    """nvidia_gpu_exporter/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt (idle)."""
    return idle_gpu(
        index,
        "NVIDIA H100 80GB HBM3",
        f"GPU-{index:08d}-0000-0000-0000-000000000000",
        f"00000000:{0x18 + index * 0x10:02X}:00.0",
        "NVIDIA",
        memory_mib=(81559, 59),
        compute=("9.0", "Hopper"),
        pcie=(5, 5, 16, 16),
        serial=f"165{index:010d}",
        # R590 on Hopper reports temperature limits as T.Limit margins, not absolute
        # thresholds (the capture's "GPU Slowdown T.Limit Temp : -2 C"): unknown here.
        temperature_c=41,
        temperature_slowdown_c=None,
        temperature_shutdown_c=None,
        power_draw_w=69.6,
        power_limit_w=700.0,
        **NO_ECC_ERRORS,
        remapped_rows_correctable=0,
        remapped_rows_uncorrectable=0,
        remap_pending=False,
        remap_failed=False,
        persistence_mode=True,
        display_active=False,
        mig_enabled=False,
        mig_enabled_pending=False,
        field_errors={
            "temperature_slowdown_c": "NotSupported",
            "temperature_shutdown_c": "NotSupported",
        },
    )


def rtx_3060(index: int = 0) -> GpuFacts:
    """telegraf/rtx-3060-v12.xml: a consumer card, ECC and remapping not supported, idle at
    PCIe gen 1 of 4 (normal power saving)."""
    return idle_gpu(
        index,
        "NVIDIA GeForce RTX 3060",
        "GPU-8f5b6f8b-ce4d-a2c9-d9ac-7bdf7cfeb0d9",
        "00000000:01:00.0",
        "GeForce",
        memory_mib=(12288, 1),
        compute=("8.6", "Ampere"),
        pcie=(1, 4, 16, 16),
        temperature_c=35,
        temperature_slowdown_c=95,
        power_draw_w=11.8,
        power_limit_w=170.0,
        ecc_enabled=None,
        persistence_mode=False,
        display_active=True,
        mig_enabled=None,
        field_errors={
            "ecc_enabled": "NotSupported",
            "mig_enabled": "NotSupported",
            "serial": "NotSupported",
        },
    )


def a100_mig(index: int = 0) -> GpuFacts:
    """telegraf/a100-sxm4-v12.xml: A100-SXM4-80GB with MIG on and 4 MIG devices."""
    gpu = h100(index)
    gpu.name = "NVIDIA A100-SXM4-80GB"
    gpu.uuid = "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    gpu.pci_bus_id = "00000000:01:00.0"
    gpu.memory_total = 81920 * MIB
    gpu.compute_capability = "8.0"
    gpu.architecture = "Ampere"
    gpu.power_limit_w = 500.0
    gpu.pcie_gen_max = gpu.pcie_gen_current = 4
    gpu.temperature_c = 27
    gpu.temperature_slowdown_c = 89
    gpu.temperature_shutdown_c = 92
    gpu.field_errors = {}
    gpu.persistence_mode = False
    gpu.mig_enabled = gpu.mig_enabled_pending = True
    gpu.mig_devices = [
        MigDevice(
            index=i,
            uuid=f"MIG-{i:08d}-1111-2222-3333-444444444444",
            name="NVIDIA A100-SXM4-80GB MIG 1g.20gb",
            memory_total=19968 * MIB,
        )
        for i in range(4)
    ]
    return gpu


def system(**changes: object) -> SystemFacts:
    facts = SystemFacts(
        os="Linux",
        os_release="Ubuntu 22.04.5 LTS",
        kernel="5.15.0-185-generic",
        arch="x86_64",
        hostname="gpu-node-01",
        python_version="3.11.7",
        python_executable="/usr/bin/python3",
        pci_scanned=True,
        pci_device_count=40,
        nvidia_module_loaded=True,
        nvidia_module_version="590.48.01",
        nvidia_module_banner=(
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  590.48.01  Release Build"
        ),
        nvidia_modules=["nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"],
        nouveau_loaded=False,
        secure_boot=False,
        device_nodes=[
            DeviceNode("/dev/nvidiactl", True, True, True, "crw-rw-rw-", "root"),
            DeviceNode("/dev/nvidia-uvm", True, True, True, "crw-rw-rw-", "root"),
            DeviceNode("/dev/nvidia-uvm-tools", True, True, True, "crw-rw-rw-", "root"),
        ],
    )
    for key, value in changes.items():
        setattr(facts, key, value)
    return facts


def node(
    gpus: list[GpuFacts], driver: str = "590.48.01", cuda: int = 13010, built: str | None = None
) -> Snapshot:
    """A Linux node running `gpus` with everything working: the open kernel module of 590.48.01
    (system()'s), or with `built` (its build date, as its banner shows it) the proprietary
    module of `driver`."""
    sysf = system()
    if built is not None:
        sysf.nvidia_module_version = driver
        sysf.nvidia_module_banner = (
            f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}  {built}"
        )
    sysf.pci_gpus = [
        PciDevice(
            address=(g.pci_bus_id or "0000:00:00.0")[4:].lower(),
            vendor_id="0x10de",
            device_id="0x2330",
            class_code="0x030200",
            name="GH100 [H100 SXM5 80GB]" if g.architecture == "Hopper" else None,
            driver="nvidia",
        )
        for g in gpus
    ]
    sysf.device_nodes += [
        DeviceNode(f"/dev/nvidia{g.index}", True, True, True, "crw-rw-rw-", "root") for g in gpus
    ]
    return Snapshot(
        created_at="2026-11-21T10:00:00+00:00",
        system=sysf,
        nvml=NvmlFacts(
            binding_version=BINDING,
            library_path="/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
            driver_version=driver,
            cuda_driver_version=cuda,
            nvml_version=f"13.{driver}",
            device_count=len(gpus),
            gpus=gpus,
        ),
        cuda=CudaFacts(
            driver=CudaDriverFacts(
                library_path=LIBCUDA,
                init_result=0,
                driver_version=cuda,
                device_count=len(gpus),
                devices=[
                    CudaDevice(g.index, g.name, g.compute_capability, g.memory_total) for g in gpus
                ],
            ),
        ),
        cudnn=CudnnFacts(),
        probes=[
            ProbeRun("system", "ok", 2.0),
            ProbeRun("nvml", "ok", 80.0),
            ProbeRun("cuda_driver", "ok", 300.0),
            ProbeRun("libraries", "ok", 60.0),
        ],
    )


def h100_node(count: int = 8) -> Snapshot:
    return node([h100(i) for i in range(count)])


def workstation() -> Snapshot:
    """One consumer GPU on a desktop (driver 570.124.04, CUDA 12.8: telegraf/rtx-3060-v12.xml)."""
    snap = node([rtx_3060(0)], "570.124.04", 12080, built="Fri Feb 21 20:37:25 UTC 2025")
    snap.system.pci_gpus[0].device_id = "0x2504"
    snap.system.pci_gpus[0].class_code = "0x030000"
    return snap


def no_gpu_machine() -> Snapshot:
    """A CI runner or laptop: no NVIDIA device, NVML installed but no kernel module."""
    sysf = system(
        device_nodes=[
            DeviceNode("/dev/nvidiactl", False),
            DeviceNode("/dev/nvidia-uvm", False),
            DeviceNode("/dev/nvidia-uvm-tools", False),
        ]
    )
    module_unloaded(sysf)
    nvml, cuda_driver = inits_skipped(
        "/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1", 12020, binding=None
    )
    return Snapshot(
        created_at="2026-11-21T10:00:00+00:00",
        system=sysf,
        nvml=nvml,
        cuda=CudaFacts(
            driver=cuda_driver,
            nvcc=NvccFacts(path="/usr/local/cuda/bin/nvcc", version="13.0.88"),
            cuda_home="/usr/local/cuda",
            cuda_home_source="default",
        ),
        probes=[
            ProbeRun("system", "ok", 1.0),
            ProbeRun("nvml", "ok", 50.0),
            ProbeRun("cuda_driver", "ok", 30.0),
            ProbeRun("libraries", "ok", 40.0),
        ],
    )


def module_unloaded(sysf: SystemFacts) -> SystemFacts:
    """No nvidia kernel module loaded, as the system probe records it."""
    sysf.nvidia_module_loaded = False
    sysf.nvidia_module_version = None
    sysf.nvidia_module_banner = None
    sysf.nvidia_modules = []
    return sysf


def inits_skipped(
    nvml_library: str, cuda: int, binding: str | None = BINDING
) -> tuple[NvmlFacts, CudaDriverFacts]:
    """The NVML and CUDA driver probes' records where the kernel module is not loaded: they
    skip nvmlInit and cuInit (`cuda`: the libcuda's version, read without cuInit)."""
    nvml = NvmlFacts(
        binding_version=binding,
        library_path=nvml_library,
        init_skipped_reason="nvmlInit not called: the nvidia kernel module is not loaded",
    )
    cuda_driver = CudaDriverFacts(
        library_path=LIBCUDA,
        driver_version=cuda,
        init_skipped_reason="cuInit not called: the nvidia kernel module is not loaded",
    )
    return nvml, cuda_driver


def with_process(gpu: GpuFacts, pid: int, name: str, used_mib: int) -> GpuFacts:
    gpu.processes = [*(gpu.processes or []), GpuProcess(pid, name, used_mib * MIB)]
    gpu.memory_used = (gpu.memory_used or 0) + used_mib * MIB
    gpu.memory_free = (gpu.memory_total or 0) - gpu.memory_used
    return gpu


def library(
    name: str, path: str, version: str, origin: str = "ldconfig", **kw: object
) -> LibraryCopy:
    copy_ = LibraryCopy(
        name=name,
        path=path,
        realpath=path,
        origin=origin,
        on_loader_path=origin in ("ldconfig", "ld_library_path", "system"),
        version=version,
        version_source="call",
    )
    for key, value in kw.items():
        setattr(copy_, key, value)
    return copy_


def clone(snap: Snapshot) -> Snapshot:
    return copy.deepcopy(snap)
