"""gpucheck bench's measurements through CuPy (where torch is absent), and the CPU figure
through numpy (where neither is): run from bench.py in the same child. Standard library only
apart from the framework; Python 3.8+."""

from __future__ import annotations

import functools
import importlib
import os
import time
from typing import Any, Callable, Iterable

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py, which every child script shares)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

from .bench_common import CHECK, TOLERANCE, Plan, copy_record, matmul_record, measure, on_node


class Cupy:
    """The same measurements through CuPy: fp32 and fp16 matmul (cuBLAS), and the copies."""

    def __init__(self) -> None:
        self.cp = importlib.import_module("cupy")
        self.np = importlib.import_module("numpy")

    def gpu_timer(self, run: Callable[[], Any], runs: int) -> float:
        cuda = self.cp.cuda
        start, end = cuda.Event(), cuda.Event()
        start.record()
        for _ in range(runs):
            run()
        end.record()
        end.synchronize()
        return float(cuda.get_elapsed_time(start, end))

    def dtypes(self, device: str) -> list[tuple[str, str | None]]:
        why = "measured through torch only"
        return [("fp32", None), ("tf32", why), ("fp16", None), ("bf16", why), ("fp8", why)]

    def sustained(self, dtype: str, plan: Plan, device: str) -> Iterable[dict[str, Any]]:
        return []  # measured through torch only

    def matmul(self, dtype: str, plan: Plan, device: str, m: int | None = None) -> dict[str, Any]:
        if m is not None:
            raise ValueError("skinny GEMMs are measured through torch only")
        cp, np = self.cp, self.np
        n = plan.n
        rng = np.random.default_rng(0)
        kind = np.float32 if dtype == "fp32" else np.float16
        a_host = rng.standard_normal((n, n), dtype=np.float32).astype(kind)
        b_host = rng.standard_normal((n, n), dtype=np.float32).astype(kind)
        a, b = cp.asarray(a_host), cp.asarray(b_host)
        ms, runs = measure(lambda: cp.matmul(a, b), plan, self.gpu_timer)
        idx = np.linspace(0, n - 1, CHECK).astype(np.int64)
        got = cp.asnumpy(cp.matmul(a, b)[idx][:, idx]).astype(np.float64)
        ref = a_host[idx].astype(np.float64) @ b_host[:, idx].astype(np.float64)
        ok = bool(np.isfinite(got).all())
        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref)) if ok else None
        return matmul_record(dtype, device, n, runs, plan.samples, ms, err)

    def copies(self, plan: Plan) -> list[dict[str, Any]]:
        cp, np = self.cp, self.np
        out = []
        free, _total = cp.cuda.runtime.memGetInfo()
        size = min(plan.d2d_bytes, free // 8)
        src = cp.empty(size, dtype=cp.uint8)
        dst = cp.empty_like(src)
        ms, runs = measure(lambda: cp.copyto(dst, src), plan, self.gpu_timer)
        out.append(copy_record("d2d", 2 * size, ms, runs, plan))
        dev = cp.empty(plan.host_bytes, dtype=cp.uint8)
        with on_node(plan.numa_node) as placed:  # (first touched, so placed, on the node)
            pinned_mem = cp.cuda.alloc_pinned_memory(plan.host_bytes)
            pinned = np.frombuffer(pinned_mem, np.uint8, plan.host_bytes)
            pageable = np.empty(plan.host_bytes, dtype=np.uint8)
            pinned.fill(1)
            pageable.fill(1)
        for name, host in (("pinned", pinned), ("pageable", pageable)):
            ms, runs = measure(functools.partial(dev.set, host), plan, self.gpu_timer)
            out.append(copy_record(f"h2d_{name}", plan.host_bytes, ms, runs, plan, placed))
            ms, runs = measure(functools.partial(dev.get, out=host), plan, self.gpu_timer)
            out.append(copy_record(f"d2h_{name}", plan.host_bytes, ms, runs, plan, placed))
        return out

    def peers(self, plan: Plan) -> list[dict[str, Any]]:
        return []


def cpu_numpy(plan: Plan) -> dict[str, Any]:
    """The CPU figure where neither torch nor CuPy is installed but numpy is."""
    np = importlib.import_module("numpy")
    n = plan.n
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)

    def timer(run: Callable[[], Any], runs: int) -> float:
        t0 = time.perf_counter()
        for _ in range(runs):
            run()
        return (time.perf_counter() - t0) * 1000

    ms, runs = measure(lambda: a @ b, plan, timer)
    return {
        "kind": "matmul",
        "dtype": "fp32",
        "device": "cpu",
        "n": n,
        "runs_per_sample": runs,
        "samples": plan.samples,
        "median_ms": ms,
        "tflops": 2 * n**3 / (ms / 1000) / 1e12,
        "rel_error": None,
        "tolerance": TOLERANCE["fp32"],
        "correct": True,
    }
