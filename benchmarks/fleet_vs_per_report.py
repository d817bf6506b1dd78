"""`gpucheck fleet` against the one-process-per-report baseline (`gpucheck doctor --from
REPORT --json` for each report, as many at a time as there are cores), side by side in one
run, on reports from benchmarks/fleet_reports.py (about 16 KB each).

The baseline is timed on a sample (a process per report costs a few hundred milliseconds, so
10,000 would take many minutes) and scaled to the full count; fleet is timed on the same
sample and on the full set. Figures, not a pass/fail: machines differ.

    python benchmarks/fleet_vs_per_report.py                 # 10,000 reports, sample 200
    python benchmarks/fleet_vs_per_report.py --count 2000 --sample 100
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_reports import generate

GPUCHECK = [sys.executable, "-m", "gpucheck"]


def fleet_seconds(folder: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [*GPUCHECK, "fleet", str(folder), "--format", "json"],
        capture_output=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"gpucheck fleet failed ({proc.returncode}): {proc.stderr[-500:]!r}")
    return elapsed


def per_report_seconds(files: list[Path], workers: int) -> float:
    def one(path: Path) -> None:
        subprocess.run(
            [*GPUCHECK, "doctor", "--from", str(path), "--json"], capture_output=True, check=False
        )

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, files))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=200)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    tmp = Path(tempfile.mkdtemp(prefix="gpucheck-fleet-bench-"))
    try:
        total = generate(tmp / "all", args.count)
        sample = tmp / "sample"
        sample.mkdir()
        files = sorted((tmp / "all").glob("*.json"))[: args.sample]
        for f in files:
            shutil.copy(f, sample / f.name)
        print(
            f"{args.count} reports, {total / args.count / 1024:.1f} KiB on average; {cores} core(s)"
        )
        fleet_sample = fleet_seconds(sample)
        baseline_sample = per_report_seconds(files, cores or 1)
        fleet_all = fleet_seconds(tmp / "all")
        baseline_all = baseline_sample * args.count / len(files)
        print(f"{'':32}{'fleet':>10}{'per report':>14}{'ratio':>9}")
        print(
            f"{f'sample of {len(files)}':32}{fleet_sample:>9.2f}s{baseline_sample:>13.2f}s"
            f"{baseline_sample / fleet_sample:>8.1f}x"
        )
        print(
            f"{f'all {args.count} (baseline scaled)':32}{fleet_all:>9.2f}s{baseline_all:>13.1f}s"
            f"{baseline_all / fleet_all:>8.0f}x"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
