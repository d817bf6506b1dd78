"""Simulated GPU machines for the tests, in one import: scenarios as dataclasses and the scenario
file the fake libraries read (model.py), GPU presets from real nvidia-smi outputs (presets.py),
the fake libraries built from fake_nvml.c and fake_cuda.c (libraries.py), and a machine laid
out in a folder with a fake root (/proc, /sys, /dev, /etc) that gpucheck reads through
GPUCHECK_ROOT (machine.py). See README.md.
"""

from __future__ import annotations

from sim.fake_proc import HostProcess
from sim.libraries import (
    BuildError,
    Libraries,
    find_compiler,
    nvml_include_dir,
)
from sim.machine import (
    OTHER_PCI,
    PCI_IDS,
    Machine,
    module_banner,
    write_root,
)
from sim.model import (
    CUDA_ERROR_NO_DEVICE,
    CUDA_ERROR_NOT_PERMITTED,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
    CUDA_ERROR_SYSTEM_NOT_READY,
    CUDA_ERROR_UNKNOWN,
    GIB,
    HERE,
    MIB,
    NVML_DEV_DIST,
    NVML_DEV_VERSION,
    ROOT_ENV,
    SCENARIO_ENV,
    TESTS,
    Fault,
    Gpu,
    MigDevice,
    Process,
    Scenario,
    Step,
    crash,
    error,
    sleep,
)
from sim.presets import (
    HGX_BUSES,
    a100_mig,
    gt_1030,
    h100,
    h100_node,
    replace,
    rtx_2080_super,
    rtx_3060,
    rtx_4080_super,
)

__all__ = [
    "CUDA_ERROR_NOT_PERMITTED",
    "CUDA_ERROR_NO_DEVICE",
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    "CUDA_ERROR_SYSTEM_NOT_READY",
    "CUDA_ERROR_UNKNOWN",
    "GIB",
    "HERE",
    "HGX_BUSES",
    "MIB",
    "NVML_DEV_DIST",
    "NVML_DEV_VERSION",
    "OTHER_PCI",
    "PCI_IDS",
    "ROOT_ENV",
    "SCENARIO_ENV",
    "TESTS",
    "BuildError",
    "Fault",
    "Gpu",
    "HostProcess",
    "Libraries",
    "Machine",
    "MigDevice",
    "Process",
    "Scenario",
    "Step",
    "a100_mig",
    "crash",
    "error",
    "find_compiler",
    "gt_1030",
    "h100",
    "h100_node",
    "module_banner",
    "nvml_include_dir",
    "replace",
    "rtx_2080_super",
    "rtx_3060",
    "rtx_4080_super",
    "sleep",
    "write_root",
]
