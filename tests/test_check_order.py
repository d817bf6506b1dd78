"""The report's check order is one explicit list (checks.registry.ORDER), not import order."""

from __future__ import annotations

import pytest

from gpucheck import checks
from gpucheck.checks.registry import ORDER, check
from gpucheck.model.finding import Outcome
from gpucheck.model.layers import Layer


def test_every_check_is_in_the_order_once_and_the_order_names_only_checks() -> None:
    registered = [c.id for c in checks.all_checks()]
    assert len(ORDER) == len(set(ORDER))
    assert sorted(registered) == sorted(ORDER)
    assert registered == list(ORDER)


def test_the_order_keeps_each_section_together_in_section_order() -> None:
    sections = [c.section for c in checks.all_checks()]
    runs = [s for i, s in enumerate(sections) if i == 0 or sections[i - 1] != s]
    assert runs == [s for s in Layer if s in sections]  # one run per section, in order
    assert runs[:3] == [Layer.SYSTEM, Layer.DRIVER, Layer.GPUS]


def test_a_check_missing_from_the_order_cannot_register() -> None:
    def new_check(ctx: checks.Context) -> Outcome | None:
        return None

    with pytest.raises(ValueError, match=r"gpu\.new-thing is not in registry\.ORDER"):
        check("gpu.new-thing", Layer.GPUS, "a check nobody placed")(new_check)
    assert "gpu.new-thing" not in [c.id for c in checks.all_checks()]
