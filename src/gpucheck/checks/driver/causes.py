"""Why the nvidia kernel module drives no GPU, read from the facts rather than guessed: the
kernel log's NVRM lines (a branch that no longer supports the GPU, the wrong module flavour),
its module-loading lines with Secure Boot (a signing key the kernel does not trust), DKMS's
tree (a build that failed for the running kernel), and compat/driver_branches.toml (which
branch last drives the GPU's architecture, each distribution's package names)."""

from __future__ import annotations

import re
from typing import Literal

from msgspec import Struct

from gpucheck.checks.context import Context
from gpucheck.compat.driver_branches import LegacyBranch, branch_of
from gpucheck.model.distros import linux_family
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.install_state import InstallStateFacts
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join

Flavour = Literal["open", "proprietary"]
# The kernel log's patterns, compiled by `re` (and cached there) on first use: a healthy
# machine's doctor never searches its log, and compiling all nine at import cost more than the
# rest of this module (docs/speed.md).
_LEGACY = r"supported through the NVIDIA ([0-9]+)\.xx Legacy drivers"
_GPU_NAMED = r"The NVIDIA (.{1,80}?) GPU installed in this system is"
_IGNORES = r"The ([0-9]+\.[0-9]+(?:\.[0-9]+)?) NVIDIA driver will ignore"
_OLD_UNSUPPORTED = r"is not supported by the ([0-9]+\.[0-9]+(?:\.[0-9]+)?) NVIDIA"
_LOADING = r"loading NVIDIA UNIX .{0,40}Kernel Module(?: for \S+)?\s+([0-9][0-9.]+)"
_NO_GSP = r"not supported by open nvidia\.ko because it does not include the requir"
_NEEDS_OPEN = r"requires use of the NVIDIA open kernel modules"
_KEY_REFUSED = r"unavailable key|Key was rejected|PKCS#7 signature not signed"
_BRACKETS = r"\[([^\]]+)\]"


class Cause(Struct):
    title: str
    evidence: list[str]
    fix: Fix


def library_version(path: str | None) -> str | None:
    """libnvidia-ml.so.535.104.05 -> 535.104.05. The probe records the path the loader really
    mapped (/proc/self/maps), so the name is read as is: checks do no I/O."""
    if not path:
        return None
    match = re.search(r"\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)?)$", path)
    return match.group(1) if match else None


def nvrm_text(ctx: Context) -> str:
    """The NVRM lines as one text: NVIDIA splits a message over several NVRM lines."""
    lines = ctx.snapshot.system.kernel_log_nvrm or []
    return " ".join(" ".join(line.removeprefix("NVRM:").split()) for line in lines)


def module_cause(ctx: Context, loaded: bool = False) -> Cause | None:
    """The cause the facts show, the kernel log's own word first; None: they show none. With
    the module `loaded`, only what the kernel log says (a GPU it ignored) counts."""
    text = nvrm_text(ctx)
    if loaded:
        return _legacy(ctx, text, infer=False) or _flavour(ctx, text)
    for find in (_legacy, _flavour, _signing_key, _dkms_failed):
        cause = find(ctx, text)
        if cause is not None:
            return cause
    return None


def _family(ctx: Context) -> str:
    release = (ctx.snapshot.system.os_release or "").lower()
    if "nixos" in release:
        return "nixos"
    if any(name in release for name in ("arch linux", "endeavouros", "cachyos", "manjaro")):
        return "arch"
    return linux_family(release)


def _driver_version(ctx: Context, text: str) -> str | None:
    """The driver version the machine holds, from the kernel log or the files."""
    sysf = ctx.snapshot.system
    for pattern in (_IGNORES, _LOADING, _OLD_UNSUPPORTED):
        match = re.search(pattern, text)
        if match:
            return match.group(1)
    return (
        sysf.nvidia_module_file_version
        or library_version(ctx.snapshot.nvml.library_path)
        or next(reversed(sysf.dkms_nvidia_versions or []), None)
    )


