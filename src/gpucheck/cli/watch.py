"""`gpucheck watch`: sample the GPUs periodically, for a person (a live view on a terminal) and
for a log (CSV or JSON lines with nvidia-smi's field names, appended and flushed per sample),
with a summary at the end or from a saved log."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Annotated, NoReturn

import typer

from gpucheck.cli import completion
from gpucheck.cli.common import OutputError, UserError, quiet_stdout, read_input
from gpucheck.watch_log import LogError, Sample, csv_rows, header, jsonl_rows, parse_fields

FORMATS = ("csv", "jsonl")
LOG_LIMIT = 1 << 30  # bytes of a log --from reads: far above a week of 1 s samples of 8 GPUs


def watch(
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            "-i",
            metavar="SECONDS",
            min=0.05,
            max=86400,
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
            autocompletion=completion.watch_fields,
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="csv|jsonl",
            help="Log format (default: csv; from -o FILE's extension).",
            autocompletion=completion.watch_formats,
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Append samples to FILE (flushed every sample)."
        ),
    ] = None,
    rotate: Annotated[
        str | None,
        typer.Option(
            "--rotate",
            metavar="SIZE",
            help="With -o: past SIZE (100M, 1G), move FILE to FILE.1 and start anew.",
        ),
    ] = None,
    summary: Annotated[
        bool,
        typer.Option("--summary", help="At the end: per GPU min/mean/max, throttling, idle time."),
    ] = False,
    from_log: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="FILE",
            help="Summarise a saved log (CSV or JSON lines; nvidia-smi's CSV too).",
        ),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu",
            "-g",
            metavar="LIST",
            help="Only these GPUs: indices or UUID prefixes, comma-separated (as nvidia-smi -i).",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            min=0.5,
            max=600,
            help="Seconds one sample may take beyond the interval.",
        ),
    ] = 5.0,
) -> None:
    """Sample the GPUs: a live view on a terminal, CSV/JSON lines for logs, a summary at the end."""
    if fmt is not None and fmt not in FORMATS:
        raise UserError(f"--format {fmt}: use csv or jsonl")
    if from_log is not None:
        given = [
            name
            for name, value in (
                ("--count", count),
                ("--duration", duration),
                ("--output", output),
                ("--rotate", rotate),
                ("--fields", fields),
                ("--gpu", gpu),
            )
            if value is not None
        ]
        if given:
            raise UserError(f"--from reads a saved log: {', '.join(given)} do not apply")
        _summarise_log(from_log)
        return
    if rotate is not None and output is None:
        raise UserError("--rotate goes with --output FILE")
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
        rotate=parse_size(rotate) if rotate is not None else None,
        summary=summary,
        bound=timeout,
        live=sys.stdout.isatty() and fmt is None,
        gpus=[t.strip() for t in gpu.split(",") if t.strip()] if gpu else None,
    )
    run(plan)


@dataclass
class Plan:
    fields: list[str]
    interval: float
    count: int | None
    seconds: float | None
    fmt: str
    output: str | None
    rotate: int | None
    summary: bool
    bound: float
    live: bool
    gpus: list[str] | None = None
    samples: list[Sample] = field(default_factory=list)


def parse_duration(text: str) -> float:
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(s|m|h)?\s*", text)
    if not match:
        raise UserError(f"--duration {text}: use seconds, or a number with s, m or h (5m)")
    value = float(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2) or "s"]
    if value <= 0:
        raise UserError(f"--duration {text}: must be more than 0")
    return value


def parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*([0-9]+)\s*([KMG]i?B?)?\s*", text, re.IGNORECASE)
    if not match:
        raise UserError(f"--rotate {text}: use bytes, or a number with K, M or G (100M)")
    unit = (match.group(2) or "").upper()[:1]
    value = int(match.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]
    if value < 4096:
        raise UserError(f"--rotate {text}: at least 4K, or every sample starts a new file")
    return value


def _format_of(output: str | None) -> str:
    if output and output.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    return "csv"


# --- the log file -------------------------------------------------------------------------


class Log:
    """Rows appended to stdout or a file: the CSV header once (not again when appending to a
    log that has it), every sample flushed, rotation past a size."""

    def __init__(self, plan: Plan, stream: IO[str] | None) -> None:
        self.plan = plan
        self.path = Path(plan.output) if plan.output else None
        self.stream = stream
        self.header = header(plan.fields) if plan.fmt == "csv" else ""
        if self.path is not None:
            self.stream = self._open()
        elif self.stream is not None and self.header:
            self._put(self.stream, self.header)

    def _open(self) -> IO[str]:
        assert self.path is not None
        if self.path.is_dir():
            raise UserError(f"--output: {self.path} is a folder")
        if not self.path.parent.is_dir():
            raise UserError(f"--output: folder {self.path.parent} does not exist")
        existing = ""
        try:
            # A regular file's first line only: a device (/dev/stdout, /dev/full) or a FIFO
            # has no header to check, and reading one may never end.
            if self.path.is_file():
                with self.path.open("r", encoding="utf-8", errors="replace") as fh:
                    existing = fh.readline(1 << 16)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise UserError(f"--output: cannot read {self.path}: {exc.strerror}") from None
        if existing and self.header and existing != self.header:
            raise UserError(
                f"--output: {self.path} holds other columns ({existing.strip()[:80]}...): "
                "write to another file, or ask for the same --fields"
            )
        if existing and not self.header and not existing.startswith("{"):
            raise UserError(f"--output: {self.path} is not a JSON-lines log: write to another file")
        try:
            stream = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise UserError(f"--output: cannot write {self.path}: {exc.strerror}") from None
        if not existing and self.header:
            self._put(stream, self.header)
        return stream

    def _put(self, stream: IO[str], text: str) -> None:
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            where = self.path or "standard output"
            raise OutputError(f"cannot write samples to {where}: {exc.strerror or exc}") from None

    def write(self, sample: Sample) -> None:
        if self.stream is None:
            return
        fields = self.plan.fields
        rows = csv_rows(sample, fields) if self.plan.fmt == "csv" else jsonl_rows(sample, fields)
        rotate = self.plan.rotate
        full = rotate is not None and self.stream.tell() + len(rows.encode()) > rotate
        if self.path is not None and full:
            self.stream.close()
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            self.stream = self._open()
        self._put(self.stream, rows)

    def close(self) -> None:
        if self.path is not None and self.stream is not None:
            # Every sample was flushed: what is left to fail here has been said already.
            with contextlib.suppress(OSError):
                self.stream.close()


# --- running ------------------------------------------------------------------------------


class _Stop(Exception):
    """Ctrl-C or SIGTERM: end the watch cleanly."""


@contextmanager
def _interruptible() -> Iterator[dict[str, bool]]:
    """Ctrl-C and SIGTERM end the watch, but never in the middle of writing a sample: the
    file keeps whole rows. While `state["writing"]`, the stop waits until the write is done."""
    state = {"writing": False, "pending": False}

    def handler(signum: int, frame: FrameType | None) -> None:
        if state["writing"]:
            state["pending"] = True
            return
        raise _Stop

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield state
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def run(plan: Plan) -> None:
    from gpucheck.probes.run import ProbeOptions, driver_init_allowed
    from gpucheck.probes.system import probe_system
    from gpucheck.probes.watch_session import SelectionError, Session, WatchError

    options = ProbeOptions()
    if not driver_init_allowed(probe_system(options.root, options.env)):
        _fail(
            "the NVIDIA driver is not loaded (no nvidia kernel module); run `gpucheck doctor` "
            "for the fix"
        )
    stdout_data = plan.output is None and not plan.live
    session = Session(plan.fields, plan.interval, plan.bound, gpus=plan.gpus)
    try:
        session.start()
    except WatchError as exc:
        _fail(str(exc))
    except SelectionError as exc:
        raise UserError(str(exc)) from None
    try:
        # Opened once NVML answers: without a driver, no file is created or touched.
        log = Log(plan, sys.stdout if stdout_data else None)
    except BaseException:
        session.stop()
        raise
    started = time.monotonic()
    failed: OutputError | None = None
    live = _Live() if plan.live else None
    try:
        with _interruptible() as state:
            for sample in session.samples():
                state["writing"] = True
                log.write(sample)
                plan.samples.append(sample)
                state["writing"] = False
                if state["pending"]:
                    break
                if live is not None:
                    live.show(sample)
                if plan.count is not None and len(plan.samples) >= plan.count:
                    break
                if plan.seconds is not None and time.monotonic() - started >= plan.seconds:
                    break
    except _Stop:
        pass
    except BrokenPipeError:
        quiet_stdout()  # the reader went away: the samples so far are whole
    except OutputError as exc:
        failed = exc
    finally:
        session.stop()
        log.close()
        if live is not None:
            live.close()
    if failed is not None:
        raise failed
    if plan.summary and plan.samples:
        from gpucheck.watch_summary import render_text, summarize

        target = sys.stderr if stdout_data else sys.stdout
        target.write(render_text(summarize(plan.samples)))
        target.flush()


class _Live:
    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        from gpucheck.report.watch_live import LiveView

        self.view = LiveView()
        self.live = Live(console=Console(), auto_refresh=False, transient=False)
        self.live.start()

    def show(self, sample: Sample) -> None:
        self.view.add(sample)
        self.live.update(self.view.table(sample), refresh=True)

    def close(self) -> None:
        self.live.stop()


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"gpucheck: watch: {message}\n")
    raise typer.Exit(1)


def _summarise_log(path: str) -> None:
    from gpucheck.watch_log import read_log
    from gpucheck.watch_summary import render_text, summarize

    data = read_input(path, LOG_LIMIT, "is over 1 GiB: summarise a part of it")
    try:
        samples = read_log(data.decode("utf-8", "replace"))
    except LogError as exc:
        raise UserError(f"--from: {path}: {exc}") from None
    if not samples:
        raise UserError(f"--from: {path}: no samples in it")
    sys.stdout.write(render_text(summarize(samples)))
