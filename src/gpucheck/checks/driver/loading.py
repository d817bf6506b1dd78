"""Driver checks: kernel module, NVML (the user-space driver), device nodes, persistence."""

from __future__ import annotations

import re
from typing import Literal

from gpucheck.checks.context import Context
from gpucheck.checks.driver.causes import library_version, module_cause
from gpucheck.checks.driver.fixes import (
    CGROUP_FIX,
    HUNG,
    binding_fix,
    package_steps,
    reload_fix,
    reload_steps,
    userspace_of,
)
from gpucheck.checks.fixes import reset_gpus
from gpucheck.checks.registry import check
from gpucheck.checks.system.machine import container_fix, container_steps
from gpucheck.compat import parse_version
from gpucheck.model.finding import Outcome, Subjects
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.shell import join, quote

NO_GPU = "No NVIDIA GPU, so no driver is needed"


def _no_gpu(ctx: Context) -> bool:
    return ctx.has_gpu is False


@check("driver.kernel-module", "the nvidia kernel module is loaded")
def kernel_module(ctx: Context) -> Outcome:
    sysf = ctx.snapshot.system
    if sysf.os != "Linux":
        return Outcome.skip(f"Kernel modules are not checked on {sysf.os or 'this OS'}")
    if sysf.wsl:
        return Outcome.skip("WSL2: the Windows host's driver serves the GPU, no kernel module")
    if sysf.nvidia_module_loaded:
        version = sysf.nvidia_module_version or "unknown version"
        kind = " (open kernel module)" if "Open Kernel" in (sysf.nvidia_module_banner or "") else ""
        ignored = _ignored_gpu(ctx)
        if ignored is not None:
            return ignored
        return Outcome.passed(
            f"nvidia kernel module {version} loaded{kind}",
            "modules: " + (", ".join(sysf.nvidia_modules) or "nvidia"),
        )
    if _no_gpu(ctx):
        return Outcome.skip(NO_GPU)
    if sysf.nvidia_module_loaded is None:
        return Outcome.skip(
            "Could not tell which kernel modules are loaded (/proc/modules unreadable)"
        )
    if ctx.has_gpu is None:
        return Outcome.skip(
            "The nvidia kernel module is not loaded; whether this machine has an NVIDIA GPU is "
            "not known (/sys/bus/pci unreadable), so that may be right"
        )
    if sysf.container:
        return Outcome.fail(
            f"The nvidia kernel module is not loaded on this {sysf.container} container's host",
            fix=Fix.of(
                Step.run(
                    "on the host, load the NVIDIA driver (install it there first if it is "
                    "missing; a container cannot load kernel modules)",
                    "sudo modprobe nvidia",
                )
            ),
        )
    evidence = []
    for dev in sysf.pci_gpus:
        bound = f"bound to {dev.driver}" if dev.driver else "no driver bound"
        evidence.append(f"{dev.name or dev.device_id} at {dev.address}: {bound}")
    lib_version = library_version(ctx.snapshot.nvml.library_path)
    if lib_version:
        evidence.append(f"the user-space driver {lib_version} is installed (libnvidia-ml)")
    cause = module_cause(ctx)
    if cause is not None:
        return Outcome.fail(cause.title, *evidence, *cause.evidence, fix=cause.fix)
    steps: list[Step | Literal["or"]] = [*_deciding_facts(ctx)]
    steps += [
        Step.run("load it", "sudo modprobe nvidia"),
        Step.run(
            "if that fails because the kernel was updated and the module not rebuilt for it, "
            "rebuild it (or reinstall the driver package for kernel $(uname -r))",
            "dkms status && sudo dkms autoinstall",
        ),
    ]
    if sysf.secure_boot:
        evidence.append("Secure Boot is on")
        steps += [
            Step.run(
                "Secure Boot is on and refuses the unsigned module: enroll the module's key "
                "(or disable Secure Boot)",
                "sudo mokutil --import /var/lib/dkms/mok.pub",
            ),
            Step.reboot(),
        ]
    else:
        steps.append(
            Step.run("see whether Secure Boot refuses an unsigned module", "mokutil --sb-state")
        )
    if sysf.nouveau_loaded:
        steps.append(Step.info("nouveau holds the GPU: see system.nouveau"))
    if any(d.driver == "vfio-pci" for d in sysf.pci_gpus):
        steps.append(
            Step.manual("the GPU is bound to vfio-pci (reserved for a VM): unbind it first")
        )
    if not lib_version:
        steps += [
            Step.run(
                "no driver is installed: install NVIDIA's driver (others than Ubuntu: the "
                "distribution's nvidia-driver package)",
                "sudo ubuntu-drivers install",
            ),
            Step.reboot(),
        ]
    return Outcome.fail(
        "The nvidia kernel module is not loaded: the GPU has no driver",
        *evidence,
        fix=Fix.of(*steps),
    )


