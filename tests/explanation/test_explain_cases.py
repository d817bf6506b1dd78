"""`gpucheck explain` on the error texts of the real cases (tests/cases/*.json): each case's
thread title and the facts it quotes are the text a person would paste; the layer the doctor
blames for that machine (`expected.layer`) is the one explain's first finding should name, and
its fix should hold what the doctor's must (`expected.fix_contains`). Scored twice: the text
alone, and the text with the case's machine joined (its snapshot, as `--from` gives it).
`pytest -s tests/explanation/test_explain_cases.py` prints both scores side by side, as
tests/e2e/test_cases.py prints the doctor's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from msgspec import Struct
from support.real_cases import snapshot_for

from gpucheck.compat import load
from gpucheck.explanation import explain
from gpucheck.model.decoding import to_dict
from gpucheck.model.snapshot import Snapshot, loads

CASES_DIR = Path(__file__).parents[1] / "cases"
# The score as measured: explain must not fall below it (raise it when a message is added).
RIGHT_AT_LEAST = 34
RIGHT_FIX_AT_LEAST = 10
WRONG_AT_MOST = 1
# With the case's snapshot joined: the right layer first, and the fix the doctor's must hold.
JOINED_RIGHT_AT_LEAST = 34
JOINED_RIGHT_FIX_AT_LEAST = 34


class Scored(Struct):
    """One case: the layer explain names first (None: no known message), whether its fix holds
    the case's expected fix, the text alone and with the snapshot; the doctor's layer."""

    layer: str | None
    fix: bool
    joined_layer: str | None
    joined_fix: bool
    want: str | None


def case_texts() -> dict[str, tuple[str, str | None]]:
    """Each case's name -> (the text: its title and quoted facts, one a line; the layer the
    doctor blames, None for a healthy machine)."""
    texts = {}
    for path in sorted(CASES_DIR.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        text = "\n".join([case.get("title", ""), *case.get("facts", [])])
        texts[path.stem] = (text, case["expected"].get("layer"))
    return texts


def _first(text: str, snapshot: Snapshot | None, want_fix: list[str]) -> tuple[str | None, bool]:
    result = explain(text, load(), snapshot)
    if not result.findings:
        return None, False
    first = result.findings[0]
    fix = to_dict(first.fix) if first.fix else {}
    said = " ".join([fix.get("text") or "", *(s.get("command") or "" for s in fix["steps"])])
    return first.section.value, bool(want_fix) and all(w in said for w in want_fix)


def verdicts() -> dict[str, Scored]:
    """Each case scored, the text alone and with the case's machine joined."""
    found = {}
    for path in sorted(CASES_DIR.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        text = "\n".join([case.get("title", ""), *case.get("facts", [])])
        want = case["expected"].get("layer")
        want_fix = list(case["expected"].get("fix_contains", []))
        snapshot = loads(json.dumps(snapshot_for(case)))
        layer, fix = _first(text, None, want_fix)
        joined_layer, joined_fix = _first(text, snapshot, want_fix)
        found[path.stem] = Scored(layer, fix, joined_layer, joined_fix, want)
    return found


@pytest.fixture(scope="module")
def scored() -> dict[str, Scored]:
    return verdicts()


def test_the_cases_hold_error_texts() -> None:
    texts = case_texts()
    assert len(texts) >= 100
    assert "no kernel image is available" in texts["all-in-one-35-5090-torch250-cu121"][0]


def test_score(scored: dict[str, Scored]) -> None:
    """Prints the scores (visible with `pytest -s`), the text alone beside the text with the
    case's snapshot, and holds their floors."""
    explained = {n: v for n, v in scored.items() if v.layer is not None and v.want is not None}
    right = [n for n, v in explained.items() if v.layer == v.want]
    wrong = sorted(
        f"{n}: {v.layer} (doctor: {v.want})" for n, v in explained.items() if v.layer != v.want
    )
    joined = {n: v for n, v in scored.items() if v.joined_layer is not None and v.want is not None}
    joined_right = [n for n, v in joined.items() if v.joined_layer == v.want]
    right_fix = [n for n, v in explained.items() if v.fix]
    joined_fix = [n for n, v in joined.items() if v.joined_fix]
    print(
        f"\nexplain on real cases ({len(scored)}; {sum(v.layer is None for v in scored.values())} "
        "quote no known message):\n"
        f"  text alone       : {len(right)} right layer first of {len(explained)}, "
        f"{len(right_fix)} right fix\n"
        f"  with the snapshot: {len(joined_right)} right layer first of {len(joined)}, "
        f"{len(joined_fix)} right fix"
    )
    for line in wrong:
        print(f"  other layer: {line}")
    assert len(right) >= RIGHT_AT_LEAST
    assert len(wrong) <= WRONG_AT_MOST, wrong
    assert len(right_fix) >= RIGHT_FIX_AT_LEAST
    assert len(joined_right) >= JOINED_RIGHT_AT_LEAST
    assert len(joined_fix) >= JOINED_RIGHT_FIX_AT_LEAST


@pytest.mark.parametrize(
    ("case", "layer"),
    [
        ("all-in-one-35-5090-torch250-cu121", "frameworks"),  # sm_120 + no kernel image
        ("nougat-115-wsl2-cudnn8-libcuda-so", "cuda"),  # libcuda.so missing, not cuDNN
        ("gpustack-1254-error-804-driver-535", "cuda"),  # 804: the compat libcuda
        ("az-hop-269-nvml-mismatch-465", "driver"),
    ],
)
def test_known_cases_name_the_doctors_layer_first(
    scored: dict[str, Scored], case: str, layer: str
) -> None:
    assert (scored[case].layer, scored[case].joined_layer, scored[case].want) == (layer,) * 3


def test_the_snapshot_decides_the_fix_the_text_alone_cannot(scored: dict[str, Scored]) -> None:
    # An RTX 5070 Ti (sm_120) with a cu121 nightly: the thread's text names no capability;
    # only the snapshot's GPU and driver name the build to install.
    case = scored["pytorch-153928-5070ti-nightly-cu121"]
    assert (case.fix, case.joined_fix) == (False, True)
