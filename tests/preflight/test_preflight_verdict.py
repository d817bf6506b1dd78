"""The job's one verdict from what rank 0 saw: ready, or which nodes, ranks and GPUs are not
and why, with the doctor's exit-code rule (1 not ready, 3 broke, 5 could not tell)."""

from __future__ import annotations

import io
import json
from xml.etree import ElementTree as ET

import jsonschema

from gpucheck.preflight.records import AllReduce, Exchange, RankProblem, RankReport, RankTime
from gpucheck.preflight.report import preflight_schema, render_json, render_junit, render_text
from gpucheck.preflight.verdict import judge, named_ranks, rank_exit_code

ARCH = RankProblem(
    id="frameworks.torch.arch-support",
    status="fail",
    title="torch 2.1.0+cu118 has no code for sm_90: it cannot run on GPU 0",
    fix="pip install torch==2.4.0 --index-url https://download.pytorch.org/whl/cu124",
    gpus=[0],
)


def rank(r: int, host: str, code: int = 0, problems: list[RankProblem] | None = None) -> RankReport:
    return RankReport(rank=r, local_rank=r % 2, host=host, exit_code=code, problems=problems or [])


def allreduce(world: int = 4, correct: bool = True) -> AllReduce:
    return AllReduce(
        backend="gloo",
        world=world,
        bytes=16 * 2**20,
        iterations=10,
        ms_per_op=40.0,
        algbw_gbs=0.42,
        busbw_gbs=0.63,
        correct=correct,
    )


def times(*steps: float) -> list[RankTime]:
    return [RankTime(rank=r, step_ms=s, allreduce_ms=40.0) for r, s in enumerate(steps)]


def healthy(**changes: object) -> Exchange:
    exchange = Exchange(
        world=4,
        launcher="torchrun",
        backend="gloo",
        reports=[rank(0, "a"), rank(1, "a"), rank(2, "b"), rank(3, "b")],
        allreduce=allreduce(),
        times=times(10.0, 10.5, 9.8, 11.0),
    )
    for name, value in changes.items():
        setattr(exchange, name, value)
    return exchange


def test_every_rank_ready_and_measured_is_ready() -> None:
    verdict = judge(healthy())
    assert (verdict.ready, verdict.exit_code, verdict.problems) == (True, 0, [])
    assert verdict.summary == "ready: 4 ranks on 2 nodes"
    assert verdict.hosts == ["a", "b"] and verdict.slowest_rank == 3


def test_failing_checks_name_the_node_its_ranks_and_the_gpu() -> None:
    bad = [rank(2, "b", 1, [ARCH]), rank(3, "b", 1, [ARCH])]
    verdict = judge(healthy(reports=[rank(0, "a"), rank(1, "a"), *bad]))
    assert verdict.exit_code == 1 and not verdict.ready
    (problem,) = verdict.problems
    assert (problem.kind, problem.ranks, problem.hosts) == ("checks", [2, 3], ["b"])
    assert problem.title == "b (ranks 2, 3): 1 failing check"
    text = io.StringIO()
    render_text(verdict, text)
    assert "no code for sm_90: it cannot run on GPU 0 (GPU 0)" in text.getvalue()
    assert "fix: pip install torch==2.4.0" in text.getvalue()


def test_ranks_that_never_arrived_are_named_with_the_wait() -> None:
    verdict = judge(
        healthy(
            reports=[rank(0, "a"), rank(1, "a")],
            missing=[2, 3],
            arrival_timeout=30.0,
            allreduce=None,
            times=[],
        )
    )
    (problem,) = verdict.problems
    assert problem.title == "ranks 2, 3 never arrived within 30 s"
    assert problem.evidence[0] == "2 of 4 ranks posted a report within 30 s"
    assert verdict.exit_code == 1


def test_a_rank_lost_in_the_collective_is_named() -> None:
    lost = healthy(
        allreduce=None,
        times=times(10.0, 10.0, 10.0),
        collective_error="Connection closed by peer [127.0.0.1]:40000",
    )
    verdict = judge(lost)
    (problem,) = verdict.problems
    assert (problem.kind, problem.ranks, problem.hosts) == ("lost", [3], ["b"])
    assert problem.title == "rank 3 lost in the all-reduce (crashed or hung)"
    assert verdict.exit_code == 1
    # No rank timed anything, but three said their collective failed: the fourth is lost.
    survivors = healthy(
        allreduce=None, times=[], survived=[0, 2, 1], collective_error="Connection closed by peer"
    )
    (problem,) = judge(survivors).problems
    assert (problem.kind, problem.ranks) == ("lost", [3])