def gpu_architecture(ctx: Context) -> tuple[str | None, str | None]:
    """(the PCI bus's NVIDIA GPU by name, its architecture per compat/gpus.toml)."""
    for dev in ctx.snapshot.system.pci_gpus:
        name = dev.name or ""
        for candidate in [*re.findall(_BRACKETS, name), name]:
            model = ctx.compat.gpus.lookup(candidate) or ctx.compat.gpus.find(candidate)[0]
            if model is not None:
                return model.name, model.architecture
    return None, None


def _installer(version: str | None, option: str = "") -> str:
    arch = "x86_64"  # (the version may come from the snapshot: one quoted word)
    return join(["sudo", "sh", f"NVIDIA-Linux-{arch}-{version or '<version>'}.run"]) + option


# --- a branch that no longer drives the GPU ------------------------------------------------


def _legacy(ctx: Context, text: str, infer: bool = True) -> Cause | None:
    """NVRM names the legacy branch; else, with `infer`, the GPU's architecture (its PCI name
    in compat/gpus.toml) is one the installed branch no longer drives."""
    named = re.search(_LEGACY, text)
    if not named and not infer:
        return None  # (before the compat data is read: a healthy doctor never reads it)
    data = ctx.compat.driver_branches
    have = _driver_version(ctx, text)
    if named:
        row = data.by_name(named.group(1))
        gpu = re.search(_GPU_NAMED, text)
        name = gpu.group(1) if gpu else "GPU"
        evidence = [
            f"kernel log: NVRM: the {name} GPU is supported through the NVIDIA "
            f"{named.group(1)}.xx Legacy drivers"
        ]
    else:
        name, arch = gpu_architecture(ctx)
        row = data.for_architecture(arch)
        current = branch_of(have)
        if row is None or current is None or row.first_without is None:
            return None
        if current < row.first_without:
            return None
        evidence = [
            f"{name} is a {arch} GPU (compat/gpus.toml); driver {have} is branch {current}, "
            f"and {row.gpus} are last driven by branch {row.last_branch}"
        ]
    if row is None:
        return None
    evidence.append(f"source: {row.source.split(' ', 1)[0]}")
    return Cause(
        f"Driver {have or 'installed'} no longer supports this GPU ({name}): its last branch "
        f"is the {row.name} legacy branch",
        evidence,
        legacy_fix(ctx, row, have),
    )


def legacy_fix(ctx: Context, row: LegacyBranch, have: str | None) -> Fix:
    branch = str(row.last_branch)
    family = _family(ctx)
    steps: list[Step | Literal["or"]] = []
    why = f"install the {row.name} legacy branch, the last that drives {row.gpus}"
    if family == "ubuntu":
        steps += [
            Step.run(
                f"{why} (its proprietary module: the open one needs a GSP)",
                f"sudo apt install nvidia-driver-{branch}",
                Tool.APT,
                changes=[Change(f"nvidia-driver-{branch}", have, None, f"<{row.last_branch + 1}")],
                layer=Layer.DRIVER,
            ),
            Step.run(
                "hold it there, so that an upgrade does not bring the newer branch back",
                f"sudo apt-mark hold nvidia-driver-{branch}",
                Tool.APT,
                layer=Layer.DRIVER,
            ),
            OR,
        ]
    elif family == "nixos":
        steps += [
            Step.manual(
                f"{why}: in configuration.nix, hardware.nvidia.package = config.boot."
                f"kernelPackages.nvidiaPackages.legacy_{branch}; then nixos-rebuild switch",
                Layer.DRIVER,
            ),
            OR,
        ]
    steps += [
        Step.run(
            f"{why}, with NVIDIA's installer (its newest release, {row.latest_release})",
            _installer(row.latest_release),
            layer=Layer.DRIVER,
        ),
        Step.reboot(),
        Step.info(
            "a legacy branch builds only for the kernels it knows: an old branch on a new kernel "
            "fails in DKMS (see dkms status)",
            Layer.DRIVER,
            "dkms status",
        ),
    ]
    return Fix.of(*steps)


