"""`gpucheck fleet` against its floor, side by side in one run: the CPU of reading every report
file and decoding it with orjson (msgspec where orjson is not installed) in one plain loop,
which any summary of the same files must pay, and the peak memory of the fleet's processes
together, for the table, --format json and --format csv, on reports from
benchmarks/fleet_reports.py (about 17.6 KiB each).

CPU is user + system time of the command and every process it started (its workers);
memory is the peak, sampled every 20 ms, of the sum of the proportional set sizes (PSS:
pages shared by the parent and its forked workers counted once) of all its processes.
Medians of interleaved rounds. Figures, not a pass/fail: machines differ.

    python benchmarks/fleet_streaming.py --count 100000 --dir /tmp/fleet-100k
    python benchmarks/fleet_streaming.py --count 1000000 --dir /tmp/fleet-1m --rounds 1

The reports are generated into --dir when it holds fewer than --count (never in the
repository); --keep leaves them there for the next run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_reports import generate

GPUCHECK = [sys.executable, "-m", "gpucheck"]
FORMATS = ("table", "json", "csv")
SAMPLE_EVERY = 0.02

# The floor: every file read and decoded once, in a plain loop (the fastest a summary of the
# same files could be without skipping any).
FLOOR = """
import os, sys
try:
    from orjson import loads
except ImportError:
    from msgspec.json import decode as loads
def walk(folder):
    with os.scandir(folder) as listing:
        for e in listing:
            if e.is_dir():
                yield from walk(e.path)
            elif e.name.endswith(".json"):
                yield e.path
count = 0
for path in walk(sys.argv[1]):
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        loads(data)
    except ValueError:
        pass
    count += 1
print(count)
"""


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants, from /proc/PID/task/TID/children."""
    found, queue = [], [pid]
    while queue:
        p = queue.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    queue.extend(int(c) for c in fh.read().split())
        except OSError:
            continue
    return found


class Run:
    def __init__(self, cpu: float, wall: float, peak_mib: float, code: int) -> None:
        self.cpu, self.wall, self.peak_mib, self.code = cpu, wall, peak_mib, code


def measure(command: list[str]) -> Run:
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, sum(_pss_kib(p) for p in _tree(proc.pid)))
            done.wait(SAMPLE_EVERY)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr else b""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{command[3:5]} failed ({proc.returncode}): {err[-500:]!r}")
    return Run(usage.ru_utime + usage.ru_stime, wall, peak / 1024, proc.returncode)


def _ensure(folder: Path, count: int) -> None:
    have = sum(1 for _ in folder.glob("*.json")) if folder.is_dir() else 0
    if have != count:
        if folder.exists():
            shutil.rmtree(folder)
        print(f"generating {count} reports in {folder} ...", flush=True)
        generate(folder, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--dir", type=Path, help="where the reports are (made if needed)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="leave the reports in --dir")
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="gpucheck-fleet-")) / "reports"
    cores = len(os.sched_getaffinity(0))
    try:
        _ensure(folder, args.count)
        try:
            import orjson  # type: ignore[import-not-found,unused-ignore]  # noqa: F401

            decoder = "orjson"
        except ImportError:
            decoder = "msgspec"
        runs: dict[str, list[Run]] = {name: [] for name in ("floor", *FORMATS)}
        for _ in range(args.rounds):
            runs["floor"].append(measure([sys.executable, "-c", FLOOR, str(folder)]))
            for fmt in FORMATS:
                runs[fmt].append(measure([*GPUCHECK, "fleet", str(folder), "--format", fmt]))
        med = {
            k: (
                statistics.median(r.cpu for r in v),
                statistics.median(r.wall for r in v),
                max(r.peak_mib for r in v),
            )
            for k, v in runs.items()
        }
        floor_cpu = med["floor"][0]
        print(
            f"{args.count} reports in {folder}; {cores} core(s); floor: read + {decoder}; "
            f"medians of {args.rounds} round(s)"
        )
        print(f"{'':22}{'CPU s':>9}{'µs/report':>11}{'x floor':>9}{'wall s':>9}{'peak MiB':>10}")
        for name, (cpu, wall, peak) in med.items():
            label = "floor (one loop)" if name == "floor" else f"fleet --format {name}"
            print(
                f"{label:22}{cpu:>9.2f}{cpu / args.count * 1e6:>11.1f}"
                f"{cpu / floor_cpu:>8.2f}x{wall:>9.2f}{peak:>10.1f}"
            )
    finally:
        if args.dir is None:
            shutil.rmtree(folder.parent, ignore_errors=True)
        elif not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
