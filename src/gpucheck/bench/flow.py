"""`gpucheck bench`'s flow, for the command line and Python alike: probe this machine, pick the
GPUs to measure (all usable ones, or those asked for), find the interpreter with torch or CuPy,
measure the CPU and each GPU, and judge the figures. Bad input raises UserError (exit 2)."""

from __future__ import annotations

from collections.abc import Callable

from msgspec import Struct

from gpucheck.bench.probe import measure_cpu, measure_gpus
from gpucheck.bench.report import BenchReport
from gpucheck.bench.verdicts import findings
from gpucheck.checks.context import Context
from gpucheck.inputs import UserError, load_compat, probe_options
from gpucheck.model.frameworks import CUPY, TORCH
from gpucheck.probes.framework_python import find
from gpucheck.probes.frameworks import PythonNotFound
from gpucheck.probes.run import collect, driver_init_allowed


class BenchRequest(Struct, frozen=True, kw_only=True):
    quick: bool = False  # smaller sizes, fewer samples
    gpus: tuple[int, ...] = ()  # NVML indices to measure (none: every usable GPU)
    strict: bool = False  # warnings fail too
    timeout: float = 180.0  # seconds each GPU's run may take
    duration: float = 0.0  # seconds of back-to-back matmul per GPU (0: off)
    python: str | None = None  # the interpreter whose torch or CuPy measures
    compat_dirs: tuple[str, ...] = ()


def _quiet(text: str) -> None:
    pass


def run(request: BenchRequest, progress: Callable[[str], None] = _quiet) -> BenchReport:
    """The measurements, judged. `progress` is told each step as it starts."""
    compat = load_compat(list(request.compat_dirs))
    options = probe_options(15.0, request.python, False)
    snapshot = collect(options)
    ctx = Context(snapshot, _compat=compat)
    usable = [g for g in ctx.visibility.visible if g.handle_error is None]
    if request.gpus:
        known = {g.index for g in usable}
        missing = [i for i in request.gpus if i not in known]
        if missing:
            have = ", ".join(str(i) for i in sorted(known)) or "none"
            raise UserError(f"--gpu {missing[0]}: no such usable GPU (usable: {have})")
        usable = [g for g in usable if g.index in request.gpus]
    try:
        found = find(options.env, request.python, (TORCH.key, CUPY.key), 15.0)
    except PythonNotFound as exc:
        raise UserError(str(exc)) from None
    progress("measuring the CPU")
    # The CPU figure in the probed interpreter, --python's even where it has neither torch nor
    # CuPy (its numpy then).
    cpu_python = found.python or (options.pythons[0] if options.pythons else None)
    measured = measure_cpu(cpu_python, found.framework, request.quick, request.timeout, options.env)
    measured.framework_version = found.version
    measured.duration = request.duration
    if not usable:
        measured.no_gpu_reason = no_gpu_reason(ctx)
    elif found.python is None:
        measured.no_framework_in = list(found.looked_at)
    else:
        allowed = driver_init_allowed(snapshot.system)
        measure_gpus(measured, usable, request.timeout, options.env, allowed, progress)
    return BenchReport(
        snapshot, findings(measured, compat.gpus), strict=request.strict, run=measured
    )


def no_gpu_reason(ctx: Context) -> str:
    """Why no GPU can be measured here, in the doctor's words."""
    if ctx.gpus and not ctx.visibility.visible:
        return "CUDA_VISIBLE_DEVICES hides every GPU"
    if ctx.has_gpu is False or (ctx.has_gpu is None and not ctx.gpus):
        return "this machine has no NVIDIA GPU"
    if not ctx.nvml_ok:
        return "the NVIDIA driver does not answer (`gpucheck doctor` says why)"
    return "no usable GPU (`gpucheck doctor` says why)"
