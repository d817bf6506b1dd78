"""`bench --format html`: the verdicts, the matmuls against the datasheet as bars (H100 SXM5:
BF16 989.5 dense TFLOPS, compat/gpus.toml), and the GPU-to-GPU copy matrix as a heat map."""

from __future__ import annotations

import io

from support.builders import h100, node

from gpucheck.bench.measurements import BenchRun, CpuRun, GpuRun, Matmul, Peer
from gpucheck.bench.report import FORMATS, BenchReport
from gpucheck.bench.verdicts import findings
from gpucheck.compat import load

CPU = CpuRun(framework="torch", matmul=Matmul("fp32", "cpu", 4096, 200.0, 0.5, True, 1e-4))


def _page() -> str:
    runs = [
        GpuRun(
            facts=h100(i),
            framework="torch",
            framework_version="2.13.0",
            matmuls=[Matmul("bf16", "cuda", 8192, 1.5, 700.0, True, 2e-2, 1e-3)],
        )
        for i in (0, 1)
    ]
    peers = [Peer(0, 1, True, 2**28, 5.0, 52.0), Peer(1, 0, True, 2**28, 25.0, 10.5)]
    bench = BenchRun(False, "/env/bin/python", "torch", "2.13.0", CPU, runs, peers)
    report = BenchReport(node([h100(0), h100(1)]), findings(bench, load().gpus), run=bench)
    out = io.StringIO()
    FORMATS["html"].write(report, out)
    return out.getvalue()


def test_the_page_draws_matmuls_against_the_datasheet_and_the_copy_matrix() -> None:
    page = _page()
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