def _ignored_gpu(ctx: Context) -> Outcome | None:
    """The module loaded, but the kernel log says it ignored a GPU (a legacy GPU, the wrong
    module flavour): a fail when no GPU is driven, a warning beside GPUs that are."""
    cause = module_cause(ctx, loaded=True)
    if cause is None:
        return None
    driven = ctx.snapshot.nvml.device_count if ctx.nvml_ok else 0
    if driven:
        return Outcome.warn(
            f"{cause.title}; the driver drives {driven} other GPU(s)",
            *cause.evidence,
            fix=cause.fix,
        )
    return Outcome.fail(
        f"The nvidia module is loaded but drives no GPU. {cause.title}",
        *cause.evidence,
        fix=cause.fix,
    )


def _deciding_facts(ctx: Context) -> list[Step | Literal["or"]]:
    """Where the snapshot lacks the facts that name the cause: the commands that read them."""
    sysf = ctx.snapshot.system
    steps: list[Step | Literal["or"]] = []
    if sysf.kernel_log_nvrm is None:
        steps.append(
            Step.info(
                "the kernel log names the cause (a legacy GPU, the wrong module flavour, a "
                "refused key); it was not readable here",
                command="sudo dmesg | grep -iE 'nvrm|nvidia|key'",
            )
        )
    state = ctx.snapshot.install_state
    if state is None or state.dkms_builds is None:
        steps.append(
            Step.info(
                "whether a module is built for the running kernel",
                command="dkms status; ls /lib/modules/$(uname -r)/updates",
            )
        )
    return steps


