"""Real child processes for the `gpucheck procs --kill` tests, and a simulated machine whose /proc
lists them as GPU holders."""

from __future__ import annotations

import subprocess
import sys


def sleeper(ignore_term: bool = False) -> subprocess.Popen[bytes]:
    code = "import signal, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "print('ready', flush=True)\ntime.sleep(600)\n"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def running(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is None
