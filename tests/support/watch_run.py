"""What the watch tests share: running `gpucheck watch` on a simulated machine, its CSV header."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import run_gpucheck
from sim.scenario import Machine

FIXTURES = Path(__file__).parents[1] / "fixtures"
HEADER = (
    "timestamp, index, uuid, name, utilization.gpu [%], utilization.memory [%], "
    "memory.used [MiB], memory.total [MiB], temperature.gpu, power.draw [W], power.limit [W], "
    "clocks.current.sm [MHz], clocks.current.memory [MHz], clocks_event_reasons.active, "
    "pcie.link.gen.current, pcie.link.width.current, fan.speed [%], pstate, "
    "ecc.errors.uncorrected.volatile.total"
)
# An idle H100 as the preset has it (values from the real capture in shared/nvsmi): memory.used
# 0 MiB as nvidia-smi counts it, the 479 MiB the driver reserves left out.
IDLE_H100_0 = (
    "0, GPU-00000000-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3, 0, 0, 0, 81559, 41, "
    "69.62, 700.00, 1980, 2619, 0x0000000000000001, 5, 16, [N/A], P0, 0"
)


def watch(machine: Machine, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_gpucheck("watch", *args, env=machine.env, timeout=timeout)


def rows_of(text: str) -> list[str]:
    """CSV rows without their timestamps."""
    return [line.split(", ", 1)[1] for line in text.splitlines()[1:]]


def children_on(machine: Machine) -> list[int]:
    """Live processes started with this machine's scenario (the sampling child)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            continue
        if str(machine.scenario_file).encode() in environ and b") Z" not in stat:
            found.append(int(pid))
    return found


def interrupt_after(machine: Machine, log: Path, rows: int, *args: str) -> tuple[int, str, str]:
    """`gpucheck watch -i 0.05 -o LOG ARGS` on the machine, Ctrl-C once LOG holds `rows` rows
    after its header: (exit code, stdout, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "watch", "-i", "0.05", "-o", str(log), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **machine.env},
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
            not log.exists() or log.read_text().count("\n") < 1 + rows
        ):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err
