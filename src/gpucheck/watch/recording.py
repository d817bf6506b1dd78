"""Recording a watch: the plan the command line made, the log file (a CSV header once,
every sample flushed, rotation past a size), the NVML session's samples, the live view, and a
clean stop on Ctrl-C or SIGTERM that never cuts a row."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

from gpucheck.inputs import UserError
from gpucheck.outputs import OutputError, quiet_stdout
from gpucheck.watch.log import Sample, csv_rows, header, jsonl_rows


class WatchUnavailable(Exception):
    """The GPUs cannot be watched here (no driver, NVML failing): exit 1 with the reason."""


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
    from gpucheck.watch.session import SelectionError, Session, WatchError

    options = ProbeOptions()
    if not driver_init_allowed(probe_system(options.root, options.env)):
        raise WatchUnavailable(
            "the NVIDIA driver is not loaded (no nvidia kernel module); run `gpucheck doctor` "
            "for the fix"
        )
    stdout_data = plan.output is None and not plan.live
    session = Session(plan.fields, plan.interval, plan.bound, gpus=plan.gpus)
    try:
        session.start()
    except WatchError as exc:
        raise WatchUnavailable(str(exc)) from None
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
        from gpucheck.watch.summary import render_text, summarize

        target = sys.stderr if stdout_data else sys.stdout
        target.write(render_text(summarize(plan.samples)))
        target.flush()


class _Live:
    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        from gpucheck.watch.live import LiveView

        self.view = LiveView()
        self.live = Live(console=Console(), auto_refresh=False, transient=False)
        self.live.start()

    def show(self, sample: Sample) -> None:
        self.view.add(sample)
        self.live.update(self.view.table(sample), refresh=True)

    def close(self) -> None:
        self.live.stop()
