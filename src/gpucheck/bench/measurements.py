"""What a bench run measured, per GPU and for the CPU, and the NVML facts seen while it ran."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpucheck.model.decoding import DecodeError, from_dict
from gpucheck.model.snapshot import GpuFacts

DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")


@dataclass
class Matmul:
    dtype: str
    device: str  # "cuda" | "cpu"
    n: int
    median_ms: float
    tflops: float
    correct: bool
    tolerance: float
    rel_error: float | None = None  # None: the result held NaN/Inf (or was not checked: numpy)
    runs_per_sample: int = 1
    samples: int = 1
    m: int | None = None  # rows of A: a skinny m x n times n x n (LLM decode); None: square


@dataclass
class SustainedPoint:
    """One second of the sustained run (bench --duration): the matmul's rate then."""

    dtype: str
    n: int
    t: float  # seconds since the sustained run began (end of this window)
    tflops: float


@dataclass
class Copy:
    path: str  # d2d | h2d_pinned | d2h_pinned | h2d_pageable | d2h_pageable
    bytes: int  # moved per run (d2d: read + write)
    median_ms: float
    gbs: float  # 10^9 bytes/s
    runs_per_sample: int = 1
    samples: int = 1
    numa_node: int | None = None  # the host buffer was placed on this (the GPU's) NUMA node


@dataclass
class Peer:
    src: int  # NVML indices of the GPUs
    dst: int
    peer_access: bool
    bytes: int
    median_ms: float
    gbs: float


@dataclass
class AllReduce:
    """One size of the all-reduce test (torch.distributed), as nccl-tests counts it."""

    backend: str  # nccl | gloo
    world: int  # ranks (GPUs)
    bytes: int
    iterations: int
    ms_per_op: float  # the slowest rank's mean
    algbw_gbs: float  # bytes / time
    busbw_gbs: float  # algbw * 2 (n - 1) / n: what each link carries in a ring
    correct: bool  # the sum arrived right on every rank


@dataclass
class Sample:
    """NVML read once during a GPU's run (bench --duration keeps them all)."""

    t: float  # seconds since the GPU's child started
    clock_sm_mhz: int | None = None
    power_draw_w: float | None = None
    temperature_c: int | None = None
    utilization_gpu: int | None = None
    clock_event_reasons: list[str] = field(default_factory=list)


@dataclass
class DuringRun:
    """NVML facts sampled while the child ran (under load), merged over the samples."""

    samples: int = 0
    clock_event_reasons: list[str] = field(default_factory=list)  # every reason seen active
    pcie_gen_loaded: int | None = None  # the best generation seen under load (>= 50% busy)
    pcie_width_loaded: int | None = None  # the best width seen under load
    temperature_max_c: int | None = None
    power_draw_max_w: float | None = None
    timeline: list[Sample] = field(default_factory=list)  # every sample, with --duration


@dataclass
class GpuRun:
    facts: GpuFacts  # NVML, read before the run (identity, link maxima, others' processes)
    framework: str | None = None
    framework_version: str | None = None
    matmuls: list[Matmul] = field(default_factory=list)
    copies: list[Copy] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # dtype -> why not measured
    sustained: list[SustainedPoint] = field(default_factory=list)  # --duration, per second
    errors: list[str] = field(default_factory=list)  # a measurement that broke
    problem: str | None = None  # the child timed out, crashed, or could not start
    during: DuringRun = field(default_factory=DuringRun)

    def matmul(self, dtype: str) -> Matmul | None:
        """The square matmul of `dtype` (the one judged against the datasheet)."""
        return next((m for m in self.matmuls if m.dtype == dtype and m.m is None), None)

    def skinny(self, dtype: str) -> list[Matmul]:
        return [m for m in self.matmuls if m.dtype == dtype and m.m is not None]

    def copy(self, path: str) -> Copy | None:
        return next((c for c in self.copies if c.path == path), None)


@dataclass
class CpuRun:
    framework: str | None = None
    matmul: Matmul | None = None
    problem: str | None = None


@dataclass
class BenchRun:
    quick: bool
    python: str | None  # the interpreter measured in
    framework: str | None  # torch | cupy
    framework_version: str | None
    cpu: CpuRun
    gpus: list[GpuRun] = field(default_factory=list)
    peers: list[Peer] = field(default_factory=list)
    peer_problem: str | None = None
    allreduce: list[AllReduce] = field(default_factory=list)  # 2+ GPUs, torch
    allreduce_problem: str | None = None
    no_gpu_reason: str | None = None  # set when there was no GPU to measure
    # The interpreters looked in where GPUs are here but neither torch nor CuPy is: the
    # measurements cannot run, and the GPU is not to blame.
    no_framework_in: list[str] = field(default_factory=list)
    duration: float = 0.0  # seconds of the sustained run per GPU (--duration; 0: none)


def absorb(run: GpuRun, records: list[dict[str, Any]]) -> None:
    """Fold the child's records into `run`; a malformed record becomes an error line."""
    for record in records:
        kind = record.get("kind")
        try:
            if kind == "framework":
                run.framework = str(record.get("name"))
                version = record.get("version")
                run.framework_version = str(version) if version is not None else None
            elif kind == "matmul":
                run.matmuls.append(from_dict(Matmul, _fields(record)))
            elif kind == "copy":
                run.copies.append(from_dict(Copy, _fields(record)))
            elif kind == "sustained":
                run.sustained.append(from_dict(SustainedPoint, _fields(record)))
            elif kind == "skip":
                run.skipped[str(record.get("what"))] = str(record.get("why"))
            elif kind == "error":
                run.errors.append(f"{record.get('what')}: {record.get('message')}")
        except DecodeError as exc:
            run.errors.append(f"unreadable {kind} record from the child: {exc}")


def _fields(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "kind"}


def peers_from(records: list[dict[str, Any]], gpus: tuple[int, int]) -> list[Peer]:
    """The peer records of a two-GPU child, its local 0/1 mapped back to NVML indices."""
    out = []
    for record in records:
        if record.get("kind") != "peer":
            continue
        try:
            local = _fields(record)
            local["src"] = gpus[int(record["src"])]
            local["dst"] = gpus[int(record["dst"])]
            out.append(from_dict(Peer, local))
        except (DecodeError, KeyError, IndexError, TypeError, ValueError):
            continue
    return out


def allreduce_from(records: list[dict[str, Any]]) -> tuple[list[AllReduce], str | None]:
    """The all-reduce child's figures, and its first error."""
    found, problem = [], None
    for record in records:
        if record.get("kind") == "allreduce":
            try:
                found.append(from_dict(AllReduce, _fields(record)))
            except DecodeError as exc:
                problem = problem or f"unreadable result: {exc}"
        elif record.get("kind") == "error":
            problem = problem or f"{record.get('what')}: {record.get('message')}"
    return found, problem


def cpu_from(records: list[dict[str, Any]]) -> CpuRun:
    cpu = CpuRun()
    for record in records:
        if record.get("kind") == "framework":
            cpu.framework = str(record.get("name"))
        elif record.get("kind") == "matmul":
            try:
                cpu.matmul = from_dict(Matmul, _fields(record))
            except DecodeError as exc:
                cpu.problem = f"unreadable result: {exc}"
        elif record.get("kind") == "error":
            cpu.problem = f"{record.get('what')}: {record.get('message')}"
    return cpu
