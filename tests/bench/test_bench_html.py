"""`bench --format html`: the verdicts, the matmuls against the datasheet as bars (H100 SXM5:
BF16 989.5 dense TFLOPS, compat/gpus.toml), and the GPU-to-GPU copy matrix as a heat map."""

from __future__ import annotations

import io

from support.bench_runs import two_h100_report

from gpucheck.bench.report import FORMATS


def bench_page() -> str:
    out = io.StringIO()
    FORMATS["html"].write(two_h100_report(), out)
    return out.getvalue()


def test_the_page_draws_matmuls_against_the_datasheet_and_the_copy_matrix() -> None:
    page = bench_page()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "<title>gpucheck bench: gpu-node-01</title>" in page
    assert "<title>BF16 8192³ measured: 700 TFLOPS</title>" in page
    assert "<title>BF16 8192³ datasheet (dense peak): 989.5 TFLOPS</title>" in page
    assert '<td class="num">71%</td>' in page  # 700 of 989.5, in the table under the chart
    assert "<title>GPU 1 to GPU 0: 10.5 GB/s</title>" in page
    assert (
        ">52</text>" in page and ">-</text>" in page
    )  # figures in the cells; none on the diagonal
    # The verdicts, as the doctor's page shows them.
    assert "GPU-to-GPU copies 1-&gt;0 below 40% of the link (63.0 GB/s)" in page
