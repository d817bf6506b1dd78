"""The parent's side of preflight's exchange: runs scripts/exchange.py under the interpreter
whose torch joins the job, hands it this rank's report, and reads what it sees as it comes.

Rank 0 always answers: its records are gathered as they arrive, so when the time is up, the
child dies, or the launcher stops this rank (torchrun sends SIGTERM to every worker once one
has failed), the exchange so far is what the verdict is made of.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import msgspec

from gpucheck.child.protocol import STEP_MARK
from gpucheck.child.run import script
from gpucheck.exit_status import ExitStatus
from gpucheck.preflight.records import AllReduce, Exchange, RankReport, RankTime

SCRIPT = script("gpucheck.preflight", "exchange.py")
END_GRACE = 10.0  # seconds after the verdict for rank 0's child to see the others read it


class Lines:
    """The child's stdout records, read by a thread; None once it closed."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.last_step: str | None = None
        self.stderr: list[str] = []
        threading.Thread(target=self._out, args=(proc,), daemon=True).start()
        threading.Thread(target=self._err, args=(proc,), daemon=True).start()

    def _out(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            with contextlib.suppress(ValueError):
                record = json.loads(raw)
                if isinstance(record, dict):
                    self.queue.put(record)
        self.queue.put(None)

    def _err(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if line.startswith(STEP_MARK):
                self.last_step = line[len(STEP_MARK) :]
            elif line:
                self.stderr = [*self.stderr[-20:], line]

    def until(self, deadline: float, stop: threading.Event) -> Iterator[dict[str, Any]]:
        """The records as they come, until the child closes, the deadline or a stop."""
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                record = self.queue.get(timeout=min(left, 0.2))
            except queue.Empty:
                continue
            if record is None:
                return
            yield record


class LauncherStopped(Exception):
    """SIGTERM from the launcher, outside the exchange (which notes it and winds down)."""


STOPPED = "the launcher stopped this rank (SIGTERM): another rank failed (its log names it)"


class Stop:
    """SIGTERM, as the launcher sends it: before the exchange it raises LauncherStopped in
    the main thread (the doctor's wait is cut short); during the exchange it only sets
    `event`, so that what was gathered so far is kept."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.raising = True

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.event.set()
        if self.raising:
            self.raising = False
            raise LauncherStopped


@contextlib.contextmanager
def stopped_by_signal() -> Iterator[Stop]:
    """A Stop that SIGTERM triggers, for as long as preflight runs."""
    stop = Stop()
    try:
        previous = signal.signal(signal.SIGTERM, stop.handle)
    except ValueError:  # not the main thread (the Python API in a worker): no handler
        yield stop
        return
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)


def start(python: str, args: dict[str, Any], report: RankReport, env: dict[str, str]) -> Any:
    proc = subprocess.Popen(
        [python, str(SCRIPT), json.dumps(args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # its own group: ended with it, whatever it started
    )
    assert proc.stdin is not None
    proc.stdin.write(msgspec.json.encode(report) + b"\n")
    proc.stdin.flush()
    return proc


def end(proc: subprocess.Popen[bytes], wait: float = 0.0) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2)


def lead(
    python: str,
    args: dict[str, Any],
    report: RankReport,
    env: dict[str, str],
    exchange: Exchange,
    budget: float,
    decide: Callable[[Exchange], tuple[int, list[int]]],
    stop: threading.Event,
) -> None:
    """Rank 0: fill `exchange` with what the job posts within `budget` seconds, then hand the
    exit code and the ranks named that `decide` gives to the other ranks."""
    deadline = time.monotonic() + budget
    proc = start(python, args, report, env)
    lines = Lines(proc)
    collected = False
    for record in lines.until(deadline, stop):
        collected = record.get("kind") == "collected"
        if collected:
            break
        _take(exchange, record)
    if stop.is_set():
        exchange.stopped = STOPPED
    elif not collected and exchange.error is None:
        exchange.stopped = _why_cut(proc, lines, budget)
    if collected and proc.stdin is not None:
        with contextlib.suppress(OSError):
            code, named = decide(exchange)
            proc.stdin.write(json.dumps({"exit_code": code, "named": named}).encode() + b"\n")
            proc.stdin.flush()
    end(proc, END_GRACE if collected and not stop.is_set() else 0.0)


def follow(
    python: str,
    args: dict[str, Any],
    report: RankReport,
    env: dict[str, str],
    budget: float,
    stop: threading.Event,
) -> tuple[int, bool, str | None]:
    """Another rank: post the report, measure, and return the job's exit code rank 0 sent,
    whether it names this rank, and a one-line message when none came."""
    deadline = time.monotonic() + budget
    proc = start(python, args, report, env)
    lines = Lines(proc)
    for record in lines.until(deadline, stop):
        if record.get("kind") == "verdict":
            end(proc, 2.0)
            named = args["rank"] in (record.get("named") or [])
            return int(record.get("exit_code", ExitStatus.UNKNOWN)), named, None
        if record.get("kind") == "error":
            end(proc)
            return ExitStatus.UNKNOWN, False, str(record.get("message"))
    why = "stopped (SIGTERM)" if stop.is_set() else _why_cut(proc, lines, budget)
    end(proc)
    return ExitStatus.UNKNOWN, False, f"no verdict from rank 0: {why}"


def _take(exchange: Exchange, record: dict[str, Any]) -> None:
    kind = record.get("kind")
    try:
        if kind == "report":
            exchange.reports.append(msgspec.convert(record["report"], RankReport))
        elif kind == "missing":
            exchange.missing = [int(r) for r in record["ranks"]]
            exchange.arrival_timeout = float(record["waited"])
        elif kind == "backend":
            exchange.backend = str(record["backend"])
        elif kind == "allreduce":
            exchange.allreduce = msgspec.convert(
                {k: v for k, v in record.items() if k != "kind"}, AllReduce
            )
        elif kind == "time":
            exchange.times.append(
                msgspec.convert({k: v for k, v in record.items() if k != "kind"}, RankTime)
            )
        elif kind == "survived":
            exchange.survived.append(int(record["rank"]))
        elif kind == "collective-error":
            exchange.collective_error = str(record.get("message"))
        elif kind == "error":
            exchange.error = f"{record.get('what')}: {record.get('message')}"
    except (KeyError, TypeError, ValueError, msgspec.ValidationError):
        pass  # a record that does not read is left out, never a crash


def _why_cut(proc: subprocess.Popen[bytes], lines: Lines, budget: float) -> str:
    code = proc.poll()
    where = f" (at: {lines.last_step})" if lines.last_step else ""
    if code is None:
        return f"the exchange ran past its {budget:.0f} s{where}"
    said = f": {lines.stderr[-1]}" if lines.stderr else ""
    return f"the exchange's process ended with exit {code}{where}{said}"
