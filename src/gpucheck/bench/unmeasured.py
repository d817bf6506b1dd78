"""What bench says when it measured no GPU (no torch or CuPy where it looked, no usable GPU),
and its CPU figure, the one line every run has."""

from __future__ import annotations

from gpucheck.bench.measurements import BenchRun
from gpucheck.model.finding import Finding, Status
from gpucheck.model.fix import Fix, Step
from gpucheck.model.layers import Layer


def cpu_finding(bench: BenchRun) -> Finding:
    cpu = bench.cpu
    if cpu.matmul is None:
        why = cpu.problem or "no figure came back"
        return Finding(
            "bench.cpu", Layer.BENCH, Status.SKIP, f"CPU FP32 matmul not measured: {why}"
        )
    m = cpu.matmul
    via = cpu.framework or "?"
    return Finding(
        "bench.cpu",
        Layer.BENCH,
        Status.INFO,
        f"CPU FP32 matmul: {m.tflops * 1000:,.1f} GFLOPS ({m.n}³, {via})",
        [f"median of {m.samples} samples, {m.median_ms:,.1f} ms a matmul"],
    )


def unmeasured(bench: BenchRun) -> Finding | None:
    """Why no GPU was measured, or None: a missing framework is named as such, never blamed on
    the GPU (torch absent from the probed environment is not a hidden GPU)."""
    if bench.no_framework_in:
        python = bench.no_framework_in[0]
        where = ", ".join(bench.no_framework_in)
        return Finding(
            "bench.gpu",
            Layer.BENCH,
            Status.FAIL,
            f"Not measured: torch is not installed in the probed environment ({where}), "
            "and neither is CuPy; the GPUs were not tried",
            ["bench measures with torch or CuPy from that environment, not its own"],
            Fix.of(
                Step.run(
                    "install torch there, or pass --python PATH of an environment that has it",
                    f"{python} -m pip install torch",
                )
            ),
        )
    if not bench.gpus:
        reason = bench.no_gpu_reason or "no GPU was found"
        return Finding(
            "bench.gpu",
            Layer.BENCH,
            Status.FAIL,
            f"No GPU to measure: {reason}",
            [],
            Fix.of(Step.run("see which layer hides the GPU", "gpucheck doctor")),
        )
    return None
