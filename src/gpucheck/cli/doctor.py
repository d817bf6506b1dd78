"""`gpucheck doctor`: probe (or read a saved snapshot), run the checks, render the report, and
exit with the report's code."""

# No `from __future__ import annotations` here: typer reads the options from the annotations,
# and string annotations it must compile and evaluate (get_type_hints) on every start-up;
# evaluated once, as the module runs, they are objects it takes as they are.
from typing import Annotated, Any

import typer

from gpucheck.cli.common import (
    CompatDirOpt,
    DeepOpt,
    EvidenceOpt,
    HostIdOpt,
    JsonOpt,
    OutputOpt,
    PythonsOpt,
    RedactOpt,
    StrictOpt,
    TimeoutOpt,
    UserError,
    choose_format,
    format_option,
    from_option,
    number_option,
    python_inputs,
    refuse_input_as_output,
    write_output,
)
from gpucheck.cli.completion import Choices, matching
from gpucheck.diagnosis.flow import run
from gpucheck.diagnosis.request import Caller, DoctorRequest
from gpucheck.exit_status import ExitStatus
from gpucheck.inputs import MIN_GPUS
from gpucheck.report.formats import FORMATS

# Shell completion of this command's option values (completion.py shares the helpers).


def doctor_formats(incomplete: str) -> Choices:
    about = {
        "text": "the report for a person",
        "json": "the report as JSON (gpucheck schema report)",
        "junit": "JUnit XML for CI test views",
        "prometheus": "metrics for node_exporter's textfile collector",
        "html": "one self-contained page to mail or attach (no scripts, nothing fetched)",
    }
    return matching(((name, about.get(name, "")) for name in FORMATS), incomplete)


def check_selectors(incomplete: str) -> Choices:
    """--only/--skip: every check id, every section, and each id prefix ("gpus.",
    "frameworks.torch.")."""
    # Not at the top: the checks load at the diagnosis flow's seam, while the probes run
    # (diagnosis/flow.py); a module the doctor imports first would load them before.
    from gpucheck.checks.registry import all_checks

    checks = all_checks()
    sections = {c.section.value: f"every {c.section.label} check" for c in checks}
    prefixes = {
        prefix: f"checks named {prefix}*"
        for c in checks
        for prefix in (".".join(c.id.split(".")[: n + 1]) + "." for n in range(c.id.count(".")))
    }
    ids = {c.id: c.summary for c in checks}
    return matching([*sections.items(), *prefixes.items(), *ids.items()], incomplete)


# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "ready: nothing failed (with --strict: nothing warned either)",
    ExitStatus.FAILED: "a check failed (or warned, with --strict), or nothing was judged",
    ExitStatus.UNKNOWN: "could not tell: --python names an interpreter whose probe did not run",
}


def _selector(flag: str, does: str) -> Any:
    """--only and --skip: check ids or their prefixes, completed from the check list."""
    return typer.Option(
        flag,
        metavar="ID",
        help=f"{does} (id or prefix, repeatable).",
        autocompletion=check_selectors,
    )


def doctor(
    json_out: JsonOpt = False,
    fmt: Annotated[
        str, format_option("text, json, junit, prometheus or html.", doctor_formats)
    ] = "text",
    output: OutputOpt = None,
    verbose: EvidenceOpt = False,
    strict: StrictOpt = False,
    from_files: Annotated[
        list[str] | None,
        from_option("Diagnose a saved snapshot (from `gpucheck snapshot`, or - for stdin)."),
    ] = None,
    min_gpus: Annotated[
        int | None,
        number_option(
            "--min-gpus", low=MIN_GPUS[0], metavar="N", help="Require at least N usable GPUs."
        ),
    ] = None,
    min_memory: Annotated[
        str | None,
        typer.Option(
            "--min-memory",
            metavar="SIZE",
            help="Require this much memory on every GPU: 40G and 40GiB are binary (as nvidia-smi "
            "counts), 80GB decimal (as datasheets count).",
        ),
    ] = None,
    min_cc: Annotated[
        str | None,
        typer.Option(
            "--min-compute-capability",
            metavar="X.Y",
            help="Require this compute capability on every GPU (8.0).",
        ),
    ] = None,
    only: Annotated[list[str] | None, _selector("--only", "Run only these checks")] = None,
    skip: Annotated[list[str] | None, _selector("--skip", "Skip these checks")] = None,
    job_pids: Annotated[
        str | None,
        typer.Option(
            "--job-pids",
            metavar="PIDS",
            help="Scheduler health profile: the PIDs of running jobs (e.g. from `scontrol "
            'listpids`; "" for none). GPU memory and exclusive-process GPUs they hold are '
            "normal; any other process holding GPU memory is leaked.",
        ),
    ] = None,
    timeout: TimeoutOpt = 15.0,
    compat_dir: CompatDirOpt = None,
    deep: DeepOpt = False,
    python: PythonsOpt = None,
    host_id: HostIdOpt = None,
    redact: RedactOpt = False,
) -> None:
    """Check the GPU, driver, CUDA, cuDNN and the frameworks; print problems with their fixes."""
    chosen = choose_format(FORMATS, fmt, json_out)
    if len(from_files or []) > 1:
        raise UserError("--from takes one snapshot (for many reports: gpucheck fleet)")
    from_file = from_files[0] if from_files else None
    refuse_input_as_output(output, [from_file, *python_inputs(python)])
    request = DoctorRequest(
        from_file=from_file,
        pythons=tuple(python or ()),
        deep=deep,
        host_id=host_id,
        timeout=timeout,
        only=tuple(only or ()),
        skip=tuple(skip or ()),
        strict=strict,
        min_gpus=min_gpus,
        min_memory=min_memory,
        min_compute_capability=min_cc,
        job_pids=job_pids,
        compat_dirs=tuple(compat_dir or ()),
        redact=redact,
        caller=Caller.COMMAND_LINE,
    )
    report = run(request)
    write_output(output, lambda stream: chosen.write(report, stream, verbose))
    raise typer.Exit(report.exit_code)
