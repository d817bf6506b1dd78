"""`gpucheck bench`: measure matmul throughput per dtype, memory and host-link bandwidth, and
GPU-to-GPU copies with torch or CuPy from the probed environment; compare each figure with the
GPU's spec and the CPU."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated

import typer

from gpucheck.bench.flow import BenchRequest, run
from gpucheck.bench.report import FORMATS
from gpucheck.cli.common import (
    CompatDirOpt,
    JsonOpt,
    OutputOpt,
    PythonOpt,
    StrictOpt,
    choose_format,
    format_option,
    gpu_option,
    number_option,
    one_python,
    python_inputs,
    refuse_input_as_output,
    timeout_option,
    write_output,
)
from gpucheck.exit_status import ExitStatus

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "every figure as expected (warnings allowed unless --strict)",
    ExitStatus.FAILED: (
        "a wrong result, a run that did not finish, or no GPU to measure (the CPU figure is "
        "still shown)"
    ),
}


def bench(
    quick: Annotated[
        bool, typer.Option("--quick", help="Smaller sizes, fewer samples: a few seconds a GPU.")
    ] = False,
    gpu: Annotated[
        list[int] | None,
        gpu_option("INDEX", "Measure this GPU only (repeatable)."),
    ] = None,
    json_out: JsonOpt = False,
    fmt: Annotated[str, format_option("text, json or html.")] = "text",
    output: OutputOpt = None,
    strict: StrictOpt = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show check ids.")] = False,
    timeout: Annotated[
        float,
        timeout_option(5, 3600, "Time bound of each GPU's run."),
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
    pythons: PythonOpt = None,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Measure how fast this machine's GPUs really are, next to their spec and the CPU."""
    python = one_python(pythons)

    chosen = choose_format(FORMATS, fmt, json_out)
    refuse_input_as_output(output, python_inputs(python))
    request = BenchRequest(
        quick=quick,
        gpus=tuple(gpu or ()),
        strict=strict,
        timeout=timeout,
        duration=duration,
        python=python,
        compat_dirs=tuple(compat_dir or ()),
    )
    report = run(request, _progress())
    write_output(output, lambda s: chosen.write(report, s, verbose))
    raise typer.Exit(report.exit_code)


def _progress() -> Callable[[str], None]:
    def quiet(text: str) -> None:
        pass

    def show(text: str) -> None:
        sys.stderr.write(f"gpucheck bench: {text}...\n")

    # Progress only on a terminal: a pipe or a CI log gets the report alone.
    return show if sys.stderr.isatty() else quiet