# --- the module flavour --------------------------------------------------------------------


def _flavour(ctx: Context, text: str) -> Cause | None:
    have = _driver_version(ctx, text)
    if re.search(_NEEDS_OPEN, text):
        name, _arch = gpu_architecture(ctx)
        return Cause(
            f"The proprietary nvidia module cannot drive this GPU ({name or 'Blackwell'}): it "
            "needs the open kernel module",
            ["kernel log: NVRM: the GPU requires use of the NVIDIA open kernel modules"],
            flavour_fix(ctx, "open", have),
        )
    if re.search(_NO_GSP, text):
        name, arch = gpu_architecture(ctx)
        return Cause(
            f"The open nvidia module cannot drive this GPU ({name or 'a GPU without GSP'}): "
            "it has no GSP, so it needs the proprietary module",
            [
                "kernel log: NVRM: not supported by open nvidia.ko because it does not include "
                "the required GPU System Processor (GSP)",
                *([f"{name} is a {arch} GPU (compat/gpus.toml)"] if arch else []),
            ],
            flavour_fix(ctx, "proprietary", have),
        )
    return None


def flavour_fix(ctx: Context, flavour: Flavour, have: str | None) -> Fix:
    """Switch the kernel module to `flavour`, same branch, by the distribution's packages."""
    data = ctx.compat.driver_branches
    branch = str(branch_of(have) or "<branch>")
    row = data.flavour_packages(_family(ctx))
    steps: list[Step | Literal["or"]] = []
    if row is not None:
        package = row.package(flavour, branch)
        other = "proprietary" if flavour == "open" else "open"
        tool = {"ubuntu": Tool.APT, "rpm": Tool.DNF}.get(row.family, Tool.SHELL)
        steps += [
            Step.run(
                f"install the {flavour} kernel module of the same driver (it replaces the other "
                f"flavour's package: {row.package(other, branch)})",
                f"{row.install} {package}",
                tool,
                changes=[Change(package, None, have)],
                layer=Layer.DRIVER,
            ),
            OR,
        ]
    option = data.open_module.installer_option if data.open_module else "--kernel-module-type"
    steps += [
        Step.run(
            f"reinstall driver {have or ''} with NVIDIA's installer, {flavour} modules".replace(
                "  ", " "
            ),
            _installer(have, f" {option}={flavour}"),
            layer=Layer.DRIVER,
        ),
        Step.reboot(),
    ]
    return Fix.of(*steps)


# --- Secure Boot: a signing key the kernel does not trust ---------------------------------------


def _state(ctx: Context) -> InstallStateFacts | None:
    return ctx.snapshot.install_state


def _signing_key(ctx: Context, text: str) -> Cause | None:
    state = _state(ctx)
    lines = (
        [line for line in (state.module_log or []) if re.search(_KEY_REFUSED, line)]
        if state
        else []
    )
    if not lines:
        return None
    keys = state.signing_keys if state else []
    key = keys[0] if keys else "/var/lib/dkms/mok.pub"
    evidence = [f"kernel log: {line}" for line in lines[-3:]]
    if ctx.snapshot.system.secure_boot:
        evidence.append("Secure Boot is on")
    evidence.append(
        "signing keys on disk: "
        + (", ".join(keys) if keys else "none found (DKMS: /var/lib/dkms/mok.pub)")
    )
    return Cause(
        "The kernel refuses the nvidia module's signature: its signing key is not one the "
        "kernel trusts for modules",
        evidence,
        Fix.of(
            Step.info(
                "which it is decides the fix: whether the key DKMS signs with is enrolled",
                Layer.SYSTEM,
                join(["mokutil", "--test-key", key]),
            ),
            Step.run(
                "not enrolled: enroll it (a one-time password), then confirm it at the blue "
                "MokManager screen on the next boot",
                join(["sudo", "mokutil", "--import", key]),
                layer=Layer.SYSTEM,
            ),
            Step.reboot("reboot and enroll the key in MokManager"),
            OR,
            Step.run(
                "enrolled, yet refused (the key lands in the .platform keyring, which module "
                "loading does not consult): let the kernel trust MOK keys for modules, confirmed "
                "at the next boot",
                "sudo mokutil --trust-mok",
                layer=Layer.SYSTEM,
            ),
            Step.reboot("reboot and confirm in MokManager"),
            Step.info(
                "then the key is in the kernel's .machine keyring",
                Layer.SYSTEM,
                "sudo keyctl show %:.machine",
            ),
        ),
    )


