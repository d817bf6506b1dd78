"""Fix steps more than one layer's checks give: installing a driver by this machine's OS, resetting
GPUs, returning them to the default compute mode, and taking folders off the loader's path."""

from __future__ import annotations

from typing import Literal

from packaging.version import Version

from gpucheck.checks.context import Context, gpu_refs, indices
from gpucheck.compat import driver_text
from gpucheck.compat.frameworks import major_minor
from gpucheck.model.distros import LinuxFamily, linux_family
from gpucheck.model.fix import Change, Step, Tool
from gpucheck.model.layers import Layer
from gpucheck.model.shell import quote
from gpucheck.model.snapshot import GpuFacts


def distro(ctx: Context) -> LinuxFamily | Literal["windows", "wsl"]:
    """How a driver is installed here: the Linux family, or by Windows (WSL2 too)."""
    sysf = ctx.snapshot.system
    if sysf.wsl:
        return "wsl"
    if (sysf.os or "").lower() == "windows" or ctx.os == "windows":
        return "windows"
    return linux_family(sysf.os_release)


def install_driver(ctx: Context, text: str, version: Version | None) -> Step:
    """A step that installs an NVIDIA driver of `version` or newer (None: the recommended one)
    with this machine's package manager; `text` says why, for a person."""
    kind = distro(ctx)
    current = ctx.driver_version
    wanted = f">={driver_text(version)}" if version else None
    branch = str(version.release[0]) if version else None
    if kind in ("windows", "wsl"):
        where = "on Windows (WSL2 uses the Windows driver), " if kind == "wsl" else ""
        step = Step.manual(f"{where}{text}, from nvidia.com/drivers", Layer.DRIVER)
        step.changes = [Change("nvidia-driver", current, None, wanted)]
        return step
    if kind == "ubuntu":
        if branch is None:
            return Step.run(text, "sudo ubuntu-drivers install", layer=Layer.DRIVER)
        return Step.run(
            text,
            f"sudo apt install nvidia-driver-{branch}",
            Tool.APT,
            changes=[Change(f"nvidia-driver-{branch}", current, None, wanted)],
            layer=Layer.DRIVER,
        )
    if kind == "debian":
        return Step.run(
            text,
            "sudo apt install nvidia-driver",
            Tool.APT,
            changes=[Change("nvidia-driver", current, None, wanted)],
            layer=Layer.DRIVER,
        )
    if kind == "rpm":
        # NVIDIA's repository offers one module stream per branch ("550-dkms") and latest-dkms
        # (github.com/NVIDIA/yum-packaging-nvidia-driver, docs/guide-rhel8.md).
        stream = f"{branch}-dkms" if branch else "latest-dkms"
        return Step.run(
            f"{text} (NVIDIA's CUDA repository)",
            f"sudo dnf module install nvidia-driver:{stream}",
            Tool.DNF,
            changes=[Change("nvidia-driver", current, None, wanted)],
            layer=Layer.DRIVER,
        )
    if version is None:
        return Step.manual(f"{text} (the distribution's nvidia-driver package)", Layer.DRIVER)
    # The runfile's home on NVIDIA's download server (the same guide: "UDA location").
    arch = "aarch64" if ctx.snapshot.system.arch.lower() in ("aarch64", "arm64") else "x86_64"
    v = driver_text(version)
    runfile = f"NVIDIA-Linux-{arch}-{v}.run"
    return Step.run(
        f"{text} (NVIDIA's installer; a distribution package is better where there is one)",
        f"curl -fLO https://download.nvidia.com/XFree86/Linux-{arch}/{v}/{runfile} "
        f"&& sudo sh {runfile}",
        changes=[Change("nvidia-driver", current, v)],
        layer=Layer.DRIVER,
    )


def upgrade_driver(ctx: Context, cuda: str) -> Step:
    """Upgrade the driver to one that runs CUDA `cuda`: its minimum where the tables have
    it, else the floor of its major's minor version compatibility."""
    mm = major_minor(cuda)
    need = ctx.compat.min_driver(cuda, ctx.os)
    if need is not None:
        return install_driver(
            ctx,
            f"upgrade the NVIDIA driver to {driver_text(need)} or newer "
            f"(CUDA {mm}'s minimum on {ctx.os.title()})",
            need,
        )
    floor = ctx.compat.minor_compat_floor(mm.major, ctx.os) if mm else None
    if floor is not None and mm is not None:
        return install_driver(
            ctx,
            f"upgrade the NVIDIA driver to {driver_text(floor)} or newer (CUDA {mm.major}.x)",
            floor,
        )
    return install_driver(
        ctx, f"upgrade the NVIDIA driver to one that supports CUDA {mm or cuda}", None
    )


def share_gpus(gpus: list[GpuFacts], why: str) -> Step:
    """Return these GPUs to the default compute mode (any number of processes)."""
    return Step.run(
        why, f"sudo nvidia-smi -i {indices(gpus)} -c DEFAULT", gpus=gpu_refs(gpus), layer=Layer.GPUS
    )


def reset_gpus(gpus: list[GpuFacts], why: str) -> Step:
    """Reset these GPUs (none: every GPU, as when the driver counts some it cannot read);
    nothing may be running on them, and a reboot does the same."""
    which = f" -i {indices(gpus)}" if gpus else ""
    return Step.run(why, f"sudo nvidia-smi -r{which}", gpus=gpu_refs(gpus), layer=Layer.GPUS)


def unregister_loader_folders(
    ctx: Context, folders: list[str], layer: Layer | None = None
) -> list[Step]:
    """Take `folders` off the loader's path: remove the /etc/ld.so.conf.d files the probe read
    registering them (named, so a person removes the right one), then refresh the cache; where
    no file is known to name them, say where to look."""
    state = ctx.snapshot.install_state
    wanted = {f.rstrip("/") for f in folders}
    files = [
        e.file
        for e in (state.loader_entries or [] if state else [])
        if wanted & {d.rstrip("/") for d in e.directories}
    ]
    if not files:
        return [
            Step.manual(f"take {', '.join(folders)} out of /etc/ld.so.conf.d", layer),
            Step.run("refresh the loader cache", "sudo ldconfig", layer=layer),
        ]
    return [
        Step.run(
            f"remove the loader entries that register {', '.join(folders)}",
            "sudo rm " + " ".join(quote(f) for f in files) + " && sudo ldconfig",
            layer=layer,
        )
    ]
