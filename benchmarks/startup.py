"""Start-up cost of gpucheck's commands against the floor of any typer command
(`python -c "import typer"`), side by side in one run. Prints medians and the ratios the re-cut
aims at (figures, not a pass/fail: machines differ):

    doctor --from FILE (json, and text to a pipe)  <= 1.5x import typer
    gpucheck --help, gpucheck compat ...           <= 1.2x import typer

    python benchmarks/startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


# An installed package has its bytecode compiled; a checkout run with PYTHONDONTWRITEBYTECODE
# would compile every module on every run and measure the compiler. The warm-up runs write it.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=ENV, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-500:]!r}")
    return times


def program() -> list[str]:
    """The `gpucheck` program installed beside this interpreter, as users run it (the console
    script; `python -m` would add runpy's 3 ms), or nothing where there is none."""
    script = Path(sys.executable).with_name("gpucheck")
    return [str(script)] if script.is_file() else []


def snapshot_file() -> str:
    """A realistic snapshot: the test builders' healthy 8-GPU H100 node."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    import builders

    from gpucheck.model.snapshot import dumps

    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as fh:
        fh.write(dumps(builders.h100_node(8)))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    snap = snapshot_file()
    py = sys.executable
    gpucheck = program() or [py, "-m", "gpucheck"]
    print(f"gpucheck is {' '.join(gpucheck)}")
    rows = [
        ("import typer", [py, "-c", "import typer"]),
        ("gpucheck --help", [*gpucheck, "--help"]),
        ("gpucheck compat torch 2.5.1", [*gpucheck, "compat", "torch", "2.5.1"]),
        ("doctor --from --json", [*gpucheck, "doctor", "--from", snap, "--json"]),
        ("doctor --from (text)", [*gpucheck, "doctor", "--from", snap]),
    ]
    for _, cmd in rows:  # warm the page cache for all alike
        timed(cmd, 2)
    medians: dict[str, float] = {}
    print(f"{'command':30} {'median s':>9} {'min s':>7}   ({args.runs} runs, interleaved)")
    samples: dict[str, list[float]] = {label: [] for label, _ in rows}
    for _ in range(args.runs):  # interleaved, so that load on the machine hits all alike
        for label, cmd in rows:
            samples[label] += timed(cmd, 1)
    for label, _ in rows:
        medians[label] = statistics.median(samples[label])
        print(f"{label:30} {medians[label]:9.3f} {min(samples[label]):7.3f}")
    floor = medians["import typer"]
    print()
    for label, goal in (
        ("gpucheck --help", 1.2),
        ("gpucheck compat torch 2.5.1", 1.2),
        ("doctor --from --json", 1.5),
        ("doctor --from (text)", 1.5),
    ):
        print(f"{label:30} {medians[label] / floor:5.3f}x import typer   (goal <= {goal}x)")
    os.unlink(snap)


if __name__ == "__main__":
    main()
