"""Why cuInit fails when NVML (the same driver) works, by CUresult name, and the fix for each."""

from __future__ import annotations

import posixpath

from gpucheck.checks.context import Context
from gpucheck.checks.driver.causes import library_version
from gpucheck.checks.driver.fixes import LOAD_UVM, reload_steps, userspace_of
from gpucheck.compat import parse_version
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer

# Why cuInit fails, by CUresult name, when NVML (the same driver) works.
CUINIT_CAUSES: dict[str, tuple[str, Fix]] = {
    "CUDA_ERROR_NO_DEVICE": (
        "CUDA sees no device",
        Fix.of(
            Step.info(
                "check CUDA_VISIBLE_DEVICES (system.cuda-visible-devices), MIG devices "
                "(gpus.mig) and /dev/nvidia-uvm (driver.uvm)"
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
            Step.run(
                "check the GPU's compute mode (gpus.compute-mode)", "nvidia-smi -q -d COMPUTE"
            ),
            Step.manual("check the container's device access"),
        ),
    ),
}


def libcuda_mismatch(ctx: Context) -> tuple[str, Fix, list[str]]:
    """cuInit's CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803) by the libcuda really loaded: a
    forward-compatibility libcuda (cuda-compat's /usr/local/cuda-X.Y/compat, as in
    nvidia-container-toolkit#1679) that does not fit the kernel driver; else the driver's own
    libcuda apart from the running module: older (user space left behind by a partial upgrade:
    install the module's version) or newer (upgraded without a reboot). A compat package that
    is not the loaded libcuda is never blamed."""
    drv, sysf = ctx.snapshot.cuda.driver, ctx.snapshot.system
    path = drv.library_path or ""
    lib = library_version(path)
    module = sysf.nvidia_module_version or ctx.snapshot.nvml.driver_version
    evidence = [f"libcuda {lib or 'version unknown'}, kernel module {module or 'unknown'}"]
    if "/compat/" in path:
        return (
            f"The CUDA forward-compatibility libcuda in use ({path}) does not fit kernel driver "
            f"{module or '(unknown)'}",
            Fix.of(
                Step.manual(
                    f"take {posixpath.dirname(path)} off the loader path (LD_LIBRARY_PATH, its "
                    "/etc/ld.so.conf.d entry), then `sudo ldconfig`",
                    Layer.CUDA,
                ),
                OR,
                Step.manual("install the compat package matching this driver branch", Layer.CUDA),
            ),
            evidence,
        )
    have, running = parse_version(lib or ""), parse_version(module or "")
    if module and have is not None and running is not None and have < running:
        return (
            f"libcuda ({lib}) is older than the loaded kernel module ({module}): the driver's "
            "user space was left behind by a partial upgrade (a reboot will not fix it)",
            userspace_of(sysf.os_release, module),
            evidence,
        )
    if have is not None and running is not None and have > running:
        return (
            f"libcuda ({lib}) is newer than the loaded kernel module ({module}): the driver "
            "was upgraded but the old module is still running",
            Fix.of(*reload_steps(sysf.nvidia_modules)),
            evidence,
        )
    return (
        "The libcuda in use does not match the kernel driver",
        Fix.of(
            Step.manual(
                "reinstall the driver so that libcuda and the kernel module come from the same "
                "release",
                Layer.DRIVER,
            )
        ),
        evidence,
    )
