"""`gpucheck preflight`: run on every rank of a multi-node job (by torchrun, srun, mpirun);
rank 0 prints one verdict for the whole job."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from gpucheck.cli.common import (
    CompatDirOpt,
    JsonOpt,
    PythonOpt,
    StrictOpt,
    choose_format,
    format_option,
    number_option,
    one_python,
    timeout_option,
    write_output,
)
from gpucheck.exit_status import ExitStatus
from gpucheck.inputs import parse_size
from gpucheck.preflight.flow import PreflightRequest, run
from gpucheck.preflight.report import FORMATS
from gpucheck.preflight.verdict import MIN_FRACTION

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "every rank's node is ready, every rank arrived, the all-reduce ran and no "
    "rank is slower than --min-fraction of the median",
    ExitStatus.FAILED: "a rank's doctor failed, a rank never arrived or was lost in the "
    "all-reduce, the sum was wrong, or a rank is a straggler (every rank exits so; with "
    "--exit-for node only the ranks named, or every rank where the verdict names none: a "
    "wrong sum, an all-reduce that did not complete)",
    ExitStatus.UNKNOWN: "could not tell: no torch to join the job with, a rank's doctor could "
    "not tell, or this rank never heard rank 0's verdict",
}


def preflight(
    json_out: JsonOpt = False,
    fmt: Annotated[str, format_option("text, json or junit.")] = "text",
    timeout: Annotated[
        float,
        timeout_option(
            5, 3600, "Time bound of the whole job's preflight: rank 0 answers within it."
        ),
    ] = 120.0,
    probe_timeout: Annotated[
        float,
        number_option(
            "--probe-timeout",
            low=1,
            high=600,
            metavar="SECONDS",
            help="Seconds each doctor probe may take on every node.",
        ),
    ] = 15.0,
    min_fraction: Annotated[
        float,
        number_option(
            "--min-fraction",
            low=0,
            high=1,
            metavar="SHARE",
            help="A rank slower than this share of the median rank's speed is a straggler.",
        ),
    ] = MIN_FRACTION,
    master_addr: Annotated[
        str | None,
        typer.Option(
            "--master-addr",
            metavar="HOST",
            help="Rank 0's address (default: MASTER_ADDR, or the first host of Slurm's node list).",
        ),
    ] = None,
    master_port: Annotated[
        int | None,
        number_option(
            "--master-port",
            low=1,
            high=65535,
            metavar="PORT",
            help="Port of rank 0's store (default: MASTER_PORT, else 29500; under Slurm 29500 + "
            "the job id modulo 1000).",
        ),
    ] = None,
    exit_for: Annotated[
        str,
        typer.Option(
            "--exit-for",
            metavar="job|node",
            help="job: every rank exits with the job's verdict; node: a rank exits 1 only where "
            "the verdict names it (its node's checks, a straggler, lost), 0 where another rank "
            "is the cause, as a Slurm prolog needs (its exit 1 drains the node it runs on); "
            "every rank 1 where none is to blame (a wrong sum, an all-reduce that did not "
            "complete).",
        ),
    ] = "job",
    size: Annotated[
        str,
        typer.Option(
            "--size",
            metavar="SIZE",
            help="What each rank all-reduces (default 16MiB; NCCL reaches its peak bus "
            "bandwidth from about 1GiB).",
        ),
    ] = "16MiB",
    pythons: PythonOpt = None,
    skip: Annotated[
        list[str] | None,
        typer.Option(
            "--skip",
            metavar="CHECK",
            help="Do not run this doctor check on the nodes (an id, a prefix or a section; "
            "repeatable).",
        ),
    ] = None,
    job_pids: Annotated[
        str | None,
        typer.Option(
            "--job-pids",
            metavar="PIDS",
            help="Passed to each node's doctor: the PIDs of running jobs (e.g. from `scontrol "
            'listpids`; "" for none), whose GPU memory and exclusive-process GPUs are normal.',
        ),
    ] = None,
    strict: StrictOpt = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show each rank's time.")
    ] = False,
    compat_dir: CompatDirOpt = None,
) -> None:
    """One verdict for a multi-node job: run on every rank; rank 0 prints it."""
    chosen = choose_format(FORMATS, fmt, json_out)
    request = PreflightRequest(
        timeout=timeout,
        probe_timeout=probe_timeout,
        min_fraction=min_fraction,
        master_addr=master_addr,
        master_port=master_port,
        python=one_python(pythons),
        strict=strict,
        skip=tuple(skip or ()),
        job_pids=job_pids,
        exit_for=exit_for,
        allreduce_bytes=parse_size(size, "--size", require_unit=True),
        compat_dirs=tuple(compat_dir or ()),
    )
    outcome = run(request)
    verdict = outcome.verdict
    if verdict is not None:
        write_output(None, lambda stream: chosen.write(verdict, stream, verbose))
    elif outcome.message:
        rank = outcome.placement.rank
        sys.stderr.write(f"gpucheck preflight (rank {rank}): {outcome.message}\n")
    raise typer.Exit(outcome.exit_code)
