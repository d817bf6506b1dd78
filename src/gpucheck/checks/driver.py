"""Driver checks: kernel module, NVML (the user-space driver), device nodes, persistence."""

from __future__ import annotations

import re

from gpucheck.checks.context import Context, gpu_label, sentence
from gpucheck.checks.registry import check
from gpucheck.checks.system import container_fix
from gpucheck.model.finding import Outcome, Section, Subjects

NO_GPU = "No NVIDIA GPU, so no driver is needed"
# Unload order: each module before the ones it depends on.
UNLOAD_ORDER = ("nvidia_peermem", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia")


def reload_fix(modules: list[str]) -> str:
    """Reboot, or unload exactly the nvidia modules that are loaded and load them again
    (rmmod of a module that is not loaded fails and would stop the chain)."""
    loaded = [m for m in UNLOAD_ORDER if m in modules] or ["nvidia"]
    load = [m for m in reversed(loaded) if m != "nvidia_peermem"]
    return (
        "Reboot; or, with no process using the GPU (`sudo lsof /dev/nvidia*`), reload the "
        f"driver: `sudo rmmod {' '.join(loaded)} && sudo modprobe -a {' '.join(load)}`"
    )


HUNG = (
    "The driver is not answering: look for Xid errors (sudo dmesg | grep -i -E 'xid|nvrm'), "
    "stop what is using the GPU, enable persistence mode (sudo nvidia-smi -pm 1), and reboot "
    "if it persists."
)


# NVIDIA's container toolkit troubleshooting: with the systemd cgroup driver, a
# `systemctl daemon-reload` (or any unit change) on the host rewrites the container's device
# cgroup without the GPU nodes the runtime added; NVML then fails with "Unknown Error".
CGROUP_FIX = (
    "Recreate the container (`docker rm -f NAME`, then the same `docker run --gpus ...`; a "
    "Kubernetes pod: delete it). To stop it recurring after the host's next "
    "`systemctl daemon-reload`, on the host: `sudo nvidia-ctk system create-dev-char-symlinks "
    "--create-all` (and the udev rule that re-runs it, from NVIDIA's container toolkit "
    "troubleshooting), or pass the GPUs through CDI (`sudo nvidia-ctk cdi generate "
    "--output=/etc/cdi/nvidia.yaml`), or run Docker with the cgroupfs driver "
    '(`"exec-opts": ["native.cgroupdriver=cgroupfs"]` in /etc/docker/daemon.json).'
)


def _no_gpu(ctx: Context) -> bool:
    return ctx.has_gpu is False


def library_version(path: str | None) -> str | None:
    """libnvidia-ml.so.535.104.05 -> 535.104.05. The probe records the path the loader really
    mapped (/proc/self/maps), so the name is read as is: checks do no I/O."""
    if not path:
        return None
    match = re.search(r"\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)?)$", path)
    return match.group(1) if match else None


@check("driver.kernel-module", Section.DRIVER, "the nvidia kernel module is loaded")
def kernel_module(ctx: Context) -> Outcome:
    sysf = ctx.snapshot.system
    if sysf.os != "Linux":
        return Outcome.skip(f"Kernel modules are not checked on {sysf.os or 'this OS'}")
    if sysf.wsl:
        return Outcome.skip("WSL2: the Windows host's driver serves the GPU, no kernel module")
    if sysf.nvidia_module_loaded:
        version = sysf.nvidia_module_version or "unknown version"
        kind = " (open kernel module)" if "Open Kernel" in (sysf.nvidia_module_banner or "") else ""
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
            fix="Install or load the NVIDIA driver on the host (sudo modprobe nvidia there); a "
            "container cannot load kernel modules.",
        )
    evidence = []
    for dev in sysf.pci_gpus:
        bound = f"bound to {dev.driver}" if dev.driver else "no driver bound"
        evidence.append(f"{dev.name or dev.device_id} at {dev.address}: {bound}")
    lib_version = library_version(ctx.snapshot.nvml.library_path)
    if lib_version:
        evidence.append(f"the user-space driver {lib_version} is installed (libnvidia-ml)")
    causes = [
        "Load it: sudo modprobe nvidia. If that fails, the usual causes are:",
        "  - the kernel was updated and the module not rebuilt for it: dkms status; then "
        "sudo dkms autoinstall, or reinstall the driver package for kernel $(uname -r)",
    ]
    if sysf.secure_boot:
        evidence.append("Secure Boot is on")
        causes.append(
            "  - Secure Boot is on and refuses the unsigned module: enroll the module's key "
            "(sudo mokutil --import /var/lib/dkms/mok.pub, then reboot) or disable Secure Boot"
        )
    else:
        causes.append("  - Secure Boot refuses an unsigned module: mokutil --sb-state")
    if sysf.nouveau_loaded:
        causes.append("  - nouveau holds the GPU: see system.nouveau")
    if any(d.driver == "vfio-pci" for d in sysf.pci_gpus):
        causes.append("  - the GPU is bound to vfio-pci (reserved for a VM): unbind it first")
    if not lib_version:
        causes.append(
            "  - no driver is installed: install NVIDIA's driver (Ubuntu: sudo ubuntu-drivers "
            "install; others: the distribution's nvidia-driver package) and reboot"
        )
    return Outcome.fail(
        "The nvidia kernel module is not loaded: the GPU has no driver",
        *evidence,
        fix="\n".join(causes),
    )


