"""`gpucheck bench` verdicts from measurements and NVML facts (pure), the spec comparison, and
the child's records. Spec figures come from compat/gpus.toml (the H100 SXM5 row: BF16 989.5
dense TFLOPS, 3,350 GB/s, PCIe 5.0 x16); the GPU facts from a real nvidia-smi capture
(tests/support/builders.py)."""

from __future__ import annotations

import pytest
from support.builders import a100_mig, h100, rtx_3060

from gpucheck.bench.measurements import (
    BenchRun,
    Copy,
    CpuRun,
    DuringRun,
    GpuRun,
    Matmul,
    Peer,
    absorb,
)
from gpucheck.bench.probe import child_env, merge_sample
from gpucheck.bench.spec import pcie_gbs
from gpucheck.bench.verdicts import findings
from gpucheck.compat import load
from gpucheck.model.finding import Finding, Status
from gpucheck.model.snapshot import GpuProcess
from gpucheck.report.core import exit_code

INDEX = load().gpus
CPU = CpuRun(framework="torch", matmul=Matmul("fp32", "cpu", 4096, 200.0, 0.5, True, 1e-4))


def matmul(dtype: str, tflops: float, correct: bool = True) -> Matmul:
    return Matmul(dtype, "cuda", 8192, 2 * 8192**3 / tflops / 1e9, tflops, correct, 2e-2, 1e-3)


def run_of(gpu=None, **kw) -> GpuRun:  # type: ignore[no-untyped-def]
    return GpuRun(facts=gpu or h100(0), framework="torch", framework_version="2.13.0", **kw)


def bench(*runs: GpuRun, peers: list[Peer] | None = None) -> list[Finding]:
    b = BenchRun(False, "/env/bin/python", "torch", "2.13.0", CPU, list(runs), peers or [])
    return findings(b, INDEX)


def one(found: list[Finding], id_: str) -> Finding:
    hits = [f for f in found if f.id == id_]
    assert len(hits) == 1, [f.id for f in found]
    return hits[0]


@pytest.mark.parametrize(
    ("gen", "published"),
    # Wikipedia "PCI Express" (copied at hpc-notes.pages.dev/reference/pcie): x16 bandwidth per
    # direction 4.0, 8.0, 15.7, 31.5, 63.0 GB/s for PCIe 1.0 to 5.0.
    [(1, 4.0), (2, 8.0), (3, 15.7), (4, 31.5), (5, 63.0)],
)
def test_pcie_rate_per_direction_is_the_published_one(gen: int, published: float) -> None:
    assert pcie_gbs(gen, 16) == pytest.approx(published, abs=0.06)


def test_matmul_near_spec_passes_and_states_share_and_speedup() -> None:
    f = one(bench(run_of(matmuls=[matmul("bf16", 742.1)])), "bench.matmul")
    assert f.status == Status.PASS
    assert (
        f.evidence[0]
        == "BF16 8192³: 742.1 TFLOPS = 75% of 989.5 (spec, dense); 1,484x the CPU's FP32"
    )


def test_slow_matmul_under_a_power_cap_warns_and_names_it() -> None:
    run = run_of(matmuls=[matmul("bf16", 300.0)], during=DuringRun(3, ["sw_power_cap"]))
    f = one(bench(run), "bench.matmul")
    assert f.status == Status.WARN
    assert "BF16 matmul below the expected share of spec" in f.title
    assert (
        "likely cause: the power cap held the clocks down (sw_power_cap) (limit 700 W) during the run"
        in f.evidence
    )
    assert (
        f.fix is not None
        and "nvidia-smi -q -i 0 -d PERFORMANCE,POWER,TEMPERATURE" in f.fix.commands
    )


def test_slow_matmul_with_no_visible_cause_says_so_and_points_to_the_reference() -> None:
    f = one(bench(run_of(matmuls=[matmul("fp16", 100.0)])), "bench.matmul")
    assert f.status == Status.WARN
    assert any("nothing in the facts at hand explains it" in e for e in f.evidence)
    assert f.fix is not None and "python benchmarks/bench_vs_reference.py" in f.fix.commands


def test_other_processes_and_mig_are_named_as_causes() -> None:
    gpu = h100(0)
    gpu.processes = [GpuProcess(pid=4242, name="python3", used_memory=10 * 2**30)]
    f = one(bench(run_of(gpu, matmuls=[matmul("bf16", 200.0)])), "bench.matmul")
    assert any(
        "1 other process was on the GPU when the run started (4242 python3)" in e
        for e in f.evidence
    )
    mig = one(bench(run_of(a100_mig(0), matmuls=[matmul("bf16", 50.0)])), "bench.matmul")
    assert any("MIG mode is on" in e for e in mig.evidence)


