"""bench on several GPUs: the GPU-to-GPU copy matrix and the all-reduce bus
bandwidth against the link of the topology, from literal figures on the H100 builders (NVML:
PCIe 5.0 x16, 63.0 GB/s each way); and the all-reduce harness run for real with gloo on CPU
processes through torch's CPU wheel."""

from __future__ import annotations

import pytest
from support.builders import h100
from support.venvs import require
from test_bench import CPU, INDEX, bench, one, run_of

from gpucheck.bench.measurements import AllReduce, BenchRun, Peer
from gpucheck.bench.multi import allreduce_findings
from gpucheck.bench.probe import measure_allreduce
from gpucheck.bench.verdicts import findings
from gpucheck.model.finding import Finding, Status

MIB256 = 2**28


def with_allreduce(*results: AllReduce, peers: list[Peer] | None = None) -> list[Finding]:
    b = BenchRun(
        False, "/env/bin/python", "torch", "2.13.0", CPU, [run_of(h100(0)), run_of(h100(1))]
    )
    b.peers, b.allreduce = peers or [], list(results)
    return findings(b, INDEX)


def test_pairs_near_the_pcie_rate_pass_and_a_slow_pair_warns() -> None:
    good = [Peer(0, 1, True, MIB256, 5.0, 52.0), Peer(1, 0, True, MIB256, 5.0, 51.0)]
    f = one(bench(run_of(h100(0)), run_of(h100(1)), peers=good), "bench.peers")
    assert f.status == Status.PASS
    assert f.evidence[0] == "link: PCIe 5.0 x16 (NVML maximum of GPU and slot)"
    slow = [Peer(0, 1, True, MIB256, 5.0, 52.0), Peer(1, 0, True, MIB256, 25.0, 10.5)]
    f = one(bench(run_of(h100(0)), run_of(h100(1)), peers=slow), "bench.peers")
    assert f.status == Status.WARN
    assert f.title == "GPU-to-GPU copies 1->0 below 40% of the link (63.0 GB/s)"


def test_a_staged_pair_is_shown_not_judged() -> None:
    staged = [Peer(0, 1, False, MIB256, 25.0, 10.0)]
    f = one(bench(run_of(h100(0)), run_of(h100(1)), peers=staged), "bench.peers")
    assert f.status == Status.INFO


def test_an_nvlink_pair_far_below_the_others_warns() -> None:
    peers = [
        Peer(0, 1, True, MIB256, 0.7, 380.0),
        Peer(1, 0, True, MIB256, 0.7, 375.0),
        Peer(0, 2, True, MIB256, 2.7, 98.0),  # a link down: a third of the others
    ]
    f = one(bench(run_of(h100(0)), run_of(h100(1)), run_of(h100(2)), peers=peers), "bench.peers")
    assert f.status == Status.WARN
    assert f.title == "GPU-to-GPU copies 0->2 below 40% of the link (380.0 GB/s)"
    assert f.evidence[0] == "link: NVLink (a GPU pair copied faster than PCIe carries)"


def test_allreduce_bus_bandwidth_is_judged_against_the_link() -> None:
    # nccl-tests' busbw = algbw * 2 (n - 1) / n: with 2 ranks, busbw = algbw.
    fine = AllReduce("nccl", 2, MIB256, 20, 6.0, 44.7, 44.7, True)
    f = one(with_allreduce(fine), "bench.allreduce")
    assert f.status == Status.PASS
    assert f.title == "All-reduce across 2 ranks (NCCL): busbw 44.7 GB/s at 256 MiB"
    assert "busbw = 71% of the link" in f.evidence
    slow = AllReduce("nccl", 2, MIB256, 20, 30.0, 8.9, 8.9, True)
    assert one(with_allreduce(slow), "bench.allreduce").status == Status.WARN


def test_a_wrong_sum_fails() -> None:
    wrong = AllReduce("nccl", 2, MIB256, 20, 6.0, 44.7, 44.7, False)
    assert one(with_allreduce(wrong), "bench.allreduce").status == Status.FAIL


@pytest.mark.slow
def test_the_allreduce_harness_runs_with_gloo_on_cpu_processes() -> None:
    python = require("torch-2.13.0")
    b = BenchRun(True, str(python), "torch", "2.13.0", CPU)
    measure_allreduce(b, 2, 240, {"PATH": "/usr/bin:/bin"}, backend="gloo", device="cpu")
    assert b.allreduce_problem is None
    assert [a.bytes for a in b.allreduce] == [2**20, 2**24]
    assert all(a.correct and a.world == 2 and a.backend == "gloo" for a in b.allreduce)
    assert all(a.busbw_gbs == pytest.approx(a.algbw_gbs) and a.busbw_gbs > 0 for a in b.allreduce)
    (f,) = allreduce_findings(b, INDEX)  # (no GPU: the CPU harness is judged on its own)
    assert f.status == Status.INFO and f.title.startswith("All-reduce across 2 ranks (gloo)")
