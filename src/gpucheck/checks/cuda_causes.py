"""Why cuInit fails when NVML (the same driver) works, by CUresult name, and the fix for each."""

from __future__ import annotations

from gpucheck.checks.driver_fixes import LOAD_UVM
from gpucheck.model.fix import OR, Fix, Layer, Step

# Why cuInit fails, by CUresult name, when NVML (the same driver) works.
CUINIT_CAUSES: dict[str, tuple[str, Fix]] = {
    "CUDA_ERROR_NO_DEVICE": (
        "CUDA sees no device",
        Fix.of(
            Step.info(
                "check CUDA_VISIBLE_DEVICES (system.cuda-visible-devices), MIG devices "
                "(gpu.mig) and /dev/nvidia-uvm (driver.uvm)"
            ),
            Step.run(
                "see what CUDA may use",
                "env | grep -E '^CUDA_VISIBLE_DEVICES|^NVIDIA_' ; ls -l /dev/nvidia*",
            ),
        ),
    ),
    "CUDA_ERROR_UNKNOWN": (
        "cuInit failed with an unknown error, most often a missing nvidia-uvm",
        Fix.of(
            LOAD_UVM,
            Step.run(
                "if it persists, look for driver errors", "sudo dmesg | grep -i -E 'nvrm|xid'"
            ),
        ),
    ),
    "CUDA_ERROR_SYSTEM_NOT_READY": (
        "The system is not ready for CUDA: on NVSwitch systems (HGX/DGX) the fabric manager "
        "is not running",
        Fix.of(
            Step.run(
                "start the fabric manager (its version must equal the driver's)",
                "sudo systemctl enable --now nvidia-fabricmanager",
                layer=Layer.DRIVER,
            ),
            Step.run("then check", "nvidia-smi -q | grep -A2 -i fabric", layer=Layer.DRIVER),
        ),
    ),
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH": (
        "The libcuda in use (a CUDA forward-compatibility package?) does not match the kernel "
        "driver",
        Fix.of(
            Step.run("find the cuda-compat libcuda in use", "ldconfig -p | grep libcuda.so"),
            Step.manual("remove the cuda-compat libraries from LD_LIBRARY_PATH / ldconfig"),
            OR,
            Step.manual("install the compat package matching this driver branch"),
        ),
    ),
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE": (
        "A CUDA forward-compatibility libcuda is in use, and this GPU does not support it "
        "(forward compatibility is for data-centre GPUs only)",
        Fix.of(
            Step.run("find the cuda-compat libcuda in use", "ldconfig -p | grep libcuda.so"),
            Step.manual(
                "remove the cuda-compat package's libcuda from the loader path (LD_LIBRARY_PATH, "
                "/etc/ld.so.conf.d) and upgrade the driver instead"
            ),
        ),
    ),
    "CUDA_ERROR_INSUFFICIENT_DRIVER": (
        "The loaded libcuda is older than the kernel driver requires",
        Fix.of(
            Step.manual(
                "reinstall the driver so that libcuda and the kernel module come from the same "
                "release",
                Layer.DRIVER,
            )
        ),
    ),
    "CUDA_ERROR_OPERATING_SYSTEM": (
        "The OS refused a CUDA driver request (permissions, cgroups, or a container's device "
        "rules)",
        Fix.of(
            Step.run("check /dev/nvidia* permissions (driver.device-nodes)", "ls -l /dev/nvidia*"),
            Step.manual("check the container's device access"),
        ),
    ),
    "CUDA_ERROR_NOT_PERMITTED": (
        "CUDA is not permitted on this device",
        Fix.of(
            Step.run("check the GPU's compute mode (gpu.compute-mode)", "nvidia-smi -q -d COMPUTE"),
            Step.manual("check the container's device access"),
        ),
    ),
}
