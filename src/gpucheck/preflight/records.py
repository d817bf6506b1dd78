"""What the ranks exchange and what rank 0 concludes: plain records, JSON on the wire (the
TCP store between the ranks) and in `preflight --json`."""

from __future__ import annotations

from msgspec import Struct, field

# Of preflight's JSON output (`gpucheck schema preflight`).
PREFLIGHT_SCHEMA_VERSION = "1.0"


class RankProblem(Struct, frozen=True, kw_only=True):
    """One finding of a rank's doctor that keeps the job from being ready."""

    id: str  # the doctor's check id (torch.arch-support)
    status: str  # warn, fail or error
    title: str
    fix: str | None = None  # the fix as one sentence with its commands
    gpus: list[int] = field(default_factory=list)  # NVML indices it concerns


class RankReport(Struct, kw_only=True):
    """What one rank posts: where it runs and its node's doctor verdict."""

    rank: int
    local_rank: int | None = None
    host: str
    exit_code: int  # the doctor's, on this rank's node (exit_status.py)
    gpus: list[str] = field(default_factory=list)  # "0 NVIDIA H100 80GB HBM3 (sm_90)"
    python: str | None = None  # the interpreter whose torch joins the job
    torch: str | None = None  # its torch version
    problems: list[RankProblem] = field(default_factory=list)
    not_ready: str | None = None  # why the doctor is not ready without a failure (exit 5)


class RankTime(Struct, frozen=True, kw_only=True):
    """One rank's own timings, to find stragglers."""

    rank: int
    step_ms: float  # its fastest local step (a 512 x 512 matmul on its device)
    allreduce_ms: float  # its own time per all-reduce (waiting for the others included)


class AllReduce(Struct, frozen=True, kw_only=True):
    """The job-wide all-reduce, as nccl-tests counts it (gpucheck/child/collective.py)."""

    backend: str  # nccl or gloo
    world: int
    bytes: int
    iterations: int
    ms_per_op: float  # the slowest rank's
    algbw_gbs: float
    busbw_gbs: float
    correct: bool


class Exchange(Struct, kw_only=True):
    """What rank 0 saw of the job, whole or cut short."""

    world: int
    launcher: str
    backend: str | None = None
    reports: list[RankReport] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # ranks that never posted a report
    arrival_timeout: float | None = None  # seconds rank 0 waited for them
    allreduce: AllReduce | None = None
    times: list[RankTime] = field(default_factory=list)
    survived: list[int] = field(default_factory=list)  # alive after a failed collective
    collective_error: str | None = None  # what rank 0's collective raised
    stopped: str | None = None  # why the exchange ended early (a signal, a dead child)
    error: str | None = None  # why no exchange ran at all (no torch, no store)


class JobProblem(Struct, frozen=True, kw_only=True):
    """One reason the job is not ready."""

    kind: str  # checks, missing, lost, straggler, collective, exchange
    title: str
    ranks: list[int] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    fix: str | None = None
    problems: list[RankProblem] = field(default_factory=list)  # the failing checks (checks)


class JobVerdict(Struct, kw_only=True):
    """The one verdict for the job, printed by rank 0."""

    schema_version: str = PREFLIGHT_SCHEMA_VERSION
    ready: bool
    exit_code: int
    summary: str  # one line
    launcher: str
    world: int
    hosts: list[str] = field(default_factory=list)  # the nodes that reported
    min_fraction: float
    problems: list[JobProblem] = field(default_factory=list)
    ranks: list[RankReport] = field(default_factory=list)
    allreduce: AllReduce | None = None
    times: list[RankTime] = field(default_factory=list)
    slowest_rank: int | None = None
    created_at: str = ""
