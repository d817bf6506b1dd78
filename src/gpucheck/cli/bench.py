"""`gpucheck bench`: measure matmul throughput per dtype, memory and host-link bandwidth, and
GPU-to-GPU copies with torch or CuPy from the probed environment; compare each figure with the
GPU's spec and the CPU."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated

import typer

from gpucheck.cli.common import (
    CompatDirOpt,
    JsonOpt,
    OutputOpt,
    PythonOpt,
    StrictOpt,
    UserError,
    choose_format,
    format_option,
    load_compat,
    number_option,
    probe_options,
    write_output,
)
from gpucheck.model.frameworks import CUPY, TORCH


def bench(
    quick: Annotated[
        bool, typer.Option("--quick", help="Smaller sizes, fewer samples: a few seconds a GPU.")
    ] = False,
    gpu: Annotated[
        list[int] | None,
        typer.Option("--gpu", metavar="INDEX", help="Measure this GPU only (repeatable)."),
    ] = None,
    json_out: JsonOpt = False,
    fmt: Annotated[str, format_option("text or json.")] = "text",
    output: OutputOpt = None,
    strict: StrictOpt = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show check ids.")] = False,
    timeout: Annotated[
        float,
        number_option(
            "--timeout", low=5, high=3600, metavar="SECONDS", help="Time bound of each GPU's run."
        ),
    ] = 180.0,
    duration: Annotated[
        float,
        number_option(
            "--duration",
            low=0,
            high=3600,
            metavar="SECONDS",
            help="Also run the fastest matmul back to back this long per GPU, with its clock "
            "and power over time (throttling shows as a drop; 0: off).",
        ),
    ] = 0.0,
    python: PythonOpt = None,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Measure how fast this machine's GPUs really are, next to their spec and the CPU.

    Exit codes: 0 every figure as expected (warnings allowed unless --strict), 1 a wrong result,
    a run that did not finish, or no GPU to measure (the CPU figure is still shown), 2 usage
    error.
    """
    from gpucheck.bench.probe import measure_cpu, measure_gpus
    from gpucheck.bench.report import FORMATS, BenchReport
    from gpucheck.bench.verdicts import findings
    from gpucheck.checks.context import Context
    from gpucheck.probes.framework_python import find
    from gpucheck.probes.frameworks import PythonNotFound
    from gpucheck.probes.run import collect, driver_init_allowed

    chosen = choose_format(FORMATS, fmt, json_out)
    compat = load_compat(compat_dir)
    options = probe_options(15.0, python, False)
    snapshot = collect(options)
    ctx = Context(snapshot, _compat=compat)
    usable = [g for g in ctx.visibility.visible if g.handle_error is None]
    if gpu:
        known = {g.index for g in usable}
        missing = [i for i in gpu if i not in known]
        if missing:
            have = ", ".join(str(i) for i in sorted(known)) or "none"
            raise UserError(f"--gpu {missing[0]}: no such usable GPU (usable: {have})")
        usable = [g for g in usable if g.index in gpu]
    try:
        found = find(options.env, python, (TORCH.key, CUPY.key), 15.0)
    except PythonNotFound as exc:
        raise UserError(str(exc)) from None
    progress = _progress()
    progress("measuring the CPU")
    # The CPU figure in the probed interpreter, --python's even where it has neither torch nor
    # CuPy (its numpy then).
    cpu_python = found.python or (options.pythons[0] if options.pythons else None)
    run = measure_cpu(cpu_python, found.framework, quick, timeout, options.env)
    run.framework_version = found.version
    run.duration = duration
    if not usable:
        run.no_gpu_reason = _no_gpu_reason(ctx)
    elif found.python is None:
        run.no_gpu_reason = (
            f"no torch or CuPy in {', '.join(found.looked_at)} to run the measurements: "
            "install one there (`pip install torch`), or pass --python PATH of an environment "
            "that has it"
        )
    else:
        measure_gpus(
            run, usable, timeout, options.env, driver_init_allowed(snapshot.system), progress
        )
    report = BenchReport(snapshot, findings(run, compat.gpus), strict=strict, run=run)
    write_output(output, lambda s: chosen.write(report, s, verbose))
    raise typer.Exit(report.exit_code)


def _no_gpu_reason(ctx: object) -> str:
    from gpucheck.checks.context import Context

    assert isinstance(ctx, Context)
    if ctx.gpus and not ctx.visibility.visible:
        return "CUDA_VISIBLE_DEVICES hides every GPU"
    if ctx.has_gpu is False or (ctx.has_gpu is None and not ctx.gpus):
        return "this machine has no NVIDIA GPU"
    if not ctx.nvml_ok:
        return "the NVIDIA driver does not answer (`gpucheck doctor` says why)"
    return "no usable GPU (`gpucheck doctor` says why)"


def _progress() -> Callable[[str], None]:
    def quiet(text: str) -> None:
        pass

    def show(text: str) -> None:
        sys.stderr.write(f"gpucheck bench: {text}...\n")

    # Progress only on a terminal: a pipe or a CI log gets the report alone.
    return show if sys.stderr.isatty() else quiet
