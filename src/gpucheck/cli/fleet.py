"""`gpucheck fleet`: merge many saved reports into one view of the fleet."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from gpucheck.cli import completion
from gpucheck.cli.common import CompatDirOpt, OutputOpt, UserError, load_compat, write_output

PROGRESS_EVERY = 500  # reports between progress updates on a terminal


def fleet(
    reports: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH...",
            help="doctor --json reports or snapshots: files, folders (every *.json and *.jsonl "
            "under them), or - for JSON lines on stdin.",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="table, json or csv.",
            metavar="FORMAT",
            autocompletion=completion.fleet_formats,
        ),
    ] = "table",
    output: OutputOpt = None,
    recheck: Annotated[
        bool,
        typer.Option(
            "--recheck",
            help="Diagnose each report's snapshot again with today's checks and compat data.",
        ),
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", "-j", min=1, max=1024, metavar="N", help="Worker processes (default: cores)."
        ),
    ] = None,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Summarise many saved reports: inventory, problems across hosts, versions, GPUs to act on.

    Exit codes: 0 every host ready and every report read, 1 a host not ready or a report
    unreadable (named in the output), 2 usage error or no report found.
    """
    from gpucheck.fleet.reading import Settings, items, read_all
    from gpucheck.fleet.rendering import FORMATS
    from gpucheck.fleet.summary import FleetBuilder

    if fmt not in FORMATS:
        raise UserError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if reports.count("-") > 1:
        raise UserError("- (stdin) can be given once")
    load_compat(compat_dir)  # bad --compat-dir: one usage error now, not one per report
    settings = Settings(recheck=recheck, compat_dirs=tuple(compat_dir or ()))
    builder = FleetBuilder()
    progress = sys.stderr.isatty()
    for result in read_all(items(reports), settings, jobs):
        builder.add(result)
        if progress and builder.reports % PROGRESS_EVERY == 0:
            sys.stderr.write(f"\rgpucheck: read {builder.reports} reports")
            sys.stderr.flush()
    if progress and builder.reports >= PROGRESS_EVERY:
        sys.stderr.write("\r\x1b[K")
    if builder.reports == 0:
        raise UserError(f"no reports found in {' '.join(reports)} (looked for *.json files)")
    summary = builder.build()
    write_output(output, lambda stream: FORMATS[fmt](summary, stream))
    raise typer.Exit(summary.exit_code)
