"""A bench run of two H100s (BF16 matmuls, one slow GPU-to-GPU direction) and its report, for
the tests of bench's outputs."""

from __future__ import annotations

from gpucheck.bench.measurements import BenchRun, CpuRun, GpuRun, Matmul, Peer
from gpucheck.bench.report import BenchReport
from gpucheck.bench.verdicts import findings
from gpucheck.compat import load
from support.builders import h100, node

CPU = CpuRun(framework="torch", matmul=Matmul("fp32", "cpu", 4096, 200.0, 0.5, True, 1e-4))


def two_h100_report() -> BenchReport:
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
    return BenchReport(node([h100(0), h100(1)]), findings(bench, load().gpus), run=bench)