def test_a_straggler_below_the_fraction_of_the_median_fails() -> None:
    verdict = judge(healthy(times=times(10.0, 10.0, 10.0, 40.0)), min_fraction=0.8)
    (problem,) = verdict.problems
    assert (problem.kind, problem.ranks) == ("straggler", [3])
    assert problem.title.startswith("rank 3 is slow: 0.25 of the median rank's speed")
    # Above the fraction: named as the slowest, not a problem.
    assert judge(healthy(times=times(10.0, 10.0, 10.0, 12.0))).exit_code == 0


def test_a_wrong_sum_fails() -> None:
    verdict = judge(healthy(allreduce=allreduce(correct=False)))
    assert [p.kind for p in verdict.problems] == ["collective"] and verdict.exit_code == 1


def test_no_torch_anywhere_is_could_not_tell_for_a_ready_node() -> None:
    alone = Exchange(
        world=1,
        launcher="none",
        reports=[rank(0, "a")],
        error="no interpreter with torch to join the job (looked at: /usr/bin/python3)",
    )
    verdict = judge(alone)
    assert verdict.exit_code == 5
    assert verdict.summary.startswith("could not tell: no interpreter with torch")


def test_a_rank_whose_doctor_broke_is_exit_3() -> None:
    verdict = judge(healthy(reports=[rank(0, "a"), rank(1, "a", 3), rank(2, "b"), rank(3, "b")]))
    assert verdict.exit_code == 3


def test_json_matches_its_published_schema_and_junit_fails_the_node() -> None:
    bad = [rank(2, "b", 1, [ARCH]), rank(3, "b", 1, [ARCH])]
    verdict = judge(healthy(reports=[rank(0, "a"), rank(1, "a"), *bad], missing=[]))
    out = io.StringIO()
    render_json(verdict, out)
    data = json.loads(out.getvalue())
    jsonschema.Draft202012Validator(preflight_schema()).validate(data)
    assert data["exit_code"] == 1 and data["problems"][0]["problems"][0]["gpus"] == [0]
    xml = io.StringIO()
    render_junit(verdict, xml)
    suite = ET.fromstring(xml.getvalue()).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["b"]


def test_exit_for_node_fails_only_the_ranks_the_verdict_names() -> None:
    bad = [rank(2, "b", 1, [ARCH]), rank(3, "b")]
    verdict = judge(
        healthy(reports=[rank(0, "a"), rank(1, "a"), *bad], times=times(10.0, 40.0, 10.0, 10.0))
    )
    assert named_ranks(verdict) == [1, 2]  # a straggler and a failing node
    assert [rank_exit_code(verdict.exit_code, r in (1, 2)) for r in range(4)] == [0, 1, 1, 0]
    # Could not tell stays could not tell: nobody is named, nobody is cleared.
    assert rank_exit_code(5, False) == 5


def test_exit_for_node_fails_every_rank_when_the_verdict_blames_none() -> None:
    wrong_sum = judge(healthy(allreduce=allreduce(correct=False)))
    assert named_ranks(wrong_sum) == [0, 1, 2, 3]
    unfinished = judge(
        healthy(allreduce=None, times=[], survived=[0, 1, 2, 3], collective_error="timed out")
    )
    (problem,) = unfinished.problems
    assert (problem.title, problem.ranks) == ("the all-reduce did not complete", [])
    assert named_ranks(unfinished) == [0, 1, 2, 3]
    codes = [rank_exit_code(unfinished.exit_code, r in named_ranks(unfinished)) for r in range(4)]
    assert codes == [1, 1, 1, 1]


def test_the_last_line_follows_the_exit_code() -> None:
    no_torch = Exchange(
        world=2,
        launcher="torchrun",
        reports=[rank(0, "a")],
        error="no interpreter with torch to join the job (looked at: /usr/bin/python3)",
    )
    text = io.StringIO()
    render_text(judge(no_torch), text)
    last = text.getvalue().splitlines()[-1]
    assert last == (
        "Could not tell: no interpreter with torch to join the job (looked at: /usr/bin/python3)"
    )
    failing = io.StringIO()
    render_text(judge(healthy(allreduce=allreduce(correct=False))), failing)
    assert failing.getvalue().splitlines()[-1] == "Not ready: 1 problem"
