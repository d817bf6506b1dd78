"""bench's expectations per GPU class: a healthy slot-powered board or an
Ada card in FP32 passes at the share such boards really sustain, and the spec figures filled in
from NVIDIA's datasheets (compat/gpus.toml, cited there)."""

from __future__ import annotations

import pytest
from support.builders import h100
from test_bench import bench, matmul, one, run_of

from gpucheck.compat import load
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import GpuFacts

INDEX = load().gpus


def board(name: str, cc: str, power_limit_w: float) -> GpuFacts:
    gpu = h100(0)  # a real capture's facts, renamed to the board judged
    gpu.name, gpu.compute_capability, gpu.power_limit_w = name, cc, power_limit_w
    return gpu


def test_a_t4_at_the_speed_nvidia_calls_expected_passes() -> None:
    # NVIDIA's forum (t/about-gpu-peak-performance/264462): cuBLAS FP16 4096^3 on a T4 runs
    # at ~24 of 65 TFLOPS, "expected behavior" of its 70 W power capping.
    run = run_of(board("Tesla T4", "7.5", 70.0), matmuls=[matmul("fp16", 24.0)])
    f = one(bench(run), "bench.matmul")
    assert f.status == Status.PASS
    assert f.evidence[0].startswith("FP16 8192³: 24.0 TFLOPS = 37% of 65.0 (spec, dense)")
    assert (
        "expected here: 25% of spec or more (FP16): a 70 W board holds its clocks down to its "
        "power limit under a continuous matmul"
    ) in f.evidence


def test_an_l4_in_fp32_at_forty_percent_passes_where_a_flat_half_warned() -> None:
    run = run_of(board("NVIDIA L4", "8.9", 72.0), matmuls=[matmul("fp32", 12.1)])
    assert one(bench(run), "bench.matmul").status == Status.PASS


def test_an_l40s_in_fp32_is_judged_as_two_datapaths_but_its_tensor_cores_as_usual() -> None:
    l40s = board("NVIDIA L40S", "8.9", 350.0)
    fp32 = one(bench(run_of(l40s, matmuls=[matmul("fp32", 35.0)])), "bench.matmul")
    assert fp32.status == Status.PASS
    assert any(e.startswith("expected here: 30% of spec or more (FP32)") for e in fp32.evidence)
    bf16 = one(bench(run_of(l40s, matmuls=[matmul("bf16", 120.0)])), "bench.matmul")
    assert bf16.status == Status.WARN  # 33% of 362 TFLOPS: no class explains it


def test_an_h100_in_fp32_keeps_the_full_power_expectation() -> None:
    f = one(bench(run_of(matmuls=[matmul("fp32", 25.0)])), "bench.matmul")
    assert f.status == Status.WARN
    assert not any(e.startswith("expected here") for e in f.evidence)


@pytest.mark.parametrize(
    ("nvml_name", "figure", "value"),
    [
        ("NVIDIA H200", "fp32_tflops", 67),
        ("NVIDIA H200", "tf32_tflops", 494.5),
        ("NVIDIA L4", "fp32_tflops", 30.3),
        ("NVIDIA L4", "fp16_tflops", 121),
        ("NVIDIA L4", "fp8_tflops", 242.5),
        ("Tesla V100-SXM2-16GB", "memory_bandwidth_gbs", 900),
    ],
)
def test_the_missing_datasheet_figures_are_filled(
    nvml_name: str, figure: str, value: float
) -> None:
    spec = INDEX.spec(nvml_name)
    assert spec is not None and getattr(spec, figure) == value


def test_the_rtx_4090_link_is_pcie_4_x16() -> None:
    spec = INDEX.spec("NVIDIA GeForce RTX 4090")
    assert spec is not None and (spec.pcie_generation, spec.pcie_width) == (4, 16)
