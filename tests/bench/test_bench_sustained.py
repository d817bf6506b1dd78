"""bench's sustained mode, skinny GEMMs and host buffers on the GPU's NUMA node:
records as the child writes them, verdicts from literal timelines, sysfs read from a
folder laid out as Linux lays it out, and the child's sustained loop run for real on the CPU
with torch's CPU wheel."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_gpucheck
from support.builders import h100
from support.venvs import require
from test_bench import bench, matmul, one, run_of

from gpucheck.bench.measurements import DuringRun, GpuRun, Matmul, Sample, SustainedPoint, absorb
from gpucheck.bench.probe import SCRIPT, merge_sample, numa_node
from gpucheck.bench.scripts.bench_common import numa_cpus
from gpucheck.model.finding import Status


def points(*tflops: float) -> list[SustainedPoint]:
    return [SustainedPoint("bf16", 8192, float(i + 1), t) for i, t in enumerate(tflops)]


def timeline(*clocks: int) -> DuringRun:
    during = DuringRun()
    for i, clock in enumerate(clocks):
        during.timeline.append(Sample(float(i + 1), clock, 690.0, 70 + i, 100, []))
    return during


def test_a_steady_sustained_run_passes_with_its_clock_and_power() -> None:
    run = run_of(sustained=points(740, 742, 739, 741), during=timeline(1980, 1980, 1965, 1980))
    f = one(bench(run), "bench.sustained")
    assert f.status == Status.PASS
    assert f.title == "GPU 0 (NVIDIA H100 80GB HBM3): held 741.0 TFLOPS (BF16) for 4 s"
    assert "SM clock 1,980 MHz at the start, 1,980 at the end, lowest 1,965" in f.evidence
    assert "power up to 690 W (limit 700 W), temperature up to 73 °C" in f.evidence


def test_a_run_that_slows_down_is_throttling_and_names_the_slowdown() -> None:
    during = timeline(1980, 1700, 1400, 1200)
    during.clock_event_reasons = ["hw_thermal_slowdown"]
    run = run_of(sustained=points(740, 700, 560, 480), during=during)
    f = one(bench(run), "bench.sustained")
    assert f.status == Status.WARN
    assert f.title == "GPU 0 (NVIDIA H100 80GB HBM3): BF16 matmul fell 35% over 4 s (throttling)"
    assert f.evidence[0].startswith("BF16 8192³ for 4 s: 740.0 TFLOPS in the first quarter")
    assert "SM clock 1,980 MHz at the start, 1,200 at the end, lowest 1,200" in f.evidence
    assert any("the GPU was too hot" in e for e in f.evidence)


def test_skinny_gemms_are_shown_beside_the_square_one_not_judged() -> None:
    decode = Matmul("bf16", "cuda", 8192, 0.08, 27.0, True, 2e-2, 1e-3, m=16)
    run = run_of(matmuls=[matmul("bf16", 742.1), decode])
    f = one(bench(run), "bench.matmul")
    assert f.status == Status.PASS
    # 8192² bf16 weights (134 MB) in 0.08 ms: 1,678 GB/s.
    assert f.evidence[1] == (
        "BF16 16×8192×8192 (LLM decode, 16 tokens): 27.0 TFLOPS, the weight read at 1,678 GB/s"
    )


def test_child_records_of_the_new_kinds_are_read() -> None:
    run = GpuRun(facts=h100(0))
    absorb(
        run,
        [
            {"kind": "sustained", "dtype": "fp16", "n": 4096, "t": 1.0, "tflops": 500.0},
            {"kind": "copy", "path": "h2d_pinned", "bytes": 1, "median_ms": 1.0, "gbs": 50.0,
             "numa_node": 1},
            {"kind": "matmul", "dtype": "fp16", "device": "cuda", "n": 4096, "m": 128,
             "median_ms": 0.1, "tflops": 43.0, "correct": True, "tolerance": 5e-3},
        ],
    )  # fmt: skip
    assert run.errors == []
    assert run.sustained == [SustainedPoint("fp16", 4096, 1.0, 500.0)]
    assert run.copies[0].numa_node == 1
    assert run.matmul("fp16") is None and [m.m for m in run.skinny("fp16")] == [128]


def test_samples_keep_a_timeline_only_when_asked() -> None:
    gpu = h100(0)
    gpu.clock_sm_mhz, gpu.clock_event_reasons = 1755, ["gpu_idle", "sw_power_cap"]
    during = DuringRun()
    merge_sample(during, gpu)
    assert during.timeline == []
    merge_sample(during, gpu, 2.345)
    assert during.timeline == [Sample(2.35, 1755, gpu.power_draw_w, gpu.temperature_c,
                                      gpu.utilization_gpu, ["sw_power_cap"])]  # fmt: skip


def test_the_numa_node_comes_from_sysfs(tmp_path: Path) -> None:
    device = tmp_path / "sys/bus/pci/devices/0000:18:00.0"
    device.mkdir(parents=True)
    (device / "numa_node").write_text("1\n")
    gpu = h100(0)
    gpu.pci_bus_id = "00000000:18:00.0"  # as NVML writes it
    assert numa_node(gpu, tmp_path) == 1
    (device / "numa_node").write_text("-1\n")  # one node: no placement to do
    assert numa_node(gpu, tmp_path) is None
    node = tmp_path / "sys/devices/system/node/node1"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("0-3,16-17\n")
    assert numa_cpus(1, str(tmp_path)) == {0, 1, 2, 3, 16, 17}
    assert numa_cpus(2, str(tmp_path)) == set()


@pytest.mark.slow
def test_the_child_runs_a_sustained_matmul_on_the_cpu_for_real() -> None:
    python = require("torch-2.13.0")
    args = {"device": "cpu", "quick": True, "duration": 2, "numa_node": 0}
    result = subprocess.run(
        [str(python), str(SCRIPT), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [r["kind"] for r in records]
    assert kinds[:2] == ["framework", "matmul"] and records[1]["correct"] is True
    sustained = [r for r in records if r["kind"] == "sustained"]
    assert len(sustained) >= 1 and sustained[-1]["t"] >= 1.0
    assert all(r["dtype"] == "fp32" and r["n"] == 1024 and r["tflops"] > 0 for r in sustained)


@pytest.mark.slow
def test_the_cpu_figure_comes_from_the_python_given_even_without_torch() -> None:
    # tensorflow-cpu's environment has numpy but neither torch nor CuPy: its numpy measures.
    python = require("tensorflow-cpu-2.21.0")
    result = run_gpucheck("bench", "--quick", "--json", "--python", str(python), timeout=600)
    assert result.returncode == 1, result.stderr  # (no GPU here)
    data = json.loads(result.stdout)["bench"]
    assert data["python"] == str(python)
    assert data["cpu"]["framework"] == "numpy" and data["cpu"]["matmul"]["tflops"] > 0