def test_a_wrong_result_fails_whatever_the_speed() -> None:
    found = bench(run_of(matmuls=[matmul("bf16", 900.0, correct=False)]))
    f = one(found, "bench.correctness")
    assert f.status == Status.FAIL
    assert "wrong matmul result" in f.title
    assert exit_code(found) == 1


def test_memory_bandwidth_is_judged_against_the_datasheet() -> None:
    ok = one(bench(run_of(copies=[Copy("d2d", 2 * 2**30, 0.74, 2900.0)])), "bench.memory")
    assert ok.status == Status.PASS
    assert ok.evidence == [
        "device-to-device copy 1024 MiB: 2,900 GB/s (read + write) = 87% of 3,350 GB/s (spec)"
    ]
    low = one(bench(run_of(copies=[Copy("d2d", 2 * 2**30, 2.1, 1000.0)])), "bench.memory")
    assert low.status == Status.WARN


def test_slow_host_copies_on_a_link_that_stays_low_under_load_name_the_link() -> None:
    copies = [
        Copy("h2d_pinned", 256 * 2**20, 13.4, 20.0),
        Copy("d2h_pinned", 256 * 2**20, 13.4, 20.0),
        Copy("h2d_pageable", 256 * 2**20, 26.8, 10.0),
    ]
    during = DuringRun(5, [], pcie_gen_loaded=3, pcie_width_loaded=16)
    f = one(bench(run_of(copies=copies, during=during)), "bench.pcie")
    assert f.status == Status.WARN
    assert f.evidence[0] == "link: PCIe 5.0 x16 (NVML maximum of GPU and slot): 63.0 GB/s each way"
    assert (
        "host to device, pageable: 10.0 GB/s = 16% of the link" in f.evidence
    )  # shown, not judged
    assert any(
        "the PCIe link ran at gen 3 x16 under load, below its maximum gen 5 x16" in e
        for e in f.evidence
    )


def test_pinned_copies_near_the_link_rate_pass() -> None:
    copies = [Copy("h2d_pinned", 2**28, 5.0, 53.0), Copy("d2h_pinned", 2**28, 5.0, 54.0)]
    assert one(bench(run_of(copies=copies)), "bench.pcie").status == Status.PASS


def test_a_gpu_without_spec_figures_is_measured_but_not_judged() -> None:
    f = one(bench(run_of(rtx_3060(0), matmuls=[matmul("fp32", 11.0)])), "bench.matmul")
    assert f.status == Status.PASS
    assert "no spec figures for this GPU in compat/gpus.toml: not judged" in f.evidence


def test_a_run_that_did_not_finish_fails() -> None:
    found = bench(run_of(problem="timed out after 180 s in matmul bf16"))
    f = one(found, "bench.run")
    assert f.status == Status.FAIL and "timed out after 180 s in matmul bf16" in f.title


def test_an_unfinished_run_of_a_cpu_torch_points_at_its_cuda_build() -> None:
    problem = "exited with status 1 in cuda init: AssertionError: Torch not compiled with CUDA "
    b = BenchRun(False, "/my env/bin/python", "torch", "2.13.0+cpu", CPU, [run_of(problem=problem)])
    f = one(findings(b, INDEX), "bench.run")
    assert f.fix is not None
    assert f.fix.commands == [
        "gpucheck doctor --python '/my env/bin/python' --only frameworks.torch.cpu-build"
    ]
    assert f.fix.text.startswith("This torch is a CPU build")
    # Anything else that stops a run: is this GPU working at all?
    f = one(bench(run_of(problem="crashed with SIGSEGV in matmul bf16")), "bench.run")
    assert f.fix is not None and f.fix.commands == ["gpucheck doctor --deep"]


def test_no_gpu_gives_the_cpu_figure_and_one_failing_line() -> None:
    b = BenchRun(
        True,
        "/env/bin/python",
        "torch",
        "2.13.0",
        CPU,
        no_gpu_reason="this machine has no NVIDIA GPU",
    )
    found = findings(b, INDEX)
    assert [(f.id, f.status) for f in found] == [
        ("bench.cpu", Status.INFO),
        ("bench.gpu", Status.FAIL),
    ]
    assert found[0].title == "CPU FP32 matmul: 500.0 GFLOPS (4096³, torch)"
    assert found[1].title == "No GPU to measure: this machine has no NVIDIA GPU"
    assert exit_code(found) == 1


