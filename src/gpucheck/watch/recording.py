"""Recording a watch: the plan the command line made, the log file (a CSV header once,
every sample flushed in one write, rotation past a size keeping N generations as logrotate
does), the NVML session's samples, the live view, the summary folded as samples come, and a
clean stop on Ctrl-C or SIGTERM that never cuts a row."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING

from gpucheck.exit_status import ExitStatus
from gpucheck.inputs import UserError
from gpucheck.model.plural import counted
from gpucheck.outputs import OutputError, quiet_stdout
from gpucheck.watch.log import CsvRows, RawSample, Sample, header, jsonl_rows, value_fields

if TYPE_CHECKING:
    from gpucheck.watch.session import Session


class WatchUnavailable(Exception):
    """The GPUs cannot be watched here: exit 1 with the reason (no GPU, NVML failing), or 5
    (could not tell) where GPUs are on the PCI bus but the driver is not loaded to ask."""

    def __init__(self, message: str, status: ExitStatus = ExitStatus.FAILED) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Plan:
    fields: list[str]
    interval: float
    count: int | None
    seconds: float | None
    fmt: str
    output: str | None
    rotate: int | None
    keep: int  # with rotate: FILE.1 (newest) ... FILE.keep (oldest)
    summary: bool
    bound: float
    live: bool
    gpus: list[str] | None = None


# --- the log file -------------------------------------------------------------------------


class Log:
    """Rows appended to stdout or a file: the CSV header once (not again when appending to a
    log that has it), every sample in one write and flushed, rotation past a size."""

    def __init__(self, plan: Plan, stream: IO[str] | None) -> None:
        self.plan = plan
        self.path = Path(plan.output) if plan.output else None
        self.stream = stream
        self.header = header(plan.fields) if plan.fmt == "csv" else ""
        self.csv_rows = CsvRows(plan.fields)
        self.names = value_fields(plan.fields)
        self.size = 0  # bytes in the file, for rotation
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
        self.size = stream.tell()
        if not existing and self.header:
            self._put(stream, self.header)
            self.size += len(self.header.encode())
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

    def write(self, raw: RawSample) -> None:
        if self.stream is None:
            return
        if self.plan.fmt != "csv":
            data = jsonl_rows(raw.sample(self.names), self.plan.fields).encode()
        elif raw.csv is not None:
            data = raw.csv  # the child's text, written as it came
        else:
            data = self.csv_rows(raw.time, raw.gpus).encode()
        rotate = self.plan.rotate
        if rotate is not None and self.path is not None:
            if self.size + len(data) > rotate:
                self._rotate()
            self.size += len(data)
        self._put_bytes(self.stream, data)

    def _put_bytes(self, stream: IO[str], data: bytes) -> None:
        """One write per sample, straight to the file descriptor (the text layer holds nothing:
        every write through it is flushed)."""
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):  # not a file (an embedding's stream)
            self._put(stream, data.decode("utf-8", "replace"))
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except BrokenPipeError:
            raise
        except OSError as exc:
            where = self.path or "standard output"
            raise OutputError(f"cannot write samples to {where}: {exc.strerror or exc}") from None

    def _rotate(self) -> None:
        """FILE.1 becomes FILE.2 ... up to FILE.keep (the oldest, which the move replaces),
        FILE becomes FILE.1, and a new FILE starts with its header."""
        assert self.path is not None and self.stream is not None
        self.stream.close()
        name = self.path.name
        try:
            for n in range(self.plan.keep - 1, 0, -1):
                older = self.path.with_name(f"{name}.{n}")
                if older.exists():
                    os.replace(older, self.path.with_name(f"{name}.{n + 1}"))
            os.replace(self.path, self.path.with_name(f"{name}.1"))
        except OSError as exc:
            raise OutputError(f"cannot rotate {self.path}: {exc.strerror or exc}") from None
        self.stream = self._open()

    def fileno(self) -> int:
        assert self.stream is not None
        self.stream.flush()
        return self.stream.fileno()

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
    system = probe_system(options.root, options.env)
    if not driver_init_allowed(system):
        if not system.pci_gpus and system.pci_scanned:
            raise WatchUnavailable("this machine has no NVIDIA GPU (none on the PCI bus)")
        on_bus = len(system.pci_gpus)
        seen = f"{counted(on_bus, 'NVIDIA GPU')} on the PCI bus, " if on_bus else ""
        raise WatchUnavailable(
            f"the NVIDIA driver is not loaded ({seen}no nvidia kernel module): nothing to "
            "sample; run `gpucheck doctor` for the fix",
            ExitStatus.UNKNOWN,
        )
    stdout_data = plan.output is None and not plan.live
    csv = plan.fmt == "csv" and (stdout_data or plan.output is not None)
    values = plan.fmt == "jsonl" or plan.summary or plan.live
    session = Session(
        plan.fields,
        plan.interval,
        plan.bound,
        gpus=plan.gpus,
        csv=csv,
        values=values,
        # Nothing needs a sample here: the child writes the log itself (rotation needs this
        # process between two samples, so it keeps the relay).
        direct=csv and not values and plan.rotate is None,
        count=plan.count,
    )
    try:
        session.start()
    except WatchError as exc:
        session.close()
        raise WatchUnavailable(str(exc)) from None
    except SelectionError as exc:
        session.close()
        raise UserError(str(exc)) from None
    except BaseException:
        session.close()
        raise
    try:
        # Opened once NVML answers: without a driver, no file is created or touched.
        log = Log(plan, sys.stdout if stdout_data else None)
    except BaseException:
        session.close()
        raise
    if session.direct:
        _follow(plan, session, log)
        return
    started = time.monotonic()
    failed: OutputError | None = None
    live = _Live() if plan.live else None
    summary = None
    if plan.summary:
        from gpucheck.watch.summary import Summarizer

        summary = Summarizer()
    taken = 0
    try:
        with _interruptible() as state:
            for raw in session.samples():
                state["writing"] = True
                log.write(raw)
                taken += 1
                sample = raw.sample(log.names) if summary is not None or live is not None else None
                if summary is not None and sample is not None:
                    summary.add(sample)
                state["writing"] = False
                if state["pending"]:
                    break
                if live is not None and sample is not None:
                    live.show(sample)
                if plan.count is not None and taken >= plan.count:
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
        session.close()
        log.close()
        if live is not None:
            live.close()
    if failed is not None:
        raise failed
    if summary is not None and summary.samples:
        from gpucheck.watch.summary import render_text

        target = sys.stderr if stdout_data else sys.stdout
        target.write(render_text(summary.result()))
        target.flush()


def _follow(plan: Plan, session: Session, log: Log) -> None:
    """The child writes the log itself: this process wakes once per interval + --timeout to
    see that its sample count on the page moved (else a call hung: that sample's rows say
    so, and a new child goes on), and ends it between two rows at --count, --duration,
    Ctrl-C or SIGTERM."""
    bound = plan.interval + plan.bound
    started = last_move = time.monotonic()
    taken = seen = 0  # samples of children gone; of this child, at the last look
    failed: OutputError | None = None
    try:
        with _interruptible() as state:
            session.send_log(log.fileno())
            while True:
                now = time.monotonic()
                wait = bound - (now - last_move)
                if plan.seconds is not None:
                    wait = min(wait, plan.seconds - (now - started))
                alive = session.wait(max(0.0, wait))
                if session.write_error is not None:
                    break
                now, written = time.monotonic(), session.written
                if written != seen:
                    seen, last_move = written, now
                if plan.count is not None and taken + written >= plan.count:
                    break
                if plan.seconds is not None and now - started >= plan.seconds:
                    break
                if alive and (now - last_move < bound or session.in_write):
                    continue
                # The child died, or no sample came for interval + --timeout: a hung call.
                raw = session.hung()
                state["writing"] = True
                log.write(raw)
                state["writing"] = False
                taken += written + 1
                if state["pending"] or (plan.count is not None and taken >= plan.count):
                    break
                session.count = None if plan.count is None else plan.count - taken
                session.start()
                session.send_log(log.fileno())
                seen, last_move = 0, time.monotonic()
    except _Stop:
        pass
    except BrokenPipeError:
        quiet_stdout()
    except OutputError as exc:
        failed = exc
    finally:
        session.end()
        session.close()
        log.close()
    if session.write_error is not None:
        number, message = session.write_error
        if number == errno.EPIPE and log.path is None:
            quiet_stdout()  # the reader went away: the samples so far are whole
            return
        where = log.path or "standard output"
        raise OutputError(f"cannot write samples to {where}: {message}")
    if failed is not None:
        raise failed


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
