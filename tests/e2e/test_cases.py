"""Real broken machines from public issue threads, scored against `gpucheck doctor`: each case
of tests/cases/*.json (loaded and diagnosed by support/real_cases.py) gets the verdict a correct
doctor gives. Cases the doctor still gets wrong are strict xfails, so fixing a check flips them
and the file tells. `pytest -s tests/e2e/test_cases.py` prints the score."""

from __future__ import annotations

from typing import Any

import pytest
from support.real_cases import BASELINES, CASES, ENVIRONMENTS, diagnose, judge


@pytest.fixture(scope="session")
def verdicts() -> dict[str, tuple[bool, bool, str]]:
    """Every case diagnosed once, side by side."""
    reports = [diagnose(case) for case in CASES]
    return {c["_slug"]: judge(c, r) for c, r in zip(CASES, reports, strict=True)}


def _param(case: dict[str, Any]) -> Any:
    marks = []
    if case.get("known_wrong"):
        marks.append(pytest.mark.xfail(strict=True, reason=case.get("why_wrong", "known wrong")))
    return pytest.param(case, id=case["_slug"], marks=marks)


def test_the_corpus_is_well_formed() -> None:
    keys = {"url", "title", "class", "facts", "expected", "snapshot", "known_wrong"}
    assert len(CASES) >= 98
    for case in CASES:
        missing = keys - case.keys()
        assert not missing, (case["_slug"], missing)
        assert case["url"].startswith("https://"), case["_slug"]
        assert case["facts"], case["_slug"]
        assert case["expected"]["status"] in ("fail", "warn", "ready"), case["_slug"]
        if case["expected"]["status"] == "ready":  # healthy: the thread's problem was elsewhere
            assert case["class"] == "healthy", case["_slug"]
        else:
            assert {"check", "layer"} <= case["expected"].keys(), case["_slug"]
        assert case.get("baseline", "h100x1") in BASELINES, case["_slug"]
        assert all(e.partition(":")[0] in ENVIRONMENTS for e in case.get("environments", [])), case[
            "_slug"
        ]
        if case["known_wrong"]:
            assert case.get("why_wrong"), case["_slug"]
        # the merged snapshot is one the doctor reads (strict decoding), checked in the run


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_real_case(case: dict[str, Any], verdicts: dict[str, tuple[bool, bool, str]]) -> None:
    verdict, right_fix, said = verdicts[case["_slug"]]
    want = case["expected"]
    if want["status"] == "ready":
        assert verdict, f"a healthy machine got a FAIL: {said}"
        return
    assert verdict, f"wanted {want['check']} {want['status']} in {want['layer']}; got {said}"
    assert right_fix, f"fix should contain {want.get('fix_contains')}; got {said}"


def test_score(verdicts: dict[str, tuple[bool, bool, str]]) -> None:
    """Prints the score (visible with `pytest -s`)."""
    total = len(verdicts)
    right = sum(v for v, _, _ in verdicts.values())
    fixes = sum(f for _, f, _ in verdicts.values())
    print(f"\nreal cases: {right} right of {total} (verdict), {fixes} right fix")
    by_class: dict[str, list[int]] = {}
    for case in CASES:
        v, f, _ = verdicts[case["_slug"]]
        row = by_class.setdefault(case["class"], [0, 0, 0])
        row[0] += 1
        row[1] += int(v)
        row[2] += int(f)
    for name, (n, nv, nf) in sorted(by_class.items()):
        print(f"  {name:32} {nv}/{n} verdict, {nf}/{n} fix")
    # A known-wrong case that is now right must lose its mark (strict xfail says so too).
    assert total == len(CASES)
