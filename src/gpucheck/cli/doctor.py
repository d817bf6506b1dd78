"""`gpucheck doctor`: probe (or read a saved snapshot), run the checks, render the report, and
exit with the report's code."""

# No `from __future__ import annotations` here: typer reads the options from the annotations,
# and string annotations it must compile and evaluate (get_type_hints) on every start-up, ~5 ms
# of a `doctor --from`; evaluated once, as the module runs, they are objects it takes as they are.
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from concurrent.futures import Future

    from gpucheck.model.snapshot import Snapshot

from gpucheck.cli import completion
from gpucheck.cli.common import (
    CompatDirOpt,
    DeepOpt,
    EvidenceOpt,
    HostIdOpt,
    JsonFormatOpt,
    OutputOpt,
    PythonsOpt,
    RedactOpt,
    StrictOpt,
    TimeoutOpt,
    UserError,
    format_option,
    load_compat,
    number_option,
    probe_options,
    python_inputs,
    read_snapshot,
    refuse_input_as_output,
    write_output,
)
from gpucheck.exit_status import ExitStatus
from gpucheck.inputs import MIN_GPUS, parse_compute_capability, parse_job_pids, parse_size

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "ready: nothing failed (with --strict: nothing warned either)",
    ExitStatus.FAILED: "a check failed (or warned, with --strict)",
    ExitStatus.UNKNOWN: "could not tell: --python names an interpreter whose probe did not run",
}


def _selector(flag: str, does: str) -> Any:
    """--only and --skip: check ids or their prefixes, completed from the check list."""
    return typer.Option(
        flag,
        metavar="ID",
        help=f"{does} (id or prefix, repeatable).",
        autocompletion=completion.check_selectors,
    )


def doctor(
    json_out: JsonFormatOpt = False,
    fmt: Annotated[
        str, format_option("text, json, junit or prometheus.", completion.doctor_formats)
    ] = "text",
    output: OutputOpt = None,
    verbose: EvidenceOpt = False,
    strict: StrictOpt = False,
    from_files: Annotated[
        list[str] | None,
        typer.Option(
            "--from",
            metavar="FILE",
            help="Diagnose a saved snapshot (from `gpucheck snapshot`, or - for stdin).",
        ),
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
    if json_out and fmt not in ("text", "json"):
        raise UserError(f"--json and --format {fmt} ask for two formats: give one")
    if len(from_files or []) > 1:
        raise UserError("--from takes one snapshot (for many reports: gpucheck fleet)")
    from_file = from_files[0] if from_files else None
    refuse_input_as_output(output, [from_file, *python_inputs(python)])
    if from_file is not None and (deep or python or host_id):
        raise UserError(
            "--from diagnoses a saved snapshot; --deep, --python and --host-id probe this one"
        )
    probing = None if from_file is not None else _start_probes(timeout, python, deep, host_id)
    try:
        # Checks, compat data and formats load while the probes run.
        from gpucheck.checks.context import Requirements
        from gpucheck.checks.registry import SelectionError, held, select
        from gpucheck.checks.renamed import renamed_notices
        from gpucheck.report.formats import FORMATS

        fmt = "json" if json_out else fmt
        if fmt not in FORMATS:
            raise UserError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
        requirements = Requirements(
            min_gpus=min_gpus,
            min_memory_bytes=parse_size(min_memory, "--min-memory", require_unit=True)
            if min_memory is not None
            else None,
            min_memory_text=min_memory,
            min_compute_capability=(
                parse_compute_capability(min_cc) if min_cc is not None else None
            ),
            job_pids=parse_job_pids(job_pids) if job_pids is not None else None,
        )

        # A saved snapshot is read before the checks load (it is cheap), so that the framework
        # checks with nothing to judge in it are not imported; an unreadable one is reported
        # where it always was, after the options' errors.
        saved: Snapshot | UserError | None = None
        if from_file is not None and not only and not redact:
            try:
                saved = read_snapshot(from_file)
            except UserError as exc:
                saved = exc
        holds = held(saved) if saved is not None and not isinstance(saved, UserError) else None
        # Only the check modules of the sections --only can match (all without it).
        try:
            selected = select(only or [], skip or [], holds)
        except SelectionError as exc:
            raise UserError(str(exc)) from None
        # A check id from before report schema 4.0 still selects its check; say its new name.
        for notice in renamed_notices([*(only or []), *(skip or [])]):
            print(f"gpucheck: {notice}", file=sys.stderr)
        # While the probes run (this thread would only wait), what the checks would load on
        # first use: every compat topic and packaging's requirement parser, ~20 ms that
        # would otherwise come after the last probe.
        compat = load_compat(compat_dir, every_topic=probing is not None)
        if probing is not None:
            from gpucheck.checks.frameworks.packages import load_parser

            load_parser()
    except BaseException:
        if probing is not None:
            _stop_probes(probing)
        raise
    if probing is not None:
        snapshot = probing.result()
    elif isinstance(saved, UserError):
        raise saved
    elif saved is not None:
        snapshot = saved
    else:
        assert from_file is not None
        snapshot = read_snapshot(from_file)
    from gpucheck.api import diagnose
    from gpucheck.compat import CompatError

    try:
        report = diagnose(
            snapshot,
            requirements,
            selected,
            compat,
            only=bool(only),
            strict=strict,
            from_file=from_file,
            redact=redact,
        )
    except CompatError as exc:
        raise UserError(f"compat data: {exc}") from None
    write_output(output, lambda stream: FORMATS[fmt](report, stream, verbose))
    raise typer.Exit(report.exit_code)


def _start_probes(
    timeout: float, python: list[str] | None, deep: bool, host_id: str | None
) -> "Future[Snapshot]":
    """Probing this machine, in a thread, from the first moment the options allow."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from gpucheck.probes.run import FIRST_WAVE_WAIT, collect

    options = probe_options(timeout, python, deep, host_id)  # a bad --python: exit 2 first
    options.started = threading.Event()
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(collect, options)
    pool.shutdown(wait=False)
    # The checks import while the probe children run, not while their threads start them
    # (on two cores that took the first child from 25 ms to 50 ms after this point). collect
    # always sets it; the bound guards against one stuck before its children (a hung /proc).
    options.started.wait(FIRST_WAVE_WAIT * 5)
    return future


def _stop_probes(probing: "Future[Snapshot]") -> None:
    """A usage error found while probing: end the probe children, the answer is not needed."""
    from gpucheck.child.run import kill_all

    probing.cancel()
    kill_all()
