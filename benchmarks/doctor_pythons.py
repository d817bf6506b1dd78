"""`doctor --python A --python B --python C` against `doctor --python A`, side by side in one
run: the interpreters are probed side by side, so three cost little more than one. Prints
medians and the ratio (goal <= 1.5x; a figure, not a pass/fail: machines differ).

    python benchmarks/doctor_pythons.py [--runs 9] [--envs 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from startup import program, timed


def make_envs(root: Path, count: int) -> list[str]:
    """Real virtual environments (no pip: their probe reads what the base interpreter has)."""
    pythons = []
    for n in range(count):
        prefix = root / f"env{n}"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
        pythons.append(str(prefix / "bin" / "python"))
    return pythons


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--envs", type=int, default=3)
    args = parser.parse_args()
    gpucheck = program() or [sys.executable, "-m", "gpucheck"]
    with tempfile.TemporaryDirectory() as tmp:
        pythons = make_envs(Path(tmp), args.envs)
        many = [arg for python in pythons for arg in ("--python", python)]
        rows = [
            ("doctor --python A", [*gpucheck, "doctor", "--json", "--python", pythons[0]]),
            (f"doctor --python x{args.envs}", [*gpucheck, "doctor", "--json", *many]),
        ]
        for _, cmd in rows:  # warm the page cache and the bytecode alike
            timed(cmd, 2)
        samples: dict[str, list[float]] = {label: [] for label, _ in rows}
        for _ in range(args.runs):  # interleaved: load on the machine hits both alike
            for label, cmd in rows:
                samples[label] += [wall for wall, _ in timed(cmd, 1)]
    print(f"{'command':26} {'median s':>9} {'min s':>7}   ({args.runs} runs, interleaved)")
    medians = {label: statistics.median(times) for label, times in samples.items()}
    for label, times in samples.items():
        print(f"{label:26} {medians[label]:9.3f} {min(times):7.3f}")
    one, several = (medians[label] for label, _ in rows)
    print(f"\n{rows[1][0]:26} {several / one:5.3f}x one interpreter   (goal <= 1.5x)")


if __name__ == "__main__":
    main()
