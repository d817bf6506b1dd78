"""When a started gpucheck is running its own code: a signal sent after that is gpucheck's to
handle, however slow the machine. Sleeping a fixed time before the signal instead lands it
in the interpreter's own start on a busy machine, which ends the way it ends any program."""

from __future__ import annotations

import subprocess
import time

SIGTERM_BIT = 1 << (15 - 1)  # (SigCgt's bit for SIGTERM, signal 15)


def catches_sigterm(pid: int) -> bool:
    """gpucheck's main() takes SIGTERM (to end its probe children with it) right after
    Ctrl-C; the interpreter never does: the first sign, from outside, that main() runs."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) & SIGTERM_BIT)
    except OSError:
        pass
    return False


def wait_until_main_runs(proc: subprocess.Popen[bytes], limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while not catches_sigterm(proc.pid):
        assert proc.poll() is None, f"gpucheck ended (exit {proc.returncode}) before main() ran"
        assert time.monotonic() < deadline, f"gpucheck's main() did not start in {limit_s} s"
        time.sleep(0.002)


def wait_for_children(proc: subprocess.Popen[bytes], count: int, limit_s: float = 60) -> None:
    """Until `proc` has at least `count` child processes (fleet's workers, say)."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as children:
                if len(children.read().split()) >= count:
                    return
        except OSError:
            pass
        assert proc.poll() is None, f"the command ended (exit {proc.returncode}) first"
        assert time.monotonic() < deadline, f"no {count} child processes in {limit_s} s"
        time.sleep(0.01)
