"""Real child processes for the `gpucheck procs --kill` tests, and a simulated machine whose /proc
lists them as GPU holders."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest


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


# The processes a test started, ended at its end whatever happened.
@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