@check("driver.nvml", "NVML (the user-space driver) initialises and answers")
def nvml(ctx: Context) -> Outcome:
    facts = ctx.snapshot.nvml
    sysf = ctx.snapshot.system
    probe = ctx.snapshot.probe("nvml")
    if probe is not None and probe.status == "timeout":
        return Outcome.fail(f"NVML {probe.error}", fix=HUNG)
    if probe is not None and probe.status in ("crashed", "error") and not ctx.nvml_ok:
        return Outcome.fail(f"NVML probe {probe.error}", fix=HUNG)
    if ctx.nvml_ok:
        out = Outcome.passed(
            f"Driver {facts.driver_version}, supports CUDA {ctx.driver_cuda or 'unknown'}, "
            f"{facts.device_count if facts.device_count is not None else '?'} GPU(s)",
            f"NVML {facts.nvml_version or '?'} from {facts.library_path or 'libnvidia-ml.so.1'}",
        )
        if probe is not None and probe.status == "crashed":
            return Outcome.warn(
                "NVML answers, but one of its calls crashed the probe",
                *out.evidence,
                str(probe.error),
                fix=Fix.of(
                    Step.manual(
                        "update the NVIDIA driver (a driver bug); the affected facts are unknown"
                    )
                ),
            )
        module = sysf.nvidia_module_version
        if module and facts.driver_version and module != facts.driver_version:
            return Outcome.warn(
                "The kernel module and the user-space driver report different versions",
                f"kernel module {module}, NVML {facts.driver_version}",
                fix=reload_fix(sysf.nvidia_modules),
            )
        return out
    if facts.init_skipped_reason:
        if _no_gpu(ctx):
            return Outcome.skip(
                "NVML not tried: no GPU, no kernel module", facts.init_skipped_reason
            )
        return Outcome.skip(
            "NVML not tried: the kernel module is not loaded (see driver.kernel-module)",
            facts.init_skipped_reason,
        )
    err = facts.init_error
    name = err.name if err else "unknown"
    evidence = [f"nvmlInit: {name}" + (f" ({err.message})" if err and err.message else "")]
    if name == "BindingMissing":
        return Outcome.fail(
            "gpucheck's own environment lacks the NVML binding",
            *evidence,
            fix=binding_fix(ctx),
        )
    if name == "LibraryNotFound":
        if _no_gpu(ctx):
            return Outcome.skip(NO_GPU, "libnvidia-ml.so.1 is not installed either")
        if sysf.container and not sysf.nvidia_module_loaded:
            return Outcome.skip("No NVIDIA driver library inside this container", *evidence)
        branch = (sysf.nvidia_module_version or "").split(".")[0]
        if sysf.container:
            fix = Fix.of(
                *container_steps(sysf.container),
                OR,
                Step.set_env(
                    "NVIDIA_DRIVER_CAPABILITIES",
                    "compute,utility",
                    "if the GPU is passed in already, have the driver's libraries mounted "
                    "(in the container's environment)",
                ),
            )
        elif branch:
            fix = Fix.of(
                Step.run(
                    "install the user-space driver matching kernel module "
                    f"{sysf.nvidia_module_version} (Ubuntu/Debian)",
                    join(
                        [
                            "sudo",
                            "apt",
                            "install",
                            f"libnvidia-compute-{branch}",
                            f"nvidia-utils-{branch}",
                        ]
                    ),
                    Tool.APT,
                    changes=[
                        Change(f"libnvidia-compute-{branch}"),
                        Change(f"nvidia-utils-{branch}"),
                    ],
                ),
                OR,
                Step.manual("reinstall the same driver version with NVIDIA's installer"),
            )
        else:
            fix = Fix.of(
                Step.run("install the NVIDIA driver (Ubuntu)", "sudo ubuntu-drivers install"),
                Step.reboot(),
            )
        return Outcome.fail(
            "The NVIDIA user-space driver (libnvidia-ml.so.1) is not installed",
            *evidence,
            fix=fix,
        )
    if name == "DriverNotLoaded":
        if _no_gpu(ctx):
            return Outcome.skip(NO_GPU, *evidence)
        return Outcome.fail(
            "The NVIDIA driver is installed but not running",
            *evidence,
            fix=Fix.of(
                Step.run("load it (see driver.kernel-module)", "sudo modprobe nvidia"),
                Step.run(
                    "if that fails, look at whether DKMS built it for this kernel", "dkms status"
                ),
            ),
        )
    if name == "LibRmVersionMismatch":
        return _mismatch(ctx, evidence)
    if name == "NoPermission":
        return Outcome.fail(
            "No permission to use the GPU",
            *evidence,
            fix=Fix.of(
                Step.run(
                    "see driver.device-nodes: the /dev/nvidia* nodes must be readable and "
                    "writable by this user",
                    "ls -l /dev/nvidia*",
                ),
                Step.manual("add the user to their group"),
            ),
        )
    if name in ("GpuIsLost", "ResetRequired"):
        return Outcome.fail(
            "A GPU has fallen off the bus or needs a reset",
            *evidence,
            fix=Fix.of(
                Step.run("see why", "sudo dmesg | grep -i xid"),
                reset_gpus([], "reset the GPU (or reboot)"),
                Step.hardware("if it repeats, the GPU or its slot/power is failing: service it"),
            ),
        )
    if name == "Unknown" and sysf.container:
        return Outcome.fail(
            f"NVML fails inside this {sysf.container} container with Unknown Error: the host "
            "took back the container's access to the GPU device nodes",
            *evidence,
            f"container: {sysf.container_evidence or sysf.container}",
            fix=CGROUP_FIX,
        )
    return Outcome.fail(f"NVML failed to initialise: {name}", *evidence, fix=HUNG)