# --- DKMS: no build for the running kernel ---------------------------------------------------


def _dkms_failed(ctx: Context, text: str) -> Cause | None:
    state = _state(ctx)
    kernel = ctx.snapshot.system.kernel
    if state is None or state.dkms_builds is None or not kernel:
        return None
    if any(b.kernel == kernel and b.built for b in state.dkms_builds):
        return None  # built for this kernel: the cause is elsewhere
    failures = [f for f in state.dkms_failures if f.kernel in (None, kernel)]
    built_for = sorted({b.kernel for b in state.dkms_builds if b.built})
    versions = sorted({b.version for b in state.dkms_builds} | {f.version for f in failures})
    if not failures:
        return None
    failure = failures[-1]
    headers_missing = any("headers" in e.lower() and ("not" in e.lower()) for e in failure.errors)
    evidence = [
        f"DKMS holds nvidia {', '.join(versions)}; no build for the running kernel {kernel}",
        f"its last build failed: {failure.log}",
        *[f"make.log: {e}" for e in failure.errors[:3]],
        "built for: " + (", ".join(built_for) if built_for else "no kernel"),
    ]
    steps: list[Step | Literal["or"]] = []
    if headers_missing:
        steps += [
            Step.run(
                "install the running kernel's headers, which the build needs, and build again",
                join(["sudo", "apt", "install", f"linux-headers-{kernel}"])
                + " && sudo dkms autoinstall",
                Tool.APT,
                layer=Layer.SYSTEM,
            ),
            OR,
        ]
    if built_for:
        steps.append(
            Step.manual(
                f"boot a kernel driver {failure.version} builds for ({', '.join(built_for)}): "
                "pick it in the boot menu's advanced options, and keep it until the driver "
                "catches up",
                Layer.SYSTEM,
            )
        )
        steps.append(OR)
    legacy = ctx.compat.driver_branches.by_name(failure.version)
    _name, arch = gpu_architecture(ctx)
    if legacy is not None and (arch in legacy.architectures or not legacy.architectures):
        evidence.append(
            f"{failure.version} is the {legacy.name} legacy branch, the last for {legacy.gpus}"
        )
        newer = Step.manual(
            f"no newer branch drives {legacy.gpus}: run a kernel the {legacy.name} legacy branch "
            "still builds for (the distribution's long-term-support kernel)",
            Layer.SYSTEM,
        )
    else:
        newer = Step.manual(
            f"install a driver branch newer than {failure.version} that supports kernel "
            f"{kernel} (its release notes name the newest kernel it builds for); rebuilding "
            "the same version fails the same way",
            Layer.DRIVER,
        )
    steps += [
        newer,
        Step.info(
            "the compiler's first error says which (a kernel interface the branch predates)",
            Layer.DRIVER,
            f"grep -m5 -E 'error:' {failure.log}",
        ),
    ]
    return Cause(
        f"The nvidia module is not built for the running kernel {kernel}: DKMS failed to build "
        f"driver {failure.version} for it",
        evidence,
        Fix.of(*steps),
    )
