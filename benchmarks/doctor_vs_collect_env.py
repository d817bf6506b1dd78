"""gpucheck doctor against `python -m torch.utils.collect_env`, side by side in one run, in
an environment with both torch and TensorFlow installed; and `doctor --deep` against the
slowest framework's bare import (the floor of any deep pass). Prints each command's median
wall time over several runs and the ratios the re-cut aims at (figures, not a pass/fail):

    gpucheck doctor          <= 0.10x  python -m torch.utils.collect_env
    gpucheck doctor --deep   <= 1.05x  the slowest bare `import torch` / `import tensorflow`

    python benchmarks/doctor_vs_collect_env.py               # builds/reuses the test venv
    python benchmarks/doctor_vs_collect_env.py --python /path/to/env/bin/python --runs 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# An installed package has its bytecode compiled; a checkout run with PYTHONDONTWRITEBYTECODE
# would compile every module on every run and measure the compiler. The warm-up runs write it.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):  # doctor exits 1 on a machine with problems
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", help="an interpreter with torch and tensorflow installed")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    python = args.python
    if python is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from support.venvs import venv_python

        print("building or reusing the torch + tensorflow-cpu test environment ...", flush=True)
        python = str(venv_python("torch-and-tensorflow"))
    # The console script users run (python -m would add runpy's few milliseconds).
    script = Path(sys.executable).with_name("gpucheck")
    gpucheck = [str(script)] if script.is_file() else [sys.executable, "-m", "gpucheck"]
    doctor = [*gpucheck, "doctor", "--json", "--python", python]
    rows = [
        ("gpucheck doctor", doctor),
        ("torch.utils.collect_env", [python, "-m", "torch.utils.collect_env"]),
        ("gpucheck doctor --deep", [*doctor, "--deep"]),
        ("import torch", [python, "-c", "import torch"]),
        ("import tensorflow", [python, "-c", "import tensorflow"]),
    ]
    # One warm-up each, so that neither pays for a cold page cache the other did not.
    for _, cmd in rows:
        timed(cmd, 1)
    # Interleaved rounds, so that load on the machine (a shared VM's neighbours) hits all alike.
    samples: dict[str, list[float]] = {label: [] for label, _ in rows}
    for _ in range(args.runs):
        for label, cmd in rows:
            samples[label] += timed(cmd, 1)
    medians = {}
    print(f"\n{'command':28} {'median s':>9} {'min s':>7} {'max s':>7}   ({args.runs} rounds)")
    for label, _ in rows:
        times = samples[label]
        medians[label] = statistics.median(times)
        print(f"{label:28} {medians[label]:9.3f} {min(times):7.3f} {max(times):7.3f}")
    ratio = medians["gpucheck doctor"] / medians["torch.utils.collect_env"]
    print(f"\ngpucheck doctor / collect_env = {ratio:.3f}x (goal <= 0.10x)")
    floor = max(medians["import torch"], medians["import tensorflow"])
    deep = medians["gpucheck doctor --deep"] / floor
    print(f"gpucheck doctor --deep / slowest bare import = {deep:.3f}x (goal <= 1.05x)")


if __name__ == "__main__":
    main()