@check("driver.nvml", Section.DRIVER, "NVML (the user-space driver) initialises and answers")
def nvml(ctx: Context) -> Outcome:
    facts = ctx.snapshot.nvml
    sysf = ctx.snapshot.system
    run = ctx.snapshot.probe("nvml")
    if run is not None and run.status == "timeout":
        return Outcome.fail(f"NVML {run.error}", fix=HUNG)
    if run is not None and run.status in ("crashed", "error") and not ctx.nvml_ok:
        return Outcome.fail(f"NVML probe {run.error}", fix=HUNG)
    if ctx.nvml_ok:
        out = Outcome.passed(
            f"Driver {facts.driver_version}, supports CUDA {ctx.driver_cuda or 'unknown'}, "
            f"{facts.device_count if facts.device_count is not None else '?'} GPU(s)",
            f"NVML {facts.nvml_version or '?'} from {facts.library_path or 'libnvidia-ml.so.1'}",
        )
        if run is not None and run.status == "crashed":
            return Outcome.warn(
                "NVML answers, but one of its calls crashed the probe",
                *out.evidence,
                str(run.error),
                fix="Update the NVIDIA driver (a driver bug); the affected facts are unknown.",
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
            fix="pip install nvidia-ml-py (in the environment gpucheck runs from)",
        )
    if name == "LibraryNotFound":
        if _no_gpu(ctx):
            return Outcome.skip(NO_GPU, "libnvidia-ml.so.1 is not installed either")
        if sysf.container and not sysf.nvidia_module_loaded:
            return Outcome.skip("No NVIDIA driver library inside this container", *evidence)
        branch = (sysf.nvidia_module_version or "").split(".")[0]
        if sysf.container:
            fix = container_fix(sysf.container) + (
                " If the GPU is passed in already, set NVIDIA_DRIVER_CAPABILITIES=compute,utility "
                "so that the driver's libraries are mounted."
            )
        elif branch:
            fix = (
                f"Install the user-space driver matching kernel module {sysf.nvidia_module_version}"
                " (Ubuntu/Debian: sudo apt install "
                f"libnvidia-compute-{branch} nvidia-utils-{branch};"
                " or reinstall the same driver version with NVIDIA's installer)."
            )
        else:
            fix = "Install the NVIDIA driver (Ubuntu: sudo ubuntu-drivers install) and reboot."
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
            fix="See driver.kernel-module: sudo modprobe nvidia, and look at dkms status.",
        )
    if name == "LibRmVersionMismatch":
        return _mismatch(ctx, evidence)
    if name == "NoPermission":
        return Outcome.fail(
            "No permission to use the GPU",
            *evidence,
            fix="See driver.device-nodes: the /dev/nvidia* nodes must be readable and writable "
            "by this user (ls -l /dev/nvidia*; add the user to their group).",
        )
    if name in ("GpuIsLost", "ResetRequired"):
        return Outcome.fail(
            "A GPU has fallen off the bus or needs a reset",
            *evidence,
            fix="sudo nvidia-smi -r (GPU reset) or reboot; sudo dmesg | grep -i xid says why. "
            "If it repeats, the GPU or its slot/power is failing.",
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


def package_fix(os_release: str | None, version: str | None) -> str:
    """Make the kernel module and the user-space driver one version again, by the package
    manager that installed them (a half-finished upgrade leaves them apart)."""
    branch = (version or "").split(".")[0] or "<branch>"
    distro = (os_release or "").lower()
    if "ubuntu" in distro:
        return (
            "`sudo apt install --fix-broken`, then reinstall one driver for both: "
            f"`sudo apt install --reinstall nvidia-driver-{branch}` (its DKMS package rebuilds "
            "the module), and reboot"
        )
    if "debian" in distro:
        return (
            "`sudo apt install --fix-broken` (with the repositories that hold the driver "
            "enabled), then `sudo apt install --reinstall nvidia-driver nvidia-kernel-dkms`, "
            "and reboot"
        )
    if any(d in distro for d in ("red hat", "rhel", "rocky", "alma", "fedora", "centos")):
        return (
            "`sudo dnf distro-sync 'nvidia-*' 'kmod-nvidia*'` so that the module and the "
            "libraries are one version, then `sudo dkms autoinstall` if DKMS builds it, "
            "and reboot"
        )
    return (
        "reinstall one driver version for both, with the package manager or installer that "
        f"put them there (NVIDIA's installer: `sudo sh NVIDIA-Linux-x86_64-{version or '<version>'}"
        ".run`), and reboot"
    )


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
    packages = package_fix(sysf.os_release, lib)
    if on_disk and lib and on_disk != lib:
        return Outcome.fail(
            "Driver/library version mismatch that a reboot will not fix: the kernel module on "
            "disk and the user-space driver are different versions (a half-finished driver "
            "upgrade)",
            *evidence,
            fix=sentence(packages) + ".",
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
        fix=reload_fix(sysf.nvidia_modules)
        + ". If the mismatch survives a reboot, the packages are half-upgraded: "
        + packages,
    )


@check("driver.device-nodes", Section.DRIVER, "/dev/nvidia* nodes exist and are usable")
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
            else "sudo nvidia-modprobe -c 0 -u (or start nvidia-persistenced), which creates them"
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
            fix=f"sudo usermod -aG {group} $USER, then log in again "
            "(or fix the udev rule / NVreg_DeviceFileMode that sets these permissions)",
        )
    return Outcome.passed(f"{len(gpu_nodes)} GPU device node(s) and /dev/nvidiactl are usable")


