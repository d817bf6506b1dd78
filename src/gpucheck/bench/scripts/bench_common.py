"""What gpucheck bench's child measurements share (bench.py, bench_cupy.py): the plan of a run,
the timing loop, the records the parent reads, and the NUMA placement of host buffers. Standard
library only; Python 3.8+ (annotations are never evaluated)."""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from typing import Any, Callable

CHECK = 16  # rows and columns of C checked against the CPU
TOLERANCE = {"fp32": 1e-4, "tf32": 5e-3, "fp16": 5e-3, "bf16": 2e-2, "fp8": 2e-2}
MIB = 1024 * 1024


SKINNY_ROWS = (16, 128)  # tokens of an LLM's decode step: m x n times an n x n weight
SKINNY_DTYPES = ("fp16", "bf16")


def matmul_record(
    dtype: str,
    device: str,
    n: int,
    runs: int,
    samples: int,
    ms: float,
    err: float | None,
    m: int | None = None,
) -> dict[str, Any]:
    """One matmul measurement as the parent reads it (`bench.measurements.Matmul`): square
    n x n x n, or with `m` the skinny m x n times n x n."""
    record = {
        "kind": "matmul",
        "dtype": dtype,
        "device": device,
        "n": n,
        "runs_per_sample": runs,
        "samples": samples,
        "median_ms": ms,
        "tflops": 2 * (m or n) * n * n / (ms / 1000) / 1e12,
        "rel_error": err,
        "tolerance": TOLERANCE[dtype],
        "correct": err is not None and err <= TOLERANCE[dtype],
    }
    if m is not None:
        record["m"] = m
    return record


def numa_cpus(node: int, root: str = "/") -> set[int]:
    """The CPUs of a NUMA node, from sysfs's cpulist ("0-7,16-23"); empty where unknown."""
    path = os.path.join(root, "sys/devices/system/node", f"node{node}", "cpulist")
    try:
        with open(path) as stream:
            text = stream.read().strip()
    except OSError:
        return set()
    cpus: set[int] = set()
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


@contextlib.contextmanager
def on_node(node: int | None) -> Any:
    """Run the block on the CPUs of `node` (host buffers allocated in it land there), then
    restore the affinity; a no-op where the node or sched_setaffinity is unknown."""
    cpus = numa_cpus(node) if node is not None else set()
    before = None
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            before = os.sched_getaffinity(0)
            os.sched_setaffinity(0, cpus & before or cpus)
        except OSError:
            before = None
    try:
        yield before is not None
    finally:
        if before is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, before)


class Plan:
    def __init__(
        self, quick: bool, device: str, duration: float = 0.0, numa_node: int | None = None
    ) -> None:
        gpu = device != "cpu"
        self.duration = duration  # seconds of the sustained run (0: none)
        self.numa_node = numa_node  # the GPU's, for the host buffers
        self.n = (4096 if quick else 8192) if gpu else (1024 if quick else 2048)
        self.samples = 5 if quick else 15
        self.sample_ms = 20.0 if quick else 50.0
        self.warmup_ms = 100.0 if quick else 500.0
        self.d2d_bytes = (256 if quick else 1024) * MIB
        self.host_bytes = (64 if quick else 256) * MIB


def measure(
    run: Callable[[], Any], plan: Plan, timer: Callable[[Callable[[], Any], int], float]
) -> tuple[float, int]:
    """(median milliseconds per run, runs per sample): warm-up, calibrate, sample."""
    start = time.perf_counter()
    done = 0
    while done < 3 or (time.perf_counter() - start) * 1000 < plan.warmup_ms:
        timer(run, 1)  # each warm-up run is waited for, so wall time is execution time
        done += 1
    one = max(timer(run, 1), 1e-3)
    runs = max(1, min(10000, math.ceil(plan.sample_ms / one)))
    times = [timer(run, runs) / runs for _ in range(plan.samples)]
    return statistics.median(times), runs


def copy_record(
    path: str, nbytes: int, ms: float, runs: int, plan: Plan, placed: bool = False
) -> dict[str, Any]:
    """One copy as the parent reads it; `placed`: its host buffer is on plan.numa_node."""
    record = {
        "kind": "copy",
        "path": path,
        "bytes": nbytes,
        "median_ms": ms,
        "runs_per_sample": runs,
        "samples": plan.samples,
        "gbs": nbytes / (ms / 1000) / 1e9,
    }
    if placed:
        record["numa_node"] = plan.numa_node
    return record
