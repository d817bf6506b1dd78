"""`gpucheck watch`: sample the GPUs periodically, for a person (a live view on a terminal) and
for a log (CSV or JSON lines with nvidia-smi's field names, appended and flushed per sample),
with a summary at the end or from a saved log."""

from __future__ import annotations

import io
import math
import sys
from typing import Annotated

import typer

from gpucheck.cli.common import (
    UserError,
    format_option,
    from_option,
    gpu_option,
    number_option,
    output_option,
    refuse_input_as_output,
    timeout_option,
)
from gpucheck.cli.completion import Choices, matching
from gpucheck.exit_status import ExitStatus
from gpucheck.inputs import parse_size, unreadable
from gpucheck.report.text import printable
from gpucheck.watch.html import render_html
from gpucheck.watch.html import summarise as summarise_html
from gpucheck.watch.log import FIELDS, LogError, parse_fields
from gpucheck.watch.reading import Skipped, read_samples
from gpucheck.watch.recording import Plan, WatchUnavailable, run
from gpucheck.watch.summary import render_text, summarize

# Shell completion of this command's option values (completion.py shares the helpers).


def watch_formats(incomplete: str) -> Choices:
    about = {
        "csv": "as nvidia-smi --format=csv writes it",
        "jsonl": "one JSON object a line",
        "html": "with --from: the summary as a page, with charts",
    }
    return matching(about.items(), incomplete)


def watch_fields(incomplete: str) -> Choices:
    """--fields is a comma-separated list: complete its last name, keeping the ones before."""
    done, _, last = incomplete.rpartition(",")
    head = f"{done}," if done else ""
    taken = set(done.split(","))
    return [(head + name, "") for name in FIELDS if name.startswith(last) and name not in taken]


FORMATS = ("csv", "jsonl")
KEEP = 5  # --keep's default: full logs kept besides the one being written


# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "sampled until the count, duration or Ctrl-C",
    ExitStatus.FAILED: "the GPUs cannot be watched here (NVML fails, no GPU)",
    ExitStatus.UNKNOWN: (
        "could not tell: the NVIDIA driver is not loaded while GPUs are on the PCI bus"
    ),
}


