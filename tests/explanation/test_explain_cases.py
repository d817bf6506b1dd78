"""`gpucheck explain` on the error texts of the real cases (tests/cases/*.json): each case's
thread title and the facts it quotes are the text a person would paste; the layer the doctor
blames for that machine (`expected.layer`) is the one explain's first finding should name.
`pytest -s tests/test_explain_cases.py` prints the score, as tests/test_cases.py prints the
doctor's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpucheck.compat import load
from gpucheck.explanation import explain

CASES_DIR = Path(__file__).parents[1] / "cases"
# The score as measured: explain must not fall below it (raise it when a message is added).
RIGHT_AT_LEAST = 33
WRONG_AT_MOST = 1


def case_texts() -> dict[str, tuple[str, str | None]]:
    """Each case's name -> (the text: its title and quoted facts, one a line; the layer the
    doctor blames, None for a healthy machine)."""
    texts = {}
    for path in sorted(CASES_DIR.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        text = "\n".join([case.get("title", ""), *case.get("facts", [])])
        texts[path.stem] = (text, case["expected"].get("layer"))
    return texts


def verdicts() -> dict[str, tuple[str | None, str | None]]:
    """Each case -> (the layer explain names first, or None: no known message; the expected)."""
    compat = load()
    found = {}
    for name, (text, layer) in case_texts().items():
        result = explain(text, compat)
        first = result.findings[0].section.value if result.findings else None
        found[name] = (first, layer)
    return found


@pytest.fixture(scope="module")
def scored() -> dict[str, tuple[str | None, str | None]]:
    return verdicts()


def test_the_cases_hold_error_texts() -> None:
    texts = case_texts()
    assert len(texts) >= 100
    assert "no kernel image is available" in texts["all-in-one-35-5090-torch250-cu121"][0]


def test_score(scored: dict[str, tuple[str | None, str | None]]) -> None:
    """Prints the score (visible with `pytest -s`) and holds its floor."""
    explained = {n: v for n, v in scored.items() if v[0] is not None and v[1] is not None}
    right = [n for n, (got, want) in explained.items() if got == want]
    wrong = sorted(
        f"{n}: {got} (doctor: {want})" for n, (got, want) in explained.items() if got != want
    )
    print(
        f"\nexplain on real cases: {len(right)} right layer first of {len(explained)} with a "
        f"known message ({len(scored)} cases; {sum(v[0] is None for v in scored.values())} "
        "quote no known message)"
    )
    for line in wrong:
        print(f"  other layer: {line}")
    assert len(right) >= RIGHT_AT_LEAST
    assert len(wrong) <= WRONG_AT_MOST, wrong


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
    scored: dict[str, tuple[str | None, str | None]], case: str, layer: str
) -> None:
    assert scored[case] == (layer, layer)
