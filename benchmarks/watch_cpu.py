"""What `gpucheck watch` costs in CPU per sample, side by side in one run on a simulated 8-GPU
H100 node (tests/sim):

- the floor: a bare nvidia-ml-py loop in one process reading the same 19 fields (handles and
  the name and UUID read once) and writing the same CSV, one write per sample;
- `gpucheck watch -o FILE`: its CPU, the sampling child's included;
- a process per sample (`while sleep 1; do gpucheck watch -c 1; done`, the way a cron job or a
  shell loop samples), with --per-process.

Steady state: each way runs twice, with N and 2N samples, and the CPU of the difference is
divided by N, so start-up (imports, nvmlInit) is left out of the per-sample figure. Rounds are
interleaved and the median is printed. Figures and the ratio, not a pass/fail.

The simulated libnvidia-ml answers from memory, so this measures the Python side (the
binding's ctypes calls, formatting, the child protocol, writing the log); a real driver adds
its ioctls to both sides alike.

    python benchmarks/watch_cpu.py                       # 8 GPUs, 200 samples, 3 rounds
    python benchmarks/watch_cpu.py --samples 400 --rounds 5 --per-process
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
HEADER = (
    "timestamp, index, uuid, name, utilization.gpu [%], utilization.memory [%], "
    "memory.used [MiB], memory.total [MiB], temperature.gpu, power.draw [W], power.limit [W], "
    "clocks.current.sm [MHz], clocks.current.memory [MHz], clocks_event_reasons.active, "
    "pcie.link.gen.current, pcie.link.width.current, fan.speed [%], pstate, "
    "ecc.errors.uncorrected.volatile.total\n"
)


def bare_loop(samples: int, interval: float, out: str) -> None:
    """The floor: what a hand-written nvidia-ml-py logger does per sample."""
    import pynvml as nv

    nv.nvmlInit()
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
    static = [
        (str(i), nv.nvmlDeviceGetUUID(h), nv.nvmlDeviceGetName(h)) for i, h in enumerate(handles)
    ]

    def get(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except nv.NVMLError as exc:
            return exc

    def cell(value: Any, fmt: str = "{}") -> str:
        return "[N/A]" if isinstance(value, nv.NVMLError) else fmt.format(value)

    with open(out, "a", encoding="utf-8") as fh:
        fh.write(HEADER)
        start = time.monotonic()
        for n in range(1, samples + 1):
            stamp = datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
            rows = []
            for (index, uuid, name), h in zip(static, handles, strict=True):
                util = nv.nvmlDeviceGetUtilizationRates(h)
                mem = nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2)
                fan = get(nv.nvmlDeviceGetFanSpeed, h)
                ecc = get(
                    nv.nvmlDeviceGetTotalEccErrors,
                    h,
                    nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                    nv.NVML_VOLATILE_ECC,
                )
                cells = (
                    stamp,
                    index,
                    uuid,
                    name,
                    str(util.gpu),
                    str(util.memory),
                    str(mem.used // MIB),
                    str(mem.total // MIB),
                    str(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                    f"{nv.nvmlDeviceGetPowerUsage(h) / 1000:.2f}",
                    f"{nv.nvmlDeviceGetPowerManagementLimit(h) / 1000:.2f}",
                    str(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                    str(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
                    f"0x{nv.nvmlDeviceGetCurrentClocksEventReasons(h):016x}",
                    str(nv.nvmlDeviceGetCurrPcieLinkGeneration(h)),
                    str(nv.nvmlDeviceGetCurrPcieLinkWidth(h)),
                    cell(fan),
                    f"P{nv.nvmlDeviceGetPerformanceState(h)}",
                    cell(ecc),
                )
                rows.append(", ".join(cells) + "\n")
            fh.write("".join(rows))
            fh.flush()
            delay = start + n * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    nv.nvmlShutdown()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_of(cmd: list[str], env: dict[str, str]) -> float:
    before = children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return children_cpu() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=float, default=0.05, help="seconds (short: a quick run)")
    parser.add_argument("--per-process", action="store_true", help="also a process per sample")
    parser.add_argument("--bare-loop", nargs=2, metavar=("SAMPLES", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_loop:
        bare_loop(int(args.bare_loop[0]), args.interval, args.bare_loop[1])
        return
    sys.path.insert(0, str(REPO / "tests"))
    from sim import scenario as sim

    compiler = sim.find_compiler()
    if compiler is None:
        raise SystemExit("no C compiler: the simulated NVIDIA libraries cannot be built")
    n = args.samples
    per_sample: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        libs = sim.Libraries.build(sim.nvml_include_dir(), folder / "build", compiler)
        machine = sim.Machine.create(sim.h100_node(args.gpus), libs, folder / "machine")
        env = {**os.environ, **machine.env, "PYTHONPATH": str(REPO / "src")}
        gpucheck = [sys.executable, "-m", "gpucheck", "watch", "-i", str(args.interval)]
        bare = [sys.executable, __file__, "--interval", str(args.interval), "--bare-loop"]
        ways: dict[str, Callable[[int, str], list[str]]] = {
            "bare nvidia-ml-py loop (floor)": lambda k, out: [*bare, str(k), out],
            "gpucheck watch -o FILE": lambda k, out: [*gpucheck, "-c", str(k), "-o", out],
        }
        cpu_of([*gpucheck, "-c", "1", "-o", os.devnull], env)  # warm the page cache
        for _ in range(args.rounds):
            for label, command in ways.items():
                spent = {}
                for k in (n, 2 * n):
                    out = folder / "log.csv"
                    out.unlink(missing_ok=True)
                    spent[k] = cpu_of(command(k, str(out)), env)
                per_sample.setdefault(label, []).append((spent[2 * n] - spent[n]) / n)
        if args.per_process:
            runs = max(10, n // 10)
            cpu = sum(cpu_of([*gpucheck, "-c", "1", "-o", os.devnull], env) for _ in range(runs))
            per_sample["a process per sample"] = [cpu / runs]
    floor = statistics.median(per_sample["bare nvidia-ml-py loop (floor)"])
    print(f"\n{args.gpus} simulated GPUs, 19 fields, steady state ({n} more samples), ", end="")
    print(f"median of {args.rounds} round(s), {datetime.now():%Y-%m-%d}")
    print(f"{'sampling':34} {'CPU/sample':>11} {'1 s interval':>13} {'vs floor':>9}")
    for label, values in per_sample.items():
        cost = statistics.median(values)
        print(f"{label:34} {cost * 1000:8.2f} ms {100 * cost:11.2f} % {cost / floor:8.2f}x")


if __name__ == "__main__":
    main()