def watch(
    interval: Annotated[
        float,
        number_option(
            "--interval",
            "-i",
            low=0.05,
            high=86400,
            metavar="SECONDS",
            help="Seconds between samples.",
        ),
    ] = 1.0,
    count: Annotated[
        int | None, typer.Option("--count", "-c", metavar="N", min=1, help="Stop after N samples.")
    ] = None,
    duration: Annotated[
        str | None,
        typer.Option(
            "--duration", "-d", metavar="TIME", help="Stop after this long: 90, 90s, 5m, 2h."
        ),
    ] = None,
    fields: Annotated[
        str | None,
        typer.Option(
            "--fields",
            metavar="LIST",
            help="nvidia-smi --query-gpu names, comma-separated.",
            autocompletion=watch_fields,
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        format_option(
            "csv or jsonl: the log's format (default: csv; from -o FILE's extension); with "
            "--from, html: the summary as a page with charts.",
            watch_formats,
        ),
    ] = None,
    output: Annotated[
        str | None,
        output_option("Append samples to FILE (flushed every sample).", callback=None),
    ] = None,
    rotate: Annotated[
        str | None,
        typer.Option(
            "--rotate",
            metavar="SIZE",
            help="With -o: past SIZE (100M, 1G; 1G = 1 GiB, 1GB = 10^9 bytes), move FILE to FILE.1 "
            "(FILE.1 to FILE.2, ...) and start anew.",
        ),
    ] = None,
    keep: Annotated[
        int | None,
        typer.Option(
            "--keep",
            metavar="N",
            min=1,
            help=f"With --rotate: keep N full logs, FILE.1 (newest) to FILE.N (oldest); older "
            f"ones are removed [default: {KEEP}].",
        ),
    ] = None,
    summary: Annotated[
        bool,
        typer.Option("--summary", help="At the end: per GPU min/mean/max, throttling, idle time."),
    ] = False,
    from_log: Annotated[
        str | None,
        from_option("Summarise a saved log (CSV or JSON lines; nvidia-smi's CSV too)."),
    ] = None,
    gpu: Annotated[
        str | None,
        gpu_option(
            "LIST",
            "Only these GPUs: indices or UUID prefixes, comma-separated (as nvidia-smi -i).",
            "-g",
        ),
    ] = None,
    timeout: Annotated[
        float,
        timeout_option(0.5, 600, "Seconds one sample may take beyond the interval."),
    ] = 5.0,
) -> None:
    """Sample the GPUs: a live view on a terminal, CSV/JSON lines for logs, a summary at the end."""
    if fmt == "html" and from_log is None:
        raise UserError("--format html goes with --from LOG (a page is written once, at the end)")
    if fmt is not None and fmt not in (*FORMATS, "html"):
        raise UserError(f"--format {fmt}: use csv or jsonl (html with --from)")
    if from_log is not None:
        refuse_input_as_output(output, [from_log])
        given = [
            name
            for name, value in (
                ("--count", count),
                ("--duration", duration),
                ("--output", output),
                ("--rotate", rotate),
                ("--keep", keep),
                ("--fields", fields),
                ("--gpu", gpu),
            )
            if value is not None
        ]
        if given:
            raise UserError(f"--from reads a saved log: {', '.join(given)} do not apply")
        if fmt not in (None, "html"):
            raise UserError(f"--format {fmt} is a log's format: with --from, html or none")
        _summarise_log(from_log, html=fmt == "html")
        return
    if rotate is not None and output is None:
        raise UserError("--rotate goes with --output FILE")
    if keep is not None and rotate is None:
        raise UserError("--keep goes with --rotate SIZE")
    try:
        names = parse_fields(fields)
    except LogError as exc:
        raise UserError(str(exc)) from None

    plan = Plan(
        fields=names,
        interval=interval,
        count=count,
        seconds=parse_duration(duration) if duration is not None else None,
        fmt=fmt or _format_of(output),
        output=output,
        rotate=_rotate_size(rotate) if rotate is not None else None,
        keep=keep if keep is not None else KEEP,
        summary=summary,
        bound=timeout,
        live=sys.stdout.isatty() and fmt is None,
        gpus=[t.strip() for t in gpu.split(",") if t.strip()] if gpu else None,
    )
    try:
        run(plan)
    except WatchUnavailable as exc:
        sys.stderr.write(f"gpucheck: watch: {exc}\n")
        raise typer.Exit(exc.status) from None


def parse_duration(text: str) -> float:
    """Seconds, or a number with s, m or h: the number read as float() reads it, as every number
    option does (.5, 1e3, 1_000), and refused where it is not finite or not above 0."""
    body = text.strip()
    unit = body[-1:] if body[-1:] in ("s", "m", "h") else "s"
    number = body[:-1] if body[-1:] in ("s", "m", "h") else body
    try:
        value = float(number) * {"s": 1, "m": 60, "h": 3600}[unit]
    except ValueError:
        value = math.nan
    # Not a number, or one with no digits (nan, inf): 1e400 has digits, and is too long below.
    if math.isnan(value) or not any(c.isdigit() for c in number):
        raise UserError(f"--duration {text}: use seconds, or a number with s, m or h (5m)")
    if value >= 2**53:  # 1e400 (read as infinity): without --duration, it runs until stopped
        raise UserError(f"--duration {text}: too long (leave it out to watch until stopped)")
    if value <= 0:
        raise UserError(f"--duration {text}: must be more than 0")
    return value


def _rotate_size(text: str) -> int:
    value = parse_size(text, "--rotate")
    if value < 4096:
        raise UserError(f"--rotate {text}: at least 4K, or every sample starts a new file")
    return value


def _format_of(output: str | None) -> str:
    if output and output.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    return "csv"


def _summarise_log(path: str, html: bool = False) -> None:
    """A saved log's summary (`html`: as a page with charts), read as a stream: memory stays
    the same whatever its size."""
    try:
        if path == "-":
            stream = io.TextIOWrapper(sys.stdin.buffer, "utf-8", "replace", newline="")
        else:
            stream = open(path, encoding="utf-8", errors="replace", newline="")  # noqa: SIM115
    except OSError as exc:
        raise UserError(f"--from: {unreadable(path, exc)}") from None
    try:
        with stream:
            skipped = Skipped()
            if html:
                summary, timeline = summarise_html(read_samples(stream, skipped))
            else:
                summary = summarize(read_samples(stream, skipped))
    except LogError as exc:
        raise UserError(f"--from: {path}: {exc}") from None
    except OSError as exc:
        raise UserError(f"--from: {unreadable(path, exc)}") from None
    if not summary.samples:
        raise UserError(f"--from: {path}: no samples in it")
    if html:
        sys.stdout.write(render_html(summary, timeline, "standard input" if path == "-" else path))
        if skipped.count:
            sys.stderr.write("".join(f"gpucheck: {printable(ln)}\n" for ln in skipped.lines()))
        return
    sys.stdout.write(render_text(summary))
    if skipped.count:  # (a value a GPU cannot show, or no number: counted, never averaged)
        sys.stdout.write("".join(printable(line) + "\n" for line in skipped.lines()))
