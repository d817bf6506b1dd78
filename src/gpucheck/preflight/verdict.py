"""One verdict for the job from what rank 0 saw (records.Exchange). Pure: no I/O.

The exit code follows the doctor's (exit_status.py): 1 when anything keeps the job from
running well (a rank whose doctor fails, a rank that never arrived or was lost in the
collective, a wrong sum, a straggler below --min-fraction of the median); else 3 when a rank's
doctor broke; else 5 when the job could not be judged whole (a rank's doctor could not tell,
or no collective ran); else 0.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime, timezone

from gpucheck.exit_status import ExitStatus
from gpucheck.model.plural import counted
from gpucheck.preflight.records import (
    Exchange,
    JobProblem,
    JobVerdict,
    RankReport,
    RankTime,
)

MIN_FRACTION = 0.8  # a rank slower than this share of the median rank's speed is a straggler
FIX_DOCTOR = "run `gpucheck doctor` on that node and apply its fixes"
FIX_MISSING = (
    "see the launcher's log for that rank (did it start, did it crash?); on a healthy node "
    "check that it reaches rank 0's address and port"
)


def ranks_text(ranks: Sequence[int]) -> str:
    """ "rank 3", "ranks 1, 4, 5"."""
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def judge(exchange: Exchange, min_fraction: float = MIN_FRACTION) -> JobVerdict:
    reports = sorted(exchange.reports, key=lambda r: r.rank)
    problems = _check_problems(reports)
    problems += _arrival_problems(exchange, reports)
    straggler, slowest = _straggler(exchange.times, reports, min_fraction)
    problems += straggler
    code = _exit_code(exchange, reports, problems)
    hosts = list(dict.fromkeys(r.host for r in reports))
    if code == ExitStatus.OK:
        summary = f"ready: {counted(exchange.world, 'rank')} on {counted(len(hosts), 'node')}"
    elif problems:
        summary = f"not ready: {counted(len(problems), 'problem')}"
    else:
        summary = "could not tell: " + (
            exchange.error
            or exchange.stopped
            or next((f"rank {r.rank}: {r.not_ready}" for r in reports if r.not_ready), None)
            or "no all-reduce was measured"
        )
    return JobVerdict(
        ready=code == ExitStatus.OK,
        exit_code=int(code),
        summary=summary,
        launcher=exchange.launcher,
        world=exchange.world,
        hosts=hosts,
        min_fraction=min_fraction,
        problems=problems,
        ranks=reports,
        allreduce=exchange.allreduce,
        times=sorted(exchange.times, key=lambda t: t.rank),
        slowest_rank=slowest,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


# The problems a rank is named in as the cause: its node's checks, its speed, its loss.
RANK_CAUSES = ("checks", "straggler", "lost")


def named_ranks(verdict: JobVerdict) -> list[int]:
    """The ranks --exit-for node fails (exit 1): those the verdict names as a cause; every
    rank where a problem blames none (a wrong sum, an all-reduce that did not complete with
    no rank lost), as no node can be cleared and the job must not start."""
    if any(_blames_no_rank(p) for p in verdict.problems):
        return list(range(verdict.world))
    return sorted({r for p in verdict.problems if p.kind in RANK_CAUSES for r in p.ranks})


def _blames_no_rank(problem: JobProblem) -> bool:
    return problem.kind == "collective" or (problem.kind == "lost" and not problem.ranks)


def rank_exit_code(job_code: int, named: bool) -> int:
    """A rank's exit with --exit-for node: 1 when the verdict names it; 0 when the job fails
    for another rank's sake (a prolog exiting 1 would drain a sound node); else the job's
    (3, 5: could not tell)."""
    if named:
        return ExitStatus.FAILED
    return ExitStatus.OK if job_code in (ExitStatus.OK, ExitStatus.FAILED) else job_code


def _check_problems(reports: list[RankReport]) -> list[JobProblem]:
    """Ranks whose doctor fails, grouped by node and by the same failing checks (the ranks of
    one node usually share them)."""
    groups: dict[tuple[str, tuple[str, ...]], list[RankReport]] = {}
    for report in reports:
        if report.exit_code != ExitStatus.FAILED:
            continue
        key = (report.host, tuple(sorted(f"{p.id}:{p.title}" for p in report.problems)))
        groups.setdefault(key, []).append(report)
    found = []
    for (host, _), group in groups.items():
        ranks = [r.rank for r in group]
        failing = [p for p in group[0].problems if p.status in ("fail", "error")]
        shown = failing or group[0].problems
        title = (
            f"{host} ({ranks_text(ranks)}): {counted(len(failing), 'failing check')}"
            if failing
            else f"{host} ({ranks_text(ranks)}): not ready (--strict counts warnings)"
        )
        evidence = [p.title for p in shown]
        found.append(
            JobProblem(
                kind="checks",
                title=title,
                ranks=ranks,
                hosts=[host],
                evidence=evidence,
                fix=FIX_DOCTOR,
                problems=list(shown),
            )
        )
    return found


def _arrival_problems(exchange: Exchange, reports: list[RankReport]) -> list[JobProblem]:
    found = []
    if exchange.missing:
        waited = f" within {exchange.arrival_timeout:g} s" if exchange.arrival_timeout else ""
        evidence = [f"{len(reports)} of {exchange.world} ranks posted a report{waited}"]
        if exchange.error:
            evidence.append(exchange.error)
        if exchange.stopped:
            evidence.append(exchange.stopped)
        found.append(
            JobProblem(
                kind="missing",
                title=f"{ranks_text(exchange.missing)} never arrived{waited}",
                ranks=list(exchange.missing),
                evidence=evidence,
                fix=FIX_MISSING,
            )
        )
    arrived = {r.rank for r in reports}
    timed = {t.rank for t in exchange.times}
    if exchange.allreduce is not None and not exchange.allreduce.correct:
        found.append(
            JobProblem(
                kind="collective",
                title=f"the all-reduce across {exchange.world} ranks summed wrong",
                ranks=sorted(arrived),
                evidence=[f"backend {exchange.allreduce.backend}"],
                fix="run `gpucheck doctor --deep` on every node: a wrong sum needs the GPUs "
                "and their links checked",
            )
        )
    collective_ran = not exchange.missing and arrived and exchange.error is None
    alive = timed | set(exchange.survived)
    lost = sorted(arrived - alive) if collective_ran and exchange.collective_error else []
    if collective_ran and (exchange.collective_error or (exchange.stopped and not timed)):
        evidence = [e for e in (exchange.collective_error, exchange.stopped) if e]
        title = (
            f"{ranks_text(lost)} lost in the all-reduce (crashed or hung)"
            if lost and len(lost) < len(arrived)
            else "the all-reduce did not complete"
        )
        found.append(
            JobProblem(
                kind="lost",
                title=title,
                ranks=lost,
                hosts=list(dict.fromkeys(r.host for r in reports if r.rank in lost)),
                evidence=evidence,
                fix=FIX_MISSING,
            )
        )
    return found


def _straggler(
    times: list[RankTime], reports: list[RankReport], min_fraction: float
) -> tuple[list[JobProblem], int | None]:
    """The slowest rank by its own step time, a problem below min_fraction of the median's
    speed (speed: 1 / step time)."""
    if len(times) < 2:
        return [], None
    slowest = max(times, key=lambda t: t.step_ms)
    median = statistics.median(t.step_ms for t in times)
    fraction = median / slowest.step_ms if slowest.step_ms > 0 else 1.0
    if fraction >= min_fraction:
        return [], slowest.rank
    host = next((r.host for r in reports if r.rank == slowest.rank), None)
    problem = JobProblem(
        kind="straggler",
        title=f"rank {slowest.rank} is slow: {fraction:.2f} of the median rank's speed "
        f"(below --min-fraction {min_fraction:g})",
        ranks=[slowest.rank],
        hosts=[host] if host else [],
        evidence=[
            f"step {slowest.step_ms:,.2f} ms against a median of {median:,.2f} ms",
            "every rank's step: "
            + ", ".join(
                f"{t.rank}: {t.step_ms:,.2f} ms" for t in sorted(times, key=lambda t: t.rank)
            ),
        ],
        fix="on that node: `gpucheck bench` (clocks, throttling), `gpucheck procs` (other "
        "processes on its GPU), then `gpucheck doctor`",
    )
    return [problem], slowest.rank


def _exit_code(
    exchange: Exchange, reports: list[RankReport], problems: list[JobProblem]
) -> ExitStatus:
    if problems:
        return ExitStatus.FAILED
    codes = {r.exit_code for r in reports}
    if ExitStatus.INTERNAL in codes:
        return ExitStatus.INTERNAL
    measured = exchange.allreduce is not None or exchange.world == 1
    if ExitStatus.UNKNOWN in codes or exchange.error or exchange.stopped or not measured:
        return ExitStatus.UNKNOWN
    if len(reports) < exchange.world:
        return ExitStatus.UNKNOWN
    return ExitStatus.OK
