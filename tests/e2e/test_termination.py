"""SIGTERM and SIGHUP (a scheduler's time limit, a closed terminal) end gpucheck as they end
any program, exit 128+N, and take its probe children with it: they run in sessions of their
own, so nothing else would end them, and a hung driver call would keep them alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import Simulate
from sim.scenario import h100_node, sleep


def _nvml_children(root: str) -> list[int]:
    """The NVML probe children of the simulated machine at `root`: its GPUCHECK_ROOT in their
    environment, so a test run beside this one (another suite on the machine) is not counted."""
    mark = f"GPUCHECK_ROOT={root}".encode()
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if b"scripts/nvml.py" not in fh.read():
                        continue
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    if mark in fh.read().split(b"\0"):
                        found.append(int(pid))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_termination_ends_the_probe_children_too(simulate: Simulate, signum: int) -> None:
    machine = simulate(h100_node(1, faults=[sleep("nvmlInit", 60)]))
    root = machine.env["GPUCHECK_ROOT"]
    before = set(_nvml_children(root))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "procs"],
        env={**os.environ, **machine.env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # As a terminal starts it: under nohup the suite inherits SIGHUP ignored, and gpucheck
        # leaves an ignored signal ignored (nohup gpucheck ... must survive a closed terminal).
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not set(_nvml_children(root)) - before:
            time.sleep(0.05)  # the NVML child has started, and hangs in nvmlInit
        assert set(_nvml_children(root)) - before, "the NVML child never started"
        proc.send_signal(signum)
        assert proc.wait(timeout=20) == -signum  # ended by the signal, as before
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and set(_nvml_children(root)) - before:
            time.sleep(0.05)
        assert set(_nvml_children(root)) - before == set()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
