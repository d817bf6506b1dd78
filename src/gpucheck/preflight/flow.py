"""`gpucheck preflight`'s flow, on every rank the engine starts: where this rank stands
(launcher.py), the doctor on its node, the exchange with the other ranks (rendezvous.py), and
on rank 0 the job's verdict (verdict.py). Bad input raises UserError (exit 2).

Every rank runs its own doctor, not one per node: a rank's view is its own (its
CUDA_VISIBLE_DEVICES, its interpreter), the default pass takes about a second, and sharing one
probe per node would need a node-local exchange first and let local rank 0's failure blind
the ranks beside it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from msgspec import Struct

from gpucheck.child.run import kill_all
from gpucheck.diagnosis.flow import run as run_doctor
from gpucheck.diagnosis.request import Caller, DoctorRequest, RequestError
from gpucheck.exit_status import ExitStatus
from gpucheck.inputs import UserError, check_number
from gpucheck.model.frameworks import TORCH
from gpucheck.preflight import rendezvous
from gpucheck.preflight.launcher import Placement, placement
from gpucheck.preflight.records import Exchange, JobVerdict, RankProblem, RankReport
from gpucheck.preflight.verdict import MIN_FRACTION, judge, named_ranks, rank_exit_code
from gpucheck.probes.framework_python import find
from gpucheck.probes.frameworks import PythonNotFound
from gpucheck.report.core import Report

ALLREDUCE_BYTES = 16 * 2**20  # one size: large enough for a bandwidth, small for CPU ranks
ITERATIONS = 10
STEPS = 20  # local steps each rank times, for stragglers
# Shares of the time left after the doctor: waiting for the ranks to arrive, then for the
# collective; the rest is for handing out the verdict.
ARRIVAL_SHARE, COLLECTIVE_SHARE = 0.5, 0.3
EXIT_FOR = ("job", "node")
# How long past its budget another rank waits for rank 0's verdict: inside the Slurm wrapper's
# 10 s margin (it passes --timeout TIMEOUT - 10 and kills at TIMEOUT), so a follower whose rank
# 0 went dark says so and exits 5 itself rather than be killed, which would drain its node.
FOLLOWER_GRACE = 5.0


class PreflightRequest(Struct, frozen=True, kw_only=True):
    timeout: float = 120.0  # seconds the whole job's preflight may take
    probe_timeout: float = 15.0  # seconds each doctor probe may take
    min_fraction: float = MIN_FRACTION
    master_addr: str | None = None
    master_port: int | None = None
    python: str | None = None  # the interpreter whose torch joins the job
    strict: bool = False
    skip: tuple[str, ...] = ()  # the doctor's checks not to run (ids, prefixes or sections)
    job_pids: str | None = None  # the doctor's --job-pids: running jobs' GPU use is normal
    # Every rank's exit: the job's verdict ("job"), or its own share of it ("node": 1 only
    # where the verdict names this rank, as a prolog needs: Slurm drains the node it runs on).
    exit_for: str = "job"
    allreduce_bytes: int = ALLREDUCE_BYTES
    compat_dirs: tuple[str, ...] = ()


class Outcome(Struct, kw_only=True):
    """Rank 0's verdict (printed), or another rank's exit code and its one line."""

    placement: Placement
    exit_code: int
    verdict: JobVerdict | None = None
    message: str | None = None  # another rank's note on stderr (no verdict reached it)


def run(request: PreflightRequest, env: Mapping[str, str] | None = None) -> Outcome:
    """This rank's part; on rank 0 the job's verdict. A SIGTERM from the launcher (torchrun
    stops every rank once one fails) ends it early, rank 0 still answering with what it has."""
    env = dict(os.environ if env is None else env)
    try:
        check_number(request.timeout, "--timeout", 5, 3600)
        check_number(request.min_fraction, "--min-fraction", 0, 1)
        check_number(request.allreduce_bytes, "--size", 4, 2**40, integer=True)
    except (TypeError, ValueError) as exc:
        raise UserError(str(exc)) from None
    if request.exit_for not in EXIT_FOR:
        raise UserError(f"--exit-for {request.exit_for}: expected one of {', '.join(EXIT_FOR)}")
    where = placement(env, request.master_addr, request.master_port)
    exchange = Exchange(world=where.world, launcher=where.launcher)
    with rendezvous.stopped_by_signal() as stop:
        try:
            code, named, message = _take_part(request, env, where, exchange, stop)
        except rendezvous.LauncherStopped:
            kill_all()  # the doctor's probe children
            exchange.stopped = rendezvous.STOPPED
            code, named, message = ExitStatus.UNKNOWN, False, rendezvous.STOPPED
    if where.rank != 0:
        if request.exit_for == "node":
            code = rank_exit_code(code, named)
        return Outcome(placement=where, exit_code=code, message=message)
    seen = {r.rank for r in exchange.reports}
    if exchange.stopped and not exchange.missing and len(seen) < where.world:
        exchange.missing = [r for r in range(where.world) if r not in seen and r != 0]
    verdict = judge(exchange, request.min_fraction)
    code = verdict.exit_code
    if request.exit_for == "node":
        code = rank_exit_code(code, where.rank in named_ranks(verdict))
    return Outcome(placement=where, exit_code=code, verdict=verdict)


def _take_part(
    request: PreflightRequest,
    env: dict[str, str],
    where: Placement,
    exchange: Exchange,
    stop: rendezvous.Stop,
) -> tuple[int, bool, str | None]:
    """The doctor, then the exchange; rank 0 fills `exchange`, another rank returns the job's
    exit code rank 0 handed out, whether it named this rank, and a line when none came."""
    start = time.monotonic()
    report = _doctor(request)
    mine = rank_report(where, report)
    try:
        found = find(env, request.python, (TORCH.key,), request.probe_timeout)
    except PythonNotFound as exc:
        raise UserError(str(exc)) from None
    budget = max(1.0, request.timeout - (time.monotonic() - start))
    if found.python is None:
        looked = ", ".join(found.looked_at) or "none"
        exchange.error = f"no interpreter with torch to join the job (looked at: {looked})"
        exchange.reports.append(mine)
        # No rank is missing: this one could not join, so nobody could tell who would have.
        return ExitStatus.UNKNOWN, False, exchange.error
    mine.python, mine.torch = found.python, found.version
    args = {
        "rank": where.rank,
        "world": where.world,
        "local_rank": where.local_rank,
        "addr": where.master_addr,
        "port": where.master_port,
        "arrival_timeout": budget * ARRIVAL_SHARE,
        "collective_timeout": budget * COLLECTIVE_SHARE,
        "size": request.allreduce_bytes,
        "iterations": ITERATIONS,
        "steps": STEPS,
    }
    stop.raising = False  # from here a SIGTERM ends the exchange, which keeps what it has
    if where.rank != 0:
        return rendezvous.follow(found.python, args, mine, env, budget + FOLLOWER_GRACE, stop.event)

    def decide(seen: Exchange) -> tuple[int, list[int]]:
        verdict = judge(seen, request.min_fraction)
        return verdict.exit_code, named_ranks(verdict)

    rendezvous.lead(found.python, args, mine, env, exchange, budget, decide, stop.event)
    if not exchange.reports:
        exchange.reports.append(mine)
    return ExitStatus.OK, False, None


def _doctor(request: PreflightRequest) -> Report:
    try:
        return run_doctor(
            DoctorRequest(
                pythons=(request.python,) if request.python else (),
                timeout=request.probe_timeout,
                strict=request.strict,
                skip=request.skip,
                job_pids=request.job_pids,
                compat_dirs=request.compat_dirs,
                caller=Caller.COMMAND_LINE,
            )
        )
    except RequestError as exc:
        raise UserError(str(exc)) from None


def rank_report(where: Placement, report: Report) -> RankReport:
    """What this rank posts: its place and its doctor's verdict, the problems alone."""
    gpus = []
    for gpu in report.snapshot.nvml.gpus:
        cc = f" (sm_{gpu.compute_capability.replace('.', '')})" if gpu.compute_capability else ""
        gpus.append(f"{gpu.index} {gpu.name or 'unknown GPU'}{cc}")
    problems = [
        RankProblem(
            id=f.id,
            status=f.status.value,
            title=f.title,
            fix=f.fix.text if f.fix else None,
            gpus=[g.index for g in f.subjects.gpus],
        )
        for f in report.problems
    ]
    return RankReport(
        rank=where.rank,
        local_rank=where.local_rank,
        host=report.snapshot.system.hostname or where.host,
        exit_code=report.exit_code,
        gpus=gpus,
        problems=problems,
        not_ready=report.not_ready_reason,
    )
