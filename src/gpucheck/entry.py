"""The `gpucheck` program's entry point: everything the command line does runs inside it, the
imports included, so that Ctrl-C anywhere ends with "gpucheck: interrupted" and exit 130, a
closed pipe or a full disk with one line, and nothing with a traceback (unless
GPUCHECK_DEBUG=1)."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from types import FrameType
from typing import NoReturn

from gpucheck.exit_status import ExitStatus


def _interrupted() -> NoReturn:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write("gpucheck: interrupted\n")
        sys.stderr.flush()
    os._exit(ExitStatus.INTERRUPTED)  # past this point nothing is left to clean up


_SEEN: list[int] = []  # a Ctrl-C arrived (even one some library code swallowed)


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    # Probe children run in their own sessions (so that a timeout kills their whole group),
    # hence do not get the terminal's Ctrl-C: end them now, or waiting threads would wait.
    _SEEN.append(signum)
    child = sys.modules.get("gpucheck.probes.child")
    if child is not None:
        child.kill_all()
    raise KeyboardInterrupt


def main() -> NoReturn:
    # Start-up creates ~100k long-lived objects (modules, classes, typer's command) and the
    # default thresholds collect over them dozens of times for nothing (~5 ms of a doctor
    # --from). Collections still run, rarer, so that a long watch or fleet stays bounded.
    gc.set_threshold(50_000, 20, 10)
    with contextlib.suppress(ValueError):  # not the main thread (embedded): keep the default
        signal.signal(signal.SIGINT, _on_sigint)
    try:
        from gpucheck.cli import run

        code = run(sys.argv[1:])
        sys.stdout.flush()
    except KeyboardInterrupt:
        _interrupted()
    except BrokenPipeError:
        code = 0
    if _SEEN:
        _interrupted()
    if sys.stdout is not None:
        with contextlib.suppress(OSError, ValueError):
            # The reader went away: the exit code still tells the result.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    # The work is done: a late Ctrl-C still ends as "interrupted", not by the signal.
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, lambda signum, frame: _interrupted())
    # Nothing is left to clean up (output written and closed, children reaped), so skip the
    # interpreter's teardown of every module and object: ~13 ms of a doctor --from.
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)
