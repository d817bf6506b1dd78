"""The driver checks' remedies: reload the modules, bring a half-upgraded driver back to one
version by its package manager, and what to do when the driver hangs or a container lost it."""

from __future__ import annotations

from typing import Literal

from gpucheck.checks.context import Context, interpreter_pip, on_windows
from gpucheck.model.distros import linux_family
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join

# Unload order: each module before the ones it depends on.
UNLOAD_ORDER = ("nvidia_peermem", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia")


def reload_steps(modules: list[str]) -> list[Step | Literal["or"]]:
    """Reboot, or unload exactly the nvidia modules that are loaded and load them again
    (rmmod of a module that is not loaded fails and would stop the chain)."""
    loaded = [m for m in UNLOAD_ORDER if m in modules] or ["nvidia"]
    load = [m for m in reversed(loaded) if m != "nvidia_peermem"]
    return [
        Step.reboot(),
        OR,
        Step.run(
            "find the processes using the GPU (they must stop first)", "sudo lsof /dev/nvidia*"
        ),
        Step.run(
            "reload the driver",
            f"sudo rmmod {' '.join(loaded)} && sudo modprobe -a {' '.join(load)}",
        ),
    ]


def reload_fix(modules: list[str]) -> Fix:
    return Fix.of(*reload_steps(modules))


HUNG = Fix.of(
    Step.run(
        "the driver is not answering: look for Xid errors",
        "sudo dmesg | grep -i -E 'xid|nvrm'",
    ),
    Step.manual("stop what is using the GPU"),
    Step.run("enable persistence mode", "sudo nvidia-smi -pm 1"),
    Step.reboot("reboot if it persists"),
)


# NVIDIA's container toolkit troubleshooting: with the systemd cgroup driver, a
# `systemctl daemon-reload` (or any unit change) on the host rewrites the container's device
# cgroup without the GPU nodes the runtime added; NVML then fails with "Unknown Error".
CGROUP_FIX = Fix.of(
    Step.manual(
        "recreate the container (docker rm -f NAME, then the same docker run --gpus ...; a "
        "Kubernetes pod: delete it)",
        Layer.JOB,
    ),
    Step.run(
        "to stop it recurring after the host's next systemctl daemon-reload, on the host (and "
        "the udev rule that re-runs it, from NVIDIA's container toolkit troubleshooting)",
        "sudo nvidia-ctk system create-dev-char-symlinks --create-all",
        layer=Layer.SYSTEM,
    ),
    OR,
    Step.run(
        "pass the GPUs through CDI",
        "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
        layer=Layer.SYSTEM,
    ),
    OR,
    Step.manual(
        'run Docker with the cgroupfs driver ("exec-opts": ["native.cgroupdriver=cgroupfs"] '
        "in /etc/docker/daemon.json)",
        Layer.SYSTEM,
    ),
)


def package_steps(os_release: str | None, version: str | None) -> list[Step]:
    """Make the kernel module and the user-space driver one version again, by the package
    manager that installed them (a half-finished upgrade leaves them apart)."""
    branch = (version or "").split(".")[0] or "<branch>"
    family = linux_family(os_release)
    fix_broken = Step.run(
        "finish the interrupted upgrade", "sudo apt install --fix-broken", Tool.APT
    )
    if family == "ubuntu":
        return [
            fix_broken,
            Step.run(
                "reinstall one driver for both (its DKMS package rebuilds the module)",
                join(["sudo", "apt", "install", "--reinstall", f"nvidia-driver-{branch}"]),
                Tool.APT,
                changes=[Change(f"nvidia-driver-{branch}", version, version)],
            ),
            Step.reboot(),
        ]
    if family == "debian":
        fix_broken.text += " (with the repositories that hold the driver enabled)"
        return [
            fix_broken,
            Step.run(
                "reinstall one driver for both",
                "sudo apt install --reinstall nvidia-driver nvidia-kernel-dkms",
                Tool.APT,
                changes=[Change("nvidia-driver", version, version), Change("nvidia-kernel-dkms")],
            ),
            Step.reboot(),
        ]
    if family == "rpm":
        return [
            Step.run(
                "make the module and the libraries one version",
                "sudo dnf distro-sync 'nvidia-*' 'kmod-nvidia*'",
                Tool.DNF,
            ),
            Step.run("rebuild the module, if DKMS builds it", "sudo dkms autoinstall"),
            Step.reboot(),
        ]
    return [
        Step.run(
            "reinstall one driver version for both, with the package manager or installer that "
            "put them there (NVIDIA's installer shown)",
            join(["sudo", "sh", f"NVIDIA-Linux-x86_64-{version or '<version>'}.run"]),
        ),
        Step.reboot(),
    ]


def userspace_of(os_release: str | None, module: str) -> Fix:
    """Bring the user-space driver up to the running kernel module's version (it was left
    behind: a partial upgrade, or a .run installed with --no-kernel-modules beside another
    module; tinygrad/open-gpu-kernel-modules#47). A reboot does not help: the module stays."""
    branch = module.split(".")[0]
    family = linux_family(os_release)
    steps: list[Step | Literal["or"]] = []
    if family in ("ubuntu", "debian"):
        pkg = f"libnvidia-compute-{branch}" if family == "ubuntu" else "libcuda1"
        utils = f"nvidia-utils-{branch}" if family == "ubuntu" else "nvidia-smi"
        steps += [
            Step.run(
                f"install the user-space driver of the module's version {module} (apt-cache "
                f"policy {pkg} must offer {module})",
                join(["sudo", "apt", "install", pkg, utils]),
                Tool.APT,
                changes=[Change(pkg, None, module), Change(utils, None, module)],
                layer=Layer.DRIVER,
            ),
            OR,
        ]
    steps.append(
        Step.run(
            f"install driver {module}'s user space with NVIDIA's installer (the module is "
            "already there)",
            join(["sudo", "sh", f"NVIDIA-Linux-x86_64-{module}.run", "--no-kernel-modules"]),
            layer=Layer.DRIVER,
        )
    )
    return Fix.of(*steps)


def _own_python(ctx: Context) -> str | None:
    """The interpreter gpucheck ran from, where the snapshot names it."""
    return next((e.python for e in ctx.snapshot.environments if e.origin == "gpucheck"), None)


def binding_fix(ctx: Context) -> Fix:
    """Install NVML's binding where gpucheck runs (the snapshot names that interpreter)."""
    # gpucheck's own interpreter by name, even when it is the only one: run from pipx, say,
    # it is not the `pip` on PATH.
    python = _own_python(ctx)
    return Fix.of(
        Step.run(
            "install it in the environment gpucheck runs from",
            (interpreter_pip(python, on_windows(ctx)) if python else "pip")
            + " install nvidia-ml-py",
            Tool.PIP,
            changes=[Change("nvidia-ml-py")],
            environment=python,
            layer=Layer.FRAMEWORKS,
        )
    )


LOAD_UVM = Step.run(
    "load nvidia-uvm and create its node",
    "sudo modprobe nvidia-uvm && sudo nvidia-modprobe -u -c=0",
    layer=Layer.DRIVER,
)
UVM_FIX = Fix.of(
    LOAD_UVM,
    Step.run(
        "load it at boot",
        "echo nvidia-uvm | sudo tee /etc/modules-load.d/nvidia-uvm.conf",
        layer=Layer.DRIVER,
    ),
)
