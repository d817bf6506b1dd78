"""Signals that reach the confirmed process or none: a PID is only a number, and once its
process exits the kernel may hand it to a newcomer, so a later `kill(pid)` would hit that.

Where the kernel and Python have them (Linux 5.3, Python 3.9), a pidfd is opened when the
process is confirmed and every signal and every wait goes through it: a pidfd names one
process for its whole life, never the PID's next owner (pidfd_open(2), pidfd_send_signal(2)).
Elsewhere the process's start time (in clock ticks since boot, /proc/PID/stat field 22) is
read again right before every signal: a PID whose start time changed belongs to another
process, and gets nothing. That fallback leaves a window of microseconds between the read and
the signal; the pidfd leaves none.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable
from pathlib import Path

from gpucheck.probes.processes import STAT_START_TIME, STAT_STATE, read_stat, stat_number

PIDFD = "pidfd"
START_TIME = "start time"

# Why the fallback is used, in words, when pidfd_open is missing from this Python.
NO_PIDFD = "this Python has no os.pidfd_open (Linux 5.3 and Python 3.9 are needed)"


def start_ticks(proc: Path, pid: int) -> tuple[int, str] | None:
    """(start tick, state letter) of a process from PROC/PID/stat; None when it does not exist."""
    fields = read_stat(proc / str(pid))
    if fields is None:
        return None
    ticks = stat_number(fields, STAT_START_TIME)
    return None if ticks is None else (ticks, fields[STAT_STATE].decode("ascii", "replace"))


class Target:
    """One confirmed process. `send` returns False when it has exited (nothing was sent);
    `wait` returns True once it has exited (a zombie has: its parent only has to reap it)."""

    guard: str = ""
    why: str = ""  # why this guard, where it is the fallback

    def send(self, sig: int) -> bool:
        raise NotImplementedError

    def wait(self, seconds: float) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        pass


class PidfdTarget(Target):
    guard = PIDFD

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, sig: int) -> bool:
        try:
            signal.pidfd_send_signal(self.fd, sig)
        except ProcessLookupError:
            return False  # exited and reaped
        return True

    def wait(self, seconds: float) -> bool:
        # A pidfd becomes readable when its process exits, reaped or not.
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        return bool(poller.poll(max(0, int(seconds * 1000))))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


class StartTimeTarget(Target):
    """The fallback: the PID still belongs to the process confirmed while its start tick is
    the one read at confirmation. `proc_pid` is its PID in `proc` (`pid`, unless that /proc
    is an outer PID namespace's)."""

    guard = START_TIME

    def __init__(self, pid: int, ticks: int, proc: Path, proc_pid: int, poll: float = 0.05):
        self.pid = pid
        self.ticks = ticks
        self.proc = proc
        self.proc_pid = proc_pid
        self.poll = poll

    def _exited(self) -> bool:
        now = start_ticks(self.proc, self.proc_pid)
        return now is None or now[0] != self.ticks or now[1] in ("Z", "X")

    def send(self, sig: int) -> bool:
        if self._exited():
            return False  # gone, or the PID is another process's now
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def wait(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while not self._exited():
            if time.monotonic() >= deadline:
                return False
            time.sleep(self.poll)
        return True


GONE = "it had already exited"
CHANGED = "the PID now belongs to another process: not ended"


def open_target(
    pid: int,
    identity: Callable[[], bool],
    use_pidfd: bool = True,
    proc: Path = Path("/proc"),
    proc_pid: int | None = None,
) -> tuple[Target | None, str]:
    """A Target for `pid` if it is still the process confirmed (`identity()` true), else
    (None, GONE or CHANGED). With a pidfd, `identity` is checked after it is opened: the pidfd
    names whichever process held the PID then, and a match proves it is the confirmed one.
    `proc_pid` is its PID in `proc`, for the fallback (`pid` unless `proc` is an outer
    namespace's)."""
    reason = NO_PIDFD
    if use_pidfd and hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return None, GONE
        except OSError as exc:  # ENOSYS (a kernel before 5.3), EMFILE, a seccomp filter
            reason = f"pidfd_open failed ({exc.strerror})"
        else:
            target = PidfdTarget(fd)
            if target.wait(0):
                target.close()
                return None, GONE
            if not identity():
                target.close()
                return None, CHANGED
            return target, ""
    proc_pid = pid if proc_pid is None else proc_pid
    ticks = start_ticks(proc, proc_pid)
    if ticks is None or ticks[1] in ("Z", "X"):
        return None, GONE
    if not identity():
        return None, CHANGED
    fallback = StartTimeTarget(pid, ticks[0], proc, proc_pid)
    fallback.why = reason
    return fallback, ""
