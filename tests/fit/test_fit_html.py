"""`fit --format html`: the estimate as a page: the parts of each GPU's memory drawn as bars
with their formulas in a table, the verdict per GPU, every assumption."""

from __future__ import annotations

import subprocess
from collections.abc import Callable


def test_the_fit_page_draws_the_parts_and_says_the_verdict(
    gpucheck: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    result = gpucheck(
        "fit", "--params", "7B", "--train", "--gpu-memory", "80GiB", "--format", "html"
    )
    assert result.returncode == 1, result.stderr
    page = result.stdout
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert '-t">Memory per GPU, by part (GiB)</title>' in page
    assert "<td>does not fit</td><td>--gpu-memory 80GiB</td>" in page
    assert '<h2 id="assumptions">Assumptions</h2>' in page
    # 7e9 parameters of 2 bytes (bf16 weights): 13.04 GiB, as a bar and in the table.
    assert "<title>weights GiB: 13.04 GiB</title>" in page
    assert '<td>weights</td><td class="num">13.04</td>' in page
