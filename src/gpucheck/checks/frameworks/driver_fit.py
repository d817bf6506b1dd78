"""The GPUs a framework build must run on, and its CUDA judged against the running driver."""

from __future__ import annotations

from collections.abc import Callable

from msgspec import Struct
from packaging.version import Version

from gpucheck.checks.context import Context, gpu_label
from gpucheck.checks.fixes import upgrade_driver as upgrade_driver  # the frameworks' step
from gpucheck.checks.frameworks.per_environment import version_key
from gpucheck.compat import cuda_from_int, driver_text, parse_version
from gpucheck.compat.frameworks import major_minor
from gpucheck.model.finding import Outcome, Status
from gpucheck.model.fix import OR, Fix, Step

# --- the GPUs a build must run on ----------------------------------------------------------------


class Target(Struct, frozen=True):
    label: str
    cc: str
    index: int | None = None


def targets(ctx: Context) -> list[Target]:
    """The GPUs CUDA programs here would use (CUDA_VISIBLE_DEVICES honoured; all of them when it
    hides every GPU), with a known compute capability; from NVML, else from libcuda."""
    gpus = [g for g in (ctx.visibility.visible or ctx.gpus) if g.handle_error is None]
    if gpus:
        return [
            Target(gpu_label(g), g.compute_capability, g.index)
            for g in gpus
            if g.compute_capability and parse_version(g.compute_capability)
        ]
    drv = ctx.snapshot.cuda.driver
    if drv.init_result != 0:
        return []
    return [
        Target(f"CUDA device {d.index} ({d.name or 'unknown GPU'})", d.compute_capability, d.index)
        for d in drv.devices
        if d.compute_capability and parse_version(d.compute_capability)
    ]


def cc_list(found: list[Target]) -> list[str]:
    return sorted({t.cc for t in found}, key=version_key)


def arch_name(ctx: Context, cc: str) -> str:
    name = ctx.compat.architecture(cc)
    return f"compute capability {cc} ({name})" if name else f"compute capability {cc}"


def upgrade_or_keep(ctx: Context, cuda: str, switch: Step | None) -> Fix:
    """Upgrade the driver for CUDA `cuda`, or keep this driver and take `switch` (a build whose
    CUDA it runs), where there is one."""
    if switch is not None:
        switch.text = "keep this driver and " + switch.text
    return Fix.of(upgrade_driver(ctx, cuda), OR, switch)


def gpus_line(ctx: Context) -> str:
    found = targets(ctx)
    if found:
        return "NVIDIA GPU(s): " + "; ".join(f"{t.label}, compute {t.cc}" for t in found)
    return f"{ctx.pci_gpu_count} NVIDIA GPU(s) on the PCI bus"


# --- the driver ---------------------------------------------------------------------------------


def forward_cuda(ctx: Context) -> Version | None:
    """The CUDA of the libcuda loaded here where it is newer than the kernel driver's (NVML's)
    and cuInit succeeded with it: CUDA forward compatibility (the cuda-compat package on a
    data-centre GPU). None otherwise: judge against the driver's own CUDA."""
    drv = ctx.snapshot.cuda.driver
    nvml = ctx.snapshot.nvml.cuda_driver_version
    if drv.init_result != 0 or not drv.driver_version or not nvml or drv.driver_version <= nvml:
        return None
    return major_minor(cuda_from_int(drv.driver_version))


def judge_driver(ctx: Context, cuda: str) -> tuple[Status, str] | None:
    """Does a build that brings CUDA `cuda` run on this driver? FAIL (no), INFO (yes, through
    minor version compatibility, PTX JIT aside), PASS, or None (unknown)."""
    driver = ctx.driver_version
    want = major_minor(cuda)
    if driver is None or want is None:
        return None
    forward = forward_cuda(ctx)
    if forward is not None and want <= forward:
        # The libcuda this process loads (the cuda-compat package, an NGC image) is newer than
        # the kernel driver's branch and cuInit succeeded with it: frameworks load the same one.
        return Status.PASS, (
            f"the libcuda loaded here ({ctx.snapshot.cuda.driver.library_path or 'libcuda'}) "
            f"runs CUDA {forward} on driver {driver} through forward compatibility: runs CUDA "
            f"{want}"
        )
    runs = ctx.compat.cuda_runs_on_driver(cuda, driver, ctx.os)
    if runs is None:
        return None
    have = major_minor(ctx.driver_cuda)
    have_text = f" (CUDA {have})" if have else ""
    if not runs:
        need = ctx.compat.min_driver(cuda, ctx.os)
        floor = ctx.compat.minor_compat_floor(want.major, ctx.os) if want.major >= 11 else None
        needs = f"driver {driver_text(need)}" if need else f"a driver for CUDA {want}"
        if floor is not None:
            needs += f" (or {driver_text(floor)}+ through minor version compatibility)"
        return Status.FAIL, (
            f"CUDA {want} needs {needs}; this driver is {driver}{have_text}: CUDA fails to "
            "start (CUDA_ERROR_INSUFFICIENT_DRIVER, 'The NVIDIA driver on your system is too old')"
        )
    if have is not None and want > have:
        return Status.INFO, (
            f"CUDA {want} is newer than the driver's CUDA {have}: it runs through minor version "
            f"compatibility (driver {driver}), but PTX it JIT-compiles at run time fails "
            "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)"
        )
    return Status.PASS, f"driver {driver}{have_text} runs CUDA {want}"


def driver_outcome(
    ctx: Context, name: str, cuda: str, fix: Callable[[], Fix], *evidence: str
) -> Outcome:
    """The verdict of a `*.cuda-driver` check on one build of `name` bringing CUDA `cuda`;
    `fix` is asked only when the driver is too old."""
    mm = major_minor(cuda) or cuda
    verdict = judge_driver(ctx, cuda)
    if verdict is None:
        return Outcome.skip(
            f"{name} (CUDA {mm}): not judged, the driver version is not known "
            "(see the driver checks)"
        )
    status, why = verdict
    driver = ctx.driver_version
    if status is Status.FAIL:
        return Outcome.fail(
            f"{name} (CUDA {mm}) needs a newer NVIDIA driver than {driver}",
            why,
            *evidence,
            fix=fix(),
        )
    if status is Status.INFO:
        return Outcome.info(
            f"{name} (CUDA {mm}) runs on driver {driver} through minor version compatibility",
            why,
            *evidence,
        )
    return Outcome.passed(f"{name} (CUDA {mm}) runs on driver {driver}", why, *evidence)
