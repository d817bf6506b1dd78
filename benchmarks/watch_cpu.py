"""What `gpucheck watch` costs in CPU: one long-lived NVML session against a process per
sample (`while sleep 1; do gpucheck watch -c 1; done`, the way a cron job or a shell loop
samples), side by side on a simulated 8-GPU H100 node (tests/sim). Prints CPU seconds per
sample and the share of one core at a 1 s interval, and the ratio. Figures, not a pass/fail.

The simulated libnvidia-ml answers from memory, so this measures gpucheck's own cost (Python,
JSON, the child protocol, writing the log); a real driver adds its ioctls to both sides.

    python benchmarks/watch_cpu.py                  # 8 GPUs, 100 samples
    python benchmarks/watch_cpu.py --gpus 8 --samples 300
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--interval", type=float, default=0.05, help="seconds (short: a quick run)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from sim import scenario as sim

    compiler = sim.find_compiler()
    if compiler is None:
        raise SystemExit("no C compiler: the simulated NVIDIA libraries cannot be built")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        libs = sim.Libraries.build(sim.nvml_include_dir(), folder / "build", compiler)
        machine = sim.Machine.create(sim.h100_node(args.gpus), libs, folder / "machine")
        env = {**os.environ, **machine.env, "PYTHONPATH": str(REPO / "src")}
        base = [sys.executable, "-m", "gpucheck", "watch", "-o", os.devnull]
        run([*base, "-c", "1"], env)  # warm the page cache for both
        rows = []
        cpu0, wall0 = children_cpu(), time.perf_counter()
        run([*base, "-i", str(args.interval), "-c", str(args.samples)], env)
        rows.append(
            ("one session (gpucheck watch)", children_cpu() - cpu0, time.perf_counter() - wall0)
        )
        per_process = max(10, args.samples // 5)
        cpu0, wall0 = children_cpu(), time.perf_counter()
        for _ in range(per_process):
            run([*base, "-c", "1"], env)
        cpu = (children_cpu() - cpu0) * args.samples / per_process
        rows.append(
            (
                "a process per sample",
                cpu,
                (time.perf_counter() - wall0) * args.samples / per_process,
            )
        )
    print(f"\n{args.gpus} simulated GPUs, {args.samples} samples, all 19 default fields")
    print(f"{'sampling':32} {'CPU s/sample':>13} {'1 s interval':>13}")
    per_sample = {}
    for label, cpu, _ in rows:
        per_sample[label] = cpu / args.samples
        print(f"{label:32} {per_sample[label] * 1000:10.1f} ms {100 * per_sample[label]:11.1f} %")
    ratio = per_sample["a process per sample"] / per_sample["one session (gpucheck watch)"]
    print(f"\na process per sample / one session = {ratio:.0f}x the CPU (of one core)")


if __name__ == "__main__":
    main()