def _mismatch(ctx: Context, evidence: list[str]) -> Outcome:
    sysf = ctx.snapshot.system
    lib = library_version(ctx.snapshot.nvml.library_path)
    on_disk = sysf.nvidia_module_file_version
    evidence = [
        *evidence,
        f"kernel module {sysf.nvidia_module_version or 'unknown'}, libnvidia-ml {lib or 'unknown'}",
    ]
    if on_disk:
        evidence.append(f"the module the next boot loads: {on_disk} ({sysf.nvidia_module_file})")
    if sysf.dkms_nvidia_versions:
        evidence.append("DKMS holds nvidia " + ", ".join(sysf.dkms_nvidia_versions))
    packages = package_steps(sysf.os_release, lib)
    module = sysf.nvidia_module_version
    older = parse_version(lib or ""), parse_version(module or "")
    if module and older[0] and older[1] and older[0] < older[1] and on_disk in (None, module):
        return Outcome.fail(
            f"Driver/library version mismatch: the user-space driver ({lib}) is older than the "
            f"running kernel module ({module}), left behind by a partial upgrade; a reboot "
            "will not fix it",
            *evidence,
            fix=userspace_of(sysf.os_release, module),
        )
    if on_disk and lib and on_disk != lib:
        return Outcome.fail(
            "Driver/library version mismatch that a reboot will not fix: the kernel module on "
            "disk and the user-space driver are different versions (a half-finished driver "
            "upgrade)",
            *evidence,
            fix=Fix.of(*packages),
            subjects=Subjects(paths=[p for p in (sysf.nvidia_module_file,) if p]),
        )
    if on_disk and on_disk == lib:
        return Outcome.fail(
            "Driver/library version mismatch: the running kernel module is older than the "
            "installed driver (updated without a reboot); the module on disk matches",
            *evidence,
            fix=reload_fix(sysf.nvidia_modules),
        )
    return Outcome.fail(
        "Driver/library version mismatch: the running kernel module and the installed "
        "user-space driver differ (typically a driver update without a reboot)",
        *evidence,
        fix=Fix.of(
            *reload_steps(sysf.nvidia_modules),
            OR,
            Step.info("if the mismatch survives a reboot, the packages are half-upgraded"),
            *packages,
        ),
    )


@check("driver.device-nodes", "/dev/nvidia* nodes exist and are usable")
def device_nodes(ctx: Context) -> Outcome | None:
    sysf = ctx.snapshot.system
    if sysf.os != "Linux" or sysf.wsl:
        return None
    if _no_gpu(ctx) or not sysf.nvidia_module_loaded:
        return None  # the module check says what matters; nodes follow from it
    nodes = {n.path: n for n in sysf.device_nodes}
    ctl = nodes.get("/dev/nvidiactl")
    gpu_nodes = [n for p, n in nodes.items() if re.fullmatch(r"/dev/nvidia[0-9]+", p)]
    missing = [p for p in ["/dev/nvidiactl"] if not (ctl and ctl.exists)]
    if not gpu_nodes:
        missing.append("/dev/nvidia0 ...")
    if missing:
        fix = (
            container_fix(sysf.container)
            if sysf.container
            else Fix.of(
                Step.run("create them", "sudo nvidia-modprobe -c 0 -u"),
                OR,
                Step.run(
                    "start nvidia-persistenced, which creates them",
                    "sudo systemctl start nvidia-persistenced",
                ),
            )
        )
        return Outcome.fail(
            "GPU device nodes are missing", *[f"{m} missing" for m in missing], fix=fix
        )
    denied = [n for n in nodes.values() if n.exists and not (n.readable and n.writable)]
    if denied:
        groups = sorted({n.owner_group for n in denied if n.owner_group})
        group = groups[0] if groups else "video"
        return Outcome.fail(
            "No permission on GPU device nodes for this user",
            *[f"{n.path} {n.mode} group {n.owner_group}" for n in denied],
            fix=Fix.of(
                Step.run("add this user to their group", f"sudo usermod -aG {quote(group)} $USER"),
                Step.manual("log in again"),
                OR,
                Step.manual("fix the udev rule / NVreg_DeviceFileMode that sets these permissions"),
            ),
        )
    return Outcome.passed(f"{len(gpu_nodes)} GPU device node(s) and /dev/nvidiactl are usable")