@check("driver.uvm", Section.DRIVER, "nvidia-uvm (needed by every CUDA program) is present")
def uvm(ctx: Context) -> Outcome | None:
    sysf = ctx.snapshot.system
    if sysf.os != "Linux" or sysf.wsl or not sysf.nvidia_module_loaded:
        return None
    node = next((n for n in sysf.device_nodes if n.path == "/dev/nvidia-uvm"), None)
    if node is None:
        return Outcome.skip("Whether /dev/nvidia-uvm exists is not known")
    driver = ctx.snapshot.cuda.driver
    if node.exists or driver.init_result == 0:
        return Outcome.passed("nvidia-uvm is loaded")
    loaded = "nvidia_uvm" in sysf.nvidia_modules
    evidence = [
        "/dev/nvidia-uvm does not exist",
        "nvidia_uvm module " + ("loaded" if loaded else "not loaded"),
    ]
    if driver.init_error_name:
        evidence.append(f"cuInit: {driver.init_error_name}")
    fix = (
        "sudo modprobe nvidia-uvm && sudo nvidia-modprobe -u -c=0 (and load it at boot: "
        "echo nvidia-uvm | sudo tee /etc/modules-load.d/nvidia-uvm.conf)"
    )
    if driver.init_result not in (None, 0) and not sysf.container:
        return Outcome.fail("nvidia-uvm is missing: CUDA cannot start", *evidence, fix=fix)
    if sysf.container:
        # Inside a container nothing can load it or create the node: CUDA cannot start.
        return Outcome.fail(
            "nvidia-uvm is missing in this container: CUDA cannot start",
            *evidence,
            fix=container_fix(sysf.container),
        )
    return Outcome.warn(
        "nvidia-uvm is not set up yet: the first CUDA program must load it (through the setuid "
        "nvidia-modprobe helper; without that helper, or unprivileged, CUDA fails to start)",
        *evidence,
        fix=fix,
    )


@check("driver.persistence-mode", Section.DRIVER, "persistence mode is on for server GPUs")
def persistence_mode(ctx: Context) -> Outcome | None:
    if ctx.snapshot.system.os != "Linux" or not ctx.gpus:
        return None
    server = [
        g for g in ctx.healthy_handles if g.brand in ("Tesla", "NVIDIA") and not g.display_active
    ]
    if not server:
        return None
    off = [g for g in server if g.persistence_mode is False]
    if all(g.persistence_mode is None for g in server):
        return Outcome.skip("Persistence mode: not reported by these GPUs")
    if not off:
        known = [g for g in server if g.persistence_mode is not None]
        silent = len(server) - len(known)
        return Outcome.passed(
            f"Persistence mode on for {len(known)} data-centre GPU(s)",
            *([f"not reported by {silent} GPU(s)"] if silent else []),
        )
    return Outcome.warn(
        f"Persistence mode is off on {len(off)} data-centre GPU(s): every CUDA start pays the "
        "driver's initialisation, and GPU state resets between jobs",
        *[gpu_label(g) for g in off],
        fix="sudo systemctl enable --now nvidia-persistenced (or: sudo nvidia-smi -pm 1)",
    )
