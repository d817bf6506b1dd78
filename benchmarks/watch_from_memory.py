"""Peak memory of `gpucheck watch --from LOG` as the log grows: generated CSV logs of an 8-GPU
H100 node (1 s samples, every default field, the values moving as a training job's do) of
100 MiB and 1 GiB, each summarised by the real command, its peak resident memory read from
the kernel (wait4's rusage of that process). The log is read as a stream, so the peak should
not follow the size. For scale: `gpucheck --help`'s peak (the interpreter and the imports).

    python benchmarks/watch_from_memory.py                 # 100 MiB and 1 GiB
    python benchmarks/watch_from_memory.py --sizes 10 100  # MiB
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MIB = 1 << 20
HEADER = (
    "timestamp, index, uuid, name, utilization.gpu [%], utilization.memory [%], "
    "memory.used [MiB], memory.total [MiB], temperature.gpu, power.draw [W], power.limit [W], "
    "clocks.current.sm [MHz], clocks.current.memory [MHz], clocks_event_reasons.active, "
    "pcie.link.gen.current, pcie.link.width.current, fan.speed [%], pstate, "
    "ecc.errors.uncorrected.volatile.total\n"
)
ROW = (
    "{stamp}, {gpu}, GPU-{gpu:08d}-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3, {util}, "
    "{mem_util}, {used}, 81559, {temp}, {power:.2f}, 700.00, {sm}, 2619, 0x{bits:016x}, 5, 16, "
    "[N/A], P0, 0\n"
)


def generate(path: Path, size: int) -> int:
    """A log of at least `size` bytes; its number of samples."""
    start = time.mktime((2026, 11, 1, 0, 0, 0, 0, 0, -1))
    samples = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write(HEADER)
        written = len(HEADER)
        while written < size:
            stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(start + samples)) + ".000"
            busy = samples % 3 != 0  # idle one sample in three: a job waiting for its input
            block = "".join(
                ROW.format(
                    stamp=stamp,
                    gpu=gpu,
                    util=96 if busy else 0,
                    mem_util=40 if busy else 0,
                    used=30720 + gpu,
                    temp=60 + (samples + gpu) % 20,
                    power=650.25 if busy else 120.5,
                    sm=1980 if busy else 345,
                    bits=0 if busy else 1,
                )
                for gpu in range(8)
            )
            fh.write(block)
            written += len(block)
            samples += 1
    return samples


# Runs argv[1:], and writes its peak resident bytes on stderr. Linux keeps a process's peak
# across exec, so a command started straight from a big process would count that one's memory:
# it is started from this small one instead.
PEAK_OF = """
import os, sys
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
sys.stdout.flush()
sys.stderr.write(str(usage.ru_maxrss * 1024) + "\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measure(cmd: list[str]) -> tuple[int, float, str]:
    """Peak resident bytes (the kernel's ru_maxrss of that process), seconds, stdout."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_OF, *cmd], capture_output=True, text=True, env=env, check=False
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr[-500:]}")
    return int(proc.stderr.splitlines()[-1]), seconds, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1024], help="MiB")
    parser.add_argument("--keep", metavar="DIR", help="write the logs here and keep them")
    args = parser.parse_args()
    gpucheck = [sys.executable, "-m", "gpucheck"]
    base, _, _ = measure([*gpucheck, "--help"])
    rows = [("gpucheck --help (start-up)", 0, 0, base, 0.0)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        for mib in args.sizes:
            log = folder / f"watch-{mib}MiB.csv"
            samples = generate(log, mib * MIB)
            size = log.stat().st_size
            rss, seconds, out = measure([*gpucheck, "watch", "--from", str(log)])
            if not out.startswith(f"Summary: {samples} sample"):  # "1 sample", "N samples"
                raise SystemExit(f"unexpected summary of {log}: {out[:200]}")
            rows.append((f"watch --from a {mib} MiB log", size, samples, rss, seconds))
            if not args.keep:
                log.unlink()
    print(f"\n`gpucheck watch --from`, 8 GPUs, 19 fields, {time.strftime('%Y-%m-%d')}")
    print(f"{'run':34} {'log':>10} {'samples':>9} {'peak RSS':>10} {'time':>8} {'rate':>11}")
    for label, size, samples, rss, seconds in rows:
        rate = f"{size / MIB / seconds:6.1f} MiB/s" if size else ""
        print(
            f"{label:34} {size / MIB:6.0f} MiB {samples:9} {rss / MIB:6.1f} MiB "
            f"{seconds:6.1f} s {rate:>11}"
        )


if __name__ == "__main__":
    main()
