"""bench and fit with real torch (the suite's cached torch 2.13.0 CPU wheel environment): the
CPU measurement path, the child protocol when the GPU path cannot run, and fit's meta-device
tracing checked against a real CPU forward pass."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest
from conftest import REPO, run_gpucheck
from support import venvs
from support.builders import h100

from gpucheck.bench.measurements import BenchRun, CpuRun
from gpucheck.bench.probe import measure_gpus
from gpucheck.bench.verdicts import findings
from gpucheck.compat import load
from gpucheck.fit.trace import trace
from gpucheck.model.finding import Status
from gpucheck.report.schema import report_schema

pytestmark = [pytest.mark.frameworks, pytest.mark.slow]
MODELS = REPO / "tests" / "fixtures" / "torch_models"


@pytest.fixture(scope="module")
def torch_python() -> Path:
    return venvs.require("torch-2.13.0")


def test_bench_without_a_gpu_gives_the_cpu_figure_one_line_and_exit_1(torch_python: Path) -> None:
    result = run_gpucheck("bench", "--quick", "--python", str(torch_python), "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    jsonschema.Draft202012Validator(report_schema()).validate(report)
    ids = [(f["id"], f["status"]) for f in report["findings"]]
    assert ids == [("bench.cpu", "info"), ("bench.gpu", "fail")]
    cpu = report["bench"]["cpu"]["matmul"]
    assert cpu["device"] == "cpu" and cpu["n"] == 1024 and cpu["correct"] is True
    assert cpu["tflops"] > 0.001  # any CPU does a GFLOPS of fp32
    assert report["bench"]["framework"] == "torch"
    text = run_gpucheck("bench", "--quick", "--python", str(torch_python))
    assert text.returncode == 1
    assert "No GPU to measure: this machine has no NVIDIA GPU" in text.stdout


def test_a_gpu_run_the_framework_cannot_do_is_a_failed_run_not_a_crash(torch_python: Path) -> None:
    # The real child, on a GPU that NVML would list but this CPU-only torch cannot reach: the
    # protocol carries the error out, and the verdict is a failed run.
    run = BenchRun(True, str(torch_python), "torch", "2.13.0", CpuRun())
    measure_gpus(run, [h100(0)], 60, dict(os.environ), init=False)
    gpu = run.gpus[0]
    # The trial: the title quoted NumPy's stray warning line, stderr's last; the error the child
    # reported is the cause.
    assert gpu.problem == (
        "exited with status 1 in cuda init: AssertionError: Torch not compiled with CUDA enabled"
    )
    assert gpu.errors == ["cuda init: AssertionError: Torch not compiled with CUDA enabled"]
    f = next(f for f in findings(run, load().gpus) if f.id == "bench.run")
    assert f.status == Status.FAIL
    assert f.fix is not None
    assert f.fix.commands == [
        f"gpucheck doctor --python {torch_python} --only frameworks.torch.cpu-build"
    ]


def test_meta_trace_of_an_mlp_counts_parameters_and_activations(torch_python: Path) -> None:
    shape, _ = trace("tutorial_models:mlp", [1, 28, 28], str(torch_python), 120, _env())
    assert shape.params == 784 * 512 + 512 + 512 * 10 + 10  # two Linear layers' weights and biases
    # Saved for backward per sample: the flattened input of the first Linear (784 floats) and
    # the ReLU's output, which the second Linear saves too (512 floats).
    assert shape.traced_activation_bytes == (784 + 512) * 4


@pytest.mark.parametrize(
    ("model", "dims", "batch"), [("mlp", [1, 28, 28], 64), ("cnn", [3, 224, 224], 8)]
)
def test_meta_trace_matches_a_real_cpu_forward_pass(
    torch_python: Path, model: str, dims: list[int], batch: int
) -> None:
    shape, measured = trace(
        f"tutorial_models:{model}", dims, str(torch_python), 300, _env(), "cpu", batch
    )
    assert measured is not None and measured.saved_bytes is not None
    estimate = shape.traced_activation_bytes * batch  # type: ignore[operator]
    # The real pass allocates what the meta pass computed, save batch-independent buffers.
    assert estimate == pytest.approx(measured.saved_bytes, rel=1e-4)


def test_fit_torch_module_cli(torch_python: Path) -> None:
    result = run_gpucheck(
        "fit", "--torch-module", "tutorial_models:cnn", "--input", "3x224x224", "--batch", "64",
        "--dtype", "fp32", "--python", str(torch_python), "--gpu-memory", "8GiB", "--json",
        env=_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["model"]["params"] == 5450
    acts = next(p for p in data["per_gpu"]["parts"] if p["name"] == "activations")
    assert acts["bytes"] == 64 * data["model"]["traced_activation_bytes"]


@pytest.mark.parametrize(
    ("module", "words"),
    [
        ("tutorial_models:not_a_module", "returned <class 'int'>, not a torch.nn.Module"),
        ("no_such_module:build", "ModuleNotFoundError: No module named 'no_such_module'"),
    ],
)
def test_fit_torch_module_errors_are_one_line(torch_python: Path, module: str, words: str) -> None:
    result = run_gpucheck(
        "fit", "--torch-module", module, "--input", "3x8x8", "--python", str(torch_python),
        env=_env(),
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("gpucheck: --torch-module") and words in result.stderr


def _env() -> dict[str, str]:
    """The models' folder on the path (as the user's working folder would be), gpucheck's too."""
    path = os.pathsep.join(p for p in (str(MODELS), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


CHILD_LOGIC = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("bench_child", sys.argv[1])
child = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = child  # the package of its relative imports (protocol)
spec.loader.exec_module(child)
fw = child.Torch()
plan = child.Plan(True, "cpu")
plan.n, plan.samples, plan.warmup_ms, plan.sample_ms = 256, 3, 1.0, 1.0
out = {d: fw.matmul(d, plan, "cpu") for d in ("fp32", "fp16", "bf16", "fp8")}
real = fw.torch.matmul
fw.torch.matmul = lambda a, b: real(a, b) * 1.01  # a GPU that is 1% wrong
out["wrong"] = fw.matmul("fp32", plan, "cpu")
fw.torch.matmul = lambda a, b: real(a, b) * float("nan")
out["nan"] = fw.matmul("fp32", plan, "cpu")
print(json.dumps(out))
"""


def test_the_childs_reference_check_passes_real_low_precision_and_catches_wrong_answers(
    torch_python: Path,
) -> None:
    # The child's matmul and CPU check on real torch arithmetic in each dtype (on the CPU
    # device: torch 2.13 has fp16, bf16 and float8 _scaled_mm kernels there too).
    script = REPO / "src" / "gpucheck" / "bench" / "scripts" / "bench.py"
    proc = subprocess.run(
        [str(torch_python), "-c", CHILD_LOGIC, str(script)],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for dtype in ("fp32", "fp16", "bf16", "fp8"):
        assert out[dtype]["correct"] is True, out[dtype]
        assert out[dtype]["n"] == 256 and out[dtype]["tflops"] > 0
    assert out["wrong"]["correct"] is False
    assert out["wrong"]["rel_error"] == pytest.approx(0.01, rel=0.01)
    assert out["nan"]["correct"] is False and out["nan"]["rel_error"] is None
