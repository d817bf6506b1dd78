"""Run probe code in a child process, bounded in time, surviving whatever the child does.

Driver calls can hang (a GPU fallen off the bus), crash (a driver bug) or abort the process
(cuDNN 9's loader calls abort() when a sub-library is missing). A child process is the only
isolation that survives all three. The child speaks a tiny protocol (its side: protocol.py):

- stdout: one JSON object per line, as facts become known (so a crash loses only the rest);
- stderr: "@ <step>" lines written before each risky call, so the parent can say where it
  hung or died; any other stderr text is kept as the child's own message.

A child script belongs to the package that runs it, in that package's `scripts/` folder, and
is found through `script()`, never by a path of the caller's own making.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Literal

from msgspec import Struct, field

from gpucheck.child.protocol import GATE_FD_ENV, STEP_MARK
from gpucheck.model.types import ChildFailure

PACKAGES = Path(__file__).resolve().parent.parent  # gpucheck's own folder
KILL_GRACE = 2.0  # seconds a killed child gets to hand over what it printed

# Children still running, for kill_all(): they run in sessions of their own, so the
# terminal's Ctrl-C does not reach them.
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
# How many children this process has tried to start (started, or failed to), for callers
# that want the probes running before they do work of their own (wait_spawned).
_SPAWNS = threading.Condition()
_spawned = 0


def script(package: str, name: str) -> Path:
    """The child script `name` of `package` (dotted, the caller's own: "gpucheck.bench"), in
    that package's `scripts/` folder. tests/e2e/test_architecture.py holds every caller to its own
    package and to a script that exists."""
    top, _, inner = package.partition(".")
    if top != "gpucheck" or not inner:
        raise ValueError(f"not a gpucheck package: {package!r}")
    return PACKAGES.joinpath(*inner.split("."), "scripts", name)


def spawned() -> int:
    """How many children this process has tried to start so far."""
    with _SPAWNS:
        return _spawned


def wait_spawned(count: int, timeout: float) -> bool:
    """Wait (at most `timeout` seconds) until `count` children have been tried in all."""
    with _SPAWNS:
        return _SPAWNS.wait_for(lambda: _spawned >= count, timeout)


def _tried() -> None:
    global _spawned
    with _SPAWNS:
        _spawned += 1
        _SPAWNS.notify_all()


def kill_all() -> None:
    """Kill every probe child still running, with its process group (on Ctrl-C)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill_group(proc)


class ChildResult(Struct):
    records: list[dict[str, object]] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    last_step: str | None = None
    message: str = ""  # the child's own stderr text, without step lines
    duration_ms: float = 0.0
    start_error: str | None = None  # the child could not be started at all

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.start_error is None and self.returncode == 0

    @property
    def status(self) -> Literal["ok", "error", "timeout", "crashed"]:
        if self.timed_out:
            return "timeout"
        if self.start_error is not None:
            return "error"
        if self.returncode is not None and self.returncode < 0:
            return "crashed"
        return "ok" if self.returncode == 0 else "error"

    @property
    def failure(self) -> ChildFailure | None:
        """How the child ended badly, as data: what checks read (never `describe`'s words)."""
        tail = self.message.strip().splitlines()[-1] if self.message.strip() else None
        if self.start_error is not None:
            return ChildFailure("not_started", stderr_tail=self.start_error)
        if self.timed_out:
            return ChildFailure("timeout", stage=self.last_step, stderr_tail=tail)
        rc = self.returncode
        if rc is not None and rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return ChildFailure("crashed", self.last_step, signal=name, stderr_tail=tail)
        if rc:
            return ChildFailure("exited", self.last_step, exit_code=rc, stderr_tail=tail)
        return None

    def describe(self, timeout: float) -> str | None:
        """One line saying what went wrong (the words of `failure`), or None."""
        failure = self.failure
        if failure is None:
            return None
        where = f" in {failure.stage}" if failure.stage else ""
        tail = f": {failure.stderr_tail}" if failure.stderr_tail else ""
        if failure.how == "not_started":
            return f"could not start: {failure.stderr_tail}"
        if failure.how == "timeout":
            return f"timed out after {timeout:g} s{where}"
        if failure.how == "crashed":
            return f"crashed with {failure.signal}{where}{tail}"
        return f"exited with status {failure.exit_code}{where}{tail}"


class Gate:
    """Holds children back at a point of their choosing until the parent decides: they do
    their slow, harmless part (importing a framework) while other probes run, and wait on the
    file descriptor named by GPUCHECK_GATE_FD before the part that must come after (CUDA
    calls). The parent's word is "go", or "stop <reason>"; a dead parent reads as stop."""

    def __init__(self) -> None:
        self._decided = threading.Event()
        self.word = "stop gpucheck did not decide"

    def open(self, word: str) -> None:
        """Decide (once: later words are ignored)."""
        if not self._decided.is_set():
            self.word = word
            self._decided.set()

    @property
    def went(self) -> bool:
        return self._decided.is_set() and self.word == "go"

    def wait(self, timeout: float | None = None) -> bool:
        return self._decided.wait(timeout)

    def attach(self, env: dict[str, str]) -> tuple[int, int]:
        """A pipe for one child: its read end goes into `env`; the write end is answered
        (in a thread) once the decision is made."""
        read_fd, write_fd = os.pipe()
        env[GATE_FD_ENV] = str(read_fd)

        def answer() -> None:
            self._decided.wait()
            with contextlib.suppress(OSError):
                os.write(write_fd, (self.word + "\n").encode())
            with contextlib.suppress(OSError):
                os.close(write_fd)

        threading.Thread(target=answer, daemon=True).start()
        return read_fd, write_fd


def run_script(
    script: str | Path,
    args: list[str],
    timeout: float,
    python: str | None = None,
    env: dict[str, str] | None = None,
    gate: Gate | None = None,
    stdlib_only: bool = False,
) -> ChildResult:
    """Run a probe script under `python` and collect its records; never raises.
    `stdlib_only`: the script needs the standard library alone, so the interpreter starts
    without its site folders (-S: nothing to scan at each child's start)."""
    start = time.monotonic()
    cmd = [python or sys.executable, *(["-S"] if stdlib_only else []), str(script), *args]
    result = ChildResult()
    env = dict(os.environ if env is None else env)
    gate_fd = gate.attach(env)[0] if gate is not None else None
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # so a timeout can kill the child's own children too
            pass_fds=() if gate_fd is None else (gate_fd,),
        )
    except OSError as exc:
        result.start_error = str(exc)
        return result
    finally:
        if gate_fd is not None:
            os.close(gate_fd)  # the child has its copy
        _tried()
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        out, err, result.timed_out = _communicate(proc, timeout)
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    result.returncode = proc.returncode
    result.duration_ms = round((time.monotonic() - start) * 1000, 1)
    result.records = _parse_records(out)
    result.last_step, result.message = _parse_stderr(err)
    return result


def _communicate(proc: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes, bool]:
    """The child's output and whether it ran past `timeout` (then it was killed)."""
    try:
        out, err = proc.communicate(timeout=timeout)
        return out, err, False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:
            # Unkillable for now (stuck in the driver, in the kernel) or a grandchild that
            # left the group still holds the pipes: the time bound wins over its last words.
            out, err = b"", b""
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        return out, err, True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    killpg = getattr(os, "killpg", None)  # POSIX; elsewhere the child alone is killed
    try:
        if killpg is None:
            raise ProcessLookupError
        killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _parse_records(out: bytes) -> list[dict[str, object]]:
    records = []
    for line in out.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue  # a library printing to stdout must not break the protocol
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


def _parse_stderr(err: bytes) -> tuple[str | None, str]:
    last_step = None
    message = []
    for line in err.decode("utf-8", "replace").splitlines():
        if line.startswith(STEP_MARK):
            last_step = line[len(STEP_MARK) :].strip()
        elif line.strip():
            message.append(line.rstrip())
    return last_step, "\n".join(message[-20:])