def test_peer_copies_faster_than_pcie_are_a_direct_link() -> None:
    peers = [Peer(0, 1, True, 2**28, 0.7, 380.0), Peer(1, 0, False, 2**28, 12.0, 22.0)]
    f = one(bench(run_of(h100(0)), run_of(h100(1)), peers=peers), "bench.peers")
    assert (
        "GPU 0 -> GPU 1: 380.0 GB/s, peer access on; faster than PCIe 5.0 x16 can carry: a direct link (NVLink)"
        in f.evidence
    )
    assert any(e.startswith("GPU 1 -> GPU 0: 22.0 GB/s, peer access off") for e in f.evidence)


def test_nvml_samples_ignore_idle_and_keep_the_best_link_under_load() -> None:
    during = DuringRun()
    idle = h100(0)
    idle.pcie_gen_current = 1  # idle power saving: not a finding
    merge_sample(during, idle)
    busy = h100(0)
    busy.utilization_gpu, busy.clock_event_reasons = 100, ["sw_power_cap", "gpu_idle"]
    merge_sample(during, busy)
    assert during.clock_event_reasons == ["sw_power_cap"]
    assert (during.pcie_gen_loaded, during.pcie_width_loaded, during.samples) == (5, 16, 2)


def test_the_child_sees_only_its_gpu_by_uuid_or_mig_slice() -> None:
    env = child_env({"PATH": "/bin"}, [h100(3)])
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-00000003-0000-0000-0000-000000000000"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    mig = a100_mig(0)
    assert child_env({}, [mig])["CUDA_VISIBLE_DEVICES"] == mig.mig_devices[0].uuid


def test_child_records_become_figures_and_bad_ones_errors() -> None:
    run = run_of()
    absorb(
        run,
        [
            {"kind": "framework", "name": "torch", "version": "2.13.0"},
            {"kind": "matmul", "dtype": "fp16", "device": "cuda", "n": 8192, "median_ms": 2.0,
             "tflops": 549.8, "correct": True, "tolerance": 5e-3, "rel_error": 4e-4},
            {"kind": "copy", "path": "d2d", "bytes": 2**31, "median_ms": 0.8, "gbs": 2684.4},
            {"kind": "skip", "what": "fp8", "why": "needs compute capability 8.9"},
            {"kind": "matmul", "dtype": "bf16", "tflops": "fast"},
            {"kind": "error", "what": "matmul tf32", "message": "CUDA out of memory"},
        ],
    )  # fmt: skip
    assert run.matmul("fp16") is not None and run.matmul("fp16").tflops == 549.8  # type: ignore[union-attr]
    assert run.copy("d2d") is not None
    assert run.skipped == {"fp8": "needs compute capability 8.9"}
    assert run.errors[0].startswith("unreadable matmul record")
    assert run.errors[1] == "matmul tf32: CUDA out of memory"


def test_the_doctors_pcie_check_points_to_bench() -> None:
    from support import builders

    from gpucheck.checks.context import Context
    from gpucheck.checks.gpus.health import pcie_link

    snap = builders.workstation()  # the RTX 3060 capture: gen 1 of 4 ...
    snap.nvml.gpus[0].utilization_gpu = 97  # ... under load
    outcome = pcie_link(Context(snap))
    assert outcome is not None and outcome.status == Status.WARN
    assert outcome.fix is not None and "gpucheck bench --quick" in outcome.fix.commands


def test_no_torch_on_a_gpu_machine_names_torch_not_the_gpu() -> None:
    b = BenchRun(True, "/env/bin/python", None, None, CPU, no_framework_in=["/env/bin/python"])
    found = findings(b, INDEX)
    gpu = one(found, "bench.gpu")
    assert gpu.status is Status.FAIL
    assert gpu.title == (
        "Not measured: torch is not installed in the probed environment (/env/bin/python), "
        "and neither is CuPy; the GPUs were not tried"
    )
    assert gpu.fix is not None
    assert gpu.fix.commands == ["/env/bin/python -m pip install torch"]
    assert gpu.fix.text == (
        "Install torch there, or pass --python PATH of an environment that has it: "
        "`/env/bin/python -m pip install torch`"
    )
