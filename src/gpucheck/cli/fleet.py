"""`gpucheck fleet`: merge many saved reports into one view of the fleet."""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
from typing import Annotated

import typer

from gpucheck.cli.common import (
    CompatDirOpt,
    JsonOpt,
    OutputError,
    OutputOpt,
    UserError,
    choose_format,
    format_option,
    input_as_output,
    load_compat,
    write_output,
)
from gpucheck.cli.completion import Choices, matching
from gpucheck.exit_status import ExitStatus
from gpucheck.fleet.reading import Settings, read_all
from gpucheck.fleet.rendering import FORMATS, build
from gpucheck.fleet.sources import OutputIsInput, items
from gpucheck.fleet.summary import FleetBuilder

# Shell completion of this command's option values (completion.py shares the helpers).


def fleet_formats(incomplete: str) -> Choices:
    about = {
        "table": "for a person",
        "json": "gpucheck schema fleet",
        "csv": "the inventory",
        "html": "a page with charts",
    }
    return matching(about.items(), incomplete)


PROGRESS_EVERY = 500  # reports between progress updates on a terminal


# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "every host ready and every report read",
    ExitStatus.FAILED: "a host not ready or a report unreadable (named in the output)",
}


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
    json_out: JsonOpt = False,
    fmt: Annotated[str, format_option("table, json, csv or html.", fleet_formats)] = "table",
    output: OutputOpt = None,
    recheck: Annotated[
        bool,
        typer.Option(
            "--recheck",
            help="Diagnose each report's snapshot again with today's checks and compat data, "
            "and the requirements it recorded (--min-gpus, ...).",
        ),
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            max=1024,
            metavar="N",
            help="Worker processes (default: cores, at most 8).",
        ),
    ] = None,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Summarise many saved reports: inventory, problems across hosts, versions, GPUs to act on."""
    chosen = choose_format(FORMATS, fmt, json_out)
    if reports.count("-") > 1:
        raise UserError("- (stdin) can be given once")
    avoid = _output_file(output)
    # Each missing path is read as one bad report; with nothing else read, it is an input error.
    missing = [r for r in reports if r != "-" and not os.path.exists(r)]
    load_compat(compat_dir)  # bad --compat-dir: one usage error now, not one per report
    settings = Settings(recheck=recheck, compat_dirs=tuple(compat_dir or ()))
    builder = FleetBuilder()
    try:
        progress = sys.stderr is not None and sys.stderr.isatty()
        shown = 0
        try:
            for blob in read_all(items(reports, avoid=avoid), settings, jobs):
                builder.add_folded(blob)
                if progress and builder.reports - shown >= PROGRESS_EVERY:
                    shown = builder.reports
                    sys.stderr.write(f"\rgpucheck: read {shown} reports")
                    sys.stderr.flush()
        except OutputIsInput as exc:
            raise UserError(input_as_output(str(output), exc.path)) from None
        if shown:
            sys.stderr.write("\r\x1b[K")
        if builder.reports == len(missing):  # nothing read but the missing paths' failures
            raise UserError(_nothing_found(reports, missing))
        summary = build(builder, chosen.name)
        write_output(output, lambda stream: chosen.write(summary, stream))
    except sqlite3.Error as exc:  # the hosts' store, a file in $TMPDIR: full, or unwritable
        raise OutputError(
            f"fleet: the temporary store in {tempfile.gettempdir()} failed ({exc}): set TMPDIR "
            "to a folder with room"
        ) from None
    finally:
        builder.close()
    raise typer.Exit(summary.exit_code)


def _nothing_found(reports: list[str], missing: list[str]) -> str:
    """Why no report was read: the paths that do not exist, and the ones holding none."""
    found = [r for r in reports if r not in missing]
    empty = f"no reports found in {' '.join(found)} (looked for *.json files)" if found else ""
    lost = f"no such file or folder: {' '.join(missing)}" if missing else ""
    return "; ".join(part for part in (empty, lost) if part)


def _output_file(output: str | None) -> tuple[int, int] | None:
    """The output file's (device, inode), where it exists: it must not be read as an input.
    (A file the user could not write was refused already, by OutputOpt's check.)"""
    if output is None or output == "-":
        return None
    try:
        st = os.stat(output)
    except OSError:
        return None  # a new file (or one output_target names the problem of)
    return st.st_dev, st.st_ino
