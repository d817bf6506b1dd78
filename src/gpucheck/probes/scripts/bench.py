"""Measure one GPU (or the CPU) for `gpucheck bench`, run in a child process (probes/child.py).

`python bench.py '{"device": "cuda" | "cpu" | "peers", "quick": false, "framework": "torch"}'`
under the interpreter of the probed environment, with CUDA_VISIBLE_DEVICES set by the parent to
the one GPU measured (two for "peers"), so that the GPU is always device 0 here.

Method (the README's "bench" section says the same):
- Matmul: C = A @ B on n x n matrices (n = 8192, --quick 4096; CPU 2048 / 1024) per dtype the
  GPU has (fp32 with TF32 off, tf32, fp16, bf16, fp8 through torch._scaled_mm), 2 n^3 FLOPs
  each. Warm-up first (at least 3 runs and 0.5 s; --quick 0.1 s), then `samples` timed
  samples (15; --quick 5) of as many back-to-back runs as fill 50 ms (--quick 20 ms), timed
  with CUDA events; the figure is the median sample. Then a 16 x 16 block of C is checked
  against the same block computed on the CPU in float64 from the same (rounded) inputs.
- Copies: device-to-device of 1 GiB (--quick 256 MiB), counted as read + write (2 x bytes,
  as NVIDIA's bandwidthTest does); host-to-device and device-to-host of 256 MiB (--quick
  64 MiB) from pinned and from pageable host memory; between two GPUs both ways, with peer
  access as CUDA reports it. Same warm-up, samples and median.

stdout: one JSON object per line ({"kind": "framework" | "matmul" | "copy" | "peer" | "skip" |
"error", ...}); stderr: "@ <step>" before each step. Standard library only apart from the
framework; runs on Python 3.8+ (annotations are never evaluated).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

if not __package__:  # run as a script: it is the package its relative imports come from
    __package__, __path__ = __name__, [os.path.dirname(os.path.realpath(__file__))]

from . import child_protocol as protocol

CHECK = 16  # rows and columns of C checked against the CPU
TOLERANCE = {"fp32": 1e-4, "tf32": 5e-3, "fp16": 5e-3, "bf16": 2e-2, "fp8": 2e-2}
MIB = 1024 * 1024


def matmul_record(
    dtype: str, device: str, n: int, runs: int, samples: int, ms: float, err: float | None
) -> dict[str, Any]:
    """One matmul measurement as the parent reads it (`bench.measurements.Matmul`)."""
    return {
        "kind": "matmul",
        "dtype": dtype,
        "device": device,
        "n": n,
        "runs_per_sample": runs,
        "samples": samples,
        "median_ms": ms,
        "tflops": 2 * n**3 / (ms / 1000) / 1e12,
        "rel_error": err,
        "tolerance": TOLERANCE[dtype],
        "correct": err is not None and err <= TOLERANCE[dtype],
    }


class Plan:
    def __init__(self, quick: bool, device: str) -> None:
        gpu = device != "cpu"
        self.n = (4096 if quick else 8192) if gpu else (1024 if quick else 2048)
        self.samples = 5 if quick else 15
        self.sample_ms = 20.0 if quick else 50.0
        self.warmup_ms = 100.0 if quick else 500.0
        self.d2d_bytes = (256 if quick else 1024) * MIB
        self.host_bytes = (64 if quick else 256) * MIB


emit = protocol.emit
step = protocol.step
one_line = protocol.one_line


def measure(
    run: Callable[[], Any], plan: Plan, timer: Callable[[Callable[[], Any], int], float]
) -> tuple[float, int]:
    """(median milliseconds per run, runs per sample): warm-up, calibrate, sample."""
    start = time.perf_counter()
    done = 0
    while done < 3 or (time.perf_counter() - start) * 1000 < plan.warmup_ms:
        timer(run, 1)  # each warm-up run is waited for, so wall time is execution time
        done += 1
    one = max(timer(run, 1), 1e-3)
    runs = max(1, min(10000, math.ceil(plan.sample_ms / one)))
    times = [timer(run, runs) / runs for _ in range(plan.samples)]
    return statistics.median(times), runs


class Torch:
    def __init__(self) -> None:
        self.torch = importlib.import_module("torch")

    def cpu_timer(self, run: Callable[[], Any], runs: int) -> float:
        t0 = time.perf_counter()
        for _ in range(runs):
            run()
        return (time.perf_counter() - t0) * 1000

    def gpu_timer(self, run: Callable[[], Any], runs: int) -> float:
        cuda = self.torch.cuda
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        for _ in range(runs):
            run()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))

    def dtypes(self, device: str) -> list[tuple[str, str | None]]:
        """(dtype, None) to measure, or (dtype, why not) to skip."""
        if device == "cpu":
            return [("fp32", None)]
        major, minor = self.torch.cuda.get_device_capability(0)
        cc = major * 10 + minor
        out: list[tuple[str, str | None]] = [("fp32", None)]
        ampere = None if cc >= 80 else f"needs compute capability 8.0 (this GPU: {major}.{minor})"
        out.append(("tf32", ampere))
        out.append(("fp16", None))
        out.append(("bf16", ampere))
        fp8 = None
        if cc < 89:
            fp8 = f"needs compute capability 8.9 (this GPU: {major}.{minor})"
        elif not hasattr(self.torch, "float8_e4m3fn") or not hasattr(self.torch, "_scaled_mm"):
            fp8 = f"this torch ({self.torch.__version__}) has no float8 matmul"
        out.append(("fp8", fp8))
        return out

    def matmul(self, dtype: str, plan: Plan, device: str) -> dict[str, Any]:
        torch = self.torch
        n = plan.n
        dev = "cuda:0" if device != "cpu" else "cpu"
        if device != "cpu":
            # A, B, C and a float32 copy for the check must fit in half the free memory.
            free, _total = torch.cuda.mem_get_info(0)
            while n > 1024 and 4 * n * n * 4 > free // 2:
                n //= 2
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        torch.manual_seed(0)
        store = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16}
        store["bf16"] = torch.bfloat16
        if dtype == "fp8":
            a = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
            # _scaled_mm wants B column-major: the transpose of a row-major matrix.
            b = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t().contiguous().t()
            one = torch.ones((), device=dev, dtype=torch.float32)

            def run() -> Any:
                out = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                return out[0] if isinstance(out, tuple) else out  # older torch: (out, amax)

        else:
            a = torch.randn(n, n, device=dev, dtype=store[dtype])
            b = torch.randn(n, n, device=dev, dtype=store[dtype])

            def run() -> Any:
                return torch.matmul(a, b)

        timer = self.gpu_timer if device != "cpu" else self.cpu_timer
        ms, runs = measure(run, plan, timer)
        c = run()
        idx = torch.linspace(0, n - 1, CHECK).long().to(dev)
        # float32 first: indexing is not implemented for every float8 type; the values are
        # the same (every fp8, fp16 and bf16 value is exact in float32).
        got = c.float()[idx][:, idx].double().cpu()
        ref = a.float()[idx].double().cpu() @ b.float()[:, idx].double().cpu()
        err = float((got - ref).norm() / ref.norm()) if bool(torch.isfinite(got).all()) else None
        return matmul_record(dtype, device, n, runs, plan.samples, ms, err)

    def copies(self, plan: Plan) -> list[dict[str, Any]]:
        torch = self.torch
        out = []
        free, _total = torch.cuda.mem_get_info(0)
        size = min(plan.d2d_bytes, free // 8)
        src = torch.empty(size, dtype=torch.uint8, device="cuda:0")
        dst = torch.empty_like(src)
        ms, runs = measure(lambda: dst.copy_(src), plan, self.gpu_timer)
        out.append(_copy("d2d", 2 * size, ms, runs, plan))
        src = dst = None  # free the device memory before the host copies
        dev = torch.empty(plan.host_bytes, dtype=torch.uint8, device="cuda:0")
        for pinned in (True, False):
            host = torch.empty(plan.host_bytes, dtype=torch.uint8, pin_memory=pinned)
            kind = "pinned" if pinned else "pageable"
            step(f"copy h2d {kind}")
            ms, runs = measure(
                functools.partial(dev.copy_, host, non_blocking=pinned), plan, self.gpu_timer
            )
            out.append(_copy(f"h2d_{kind}", plan.host_bytes, ms, runs, plan))
            step(f"copy d2h {kind}")
            ms, runs = measure(
                functools.partial(host.copy_, dev, non_blocking=pinned), plan, self.gpu_timer
            )
            out.append(_copy(f"d2h_{kind}", plan.host_bytes, ms, runs, plan))
        return out

    def peers(self, plan: Plan) -> list[dict[str, Any]]:
        torch = self.torch
        out = []
        for a, b in ((0, 1), (1, 0)):
            step(f"peer {a}->{b}")
            src = torch.empty(plan.host_bytes, dtype=torch.uint8, device=f"cuda:{a}")
            dst = torch.empty(plan.host_bytes, dtype=torch.uint8, device=f"cuda:{b}")

            def timer(run: Callable[[], Any], runs: int, a: int = a, b: int = b) -> float:
                # A copy between two devices: wall time between both devices being idle.
                torch.cuda.synchronize(a)
                torch.cuda.synchronize(b)
                t0 = time.perf_counter()
                for _ in range(runs):
                    run()
                torch.cuda.synchronize(a)
                torch.cuda.synchronize(b)
                return (time.perf_counter() - t0) * 1000

            ms, runs = measure(functools.partial(dst.copy_, src), plan, timer)
            record = _copy("peer", plan.host_bytes, ms, runs, plan)
            record.update(
                kind="peer", src=a, dst=b, peer_access=torch.cuda.can_device_access_peer(a, b)
            )
            out.append(record)
        return out


def _copy(path: str, nbytes: int, ms: float, runs: int, plan: Plan) -> dict[str, Any]:
    return {
        "kind": "copy",
        "path": path,
        "bytes": nbytes,
        "median_ms": ms,
        "runs_per_sample": runs,
        "samples": plan.samples,
        "gbs": nbytes / (ms / 1000) / 1e9,
    }


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

    def matmul(self, dtype: str, plan: Plan, device: str) -> dict[str, Any]:
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
        out.append(_copy("d2d", 2 * size, ms, runs, plan))
        dev = cp.empty(plan.host_bytes, dtype=cp.uint8)
        pinned_mem = cp.cuda.alloc_pinned_memory(plan.host_bytes)
        pinned = np.frombuffer(pinned_mem, np.uint8, plan.host_bytes)
        pageable = np.empty(plan.host_bytes, dtype=np.uint8)
        for name, host in (("pinned", pinned), ("pageable", pageable)):
            ms, runs = measure(functools.partial(dev.set, host), plan, self.gpu_timer)
            out.append(_copy(f"h2d_{name}", plan.host_bytes, ms, runs, plan))
            ms, runs = measure(functools.partial(dev.get, out=host), plan, self.gpu_timer)
            out.append(_copy(f"d2h_{name}", plan.host_bytes, ms, runs, plan))
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


def emit_each(what: str, records: Callable[[], Iterable[dict[str, Any]]]) -> None:
    """Each record a measurement yields, as it comes; what it raises as an error record."""
    try:
        for record in records():
            emit(record)
    except Exception as exc:
        emit({"kind": "error", "what": what, "message": one_line(exc)})


def main(argv: list[str]) -> int:
    try:
        args = json.loads(argv[1])
        device = str(args["device"])
    except (IndexError, KeyError, ValueError):
        emit({"kind": "error", "what": "arguments", "message": "expected one JSON argument"})
        return 2
    plan = Plan(bool(args.get("quick")), device)
    wanted = str(args.get("framework") or "torch")
    step(f"import {wanted}")
    if device == "cpu" and wanted == "cupy":
        wanted = "torch"  # CuPy has no CPU path: torch where present, else numpy below
    try:
        fw: Any = Torch() if wanted == "torch" else Cupy()
    except Exception as exc:
        if device == "cpu":
            with contextlib.suppress(Exception):
                emit({"kind": "framework", "name": "numpy"})
                emit(cpu_numpy(plan))
                return 0
        emit({"kind": "error", "what": "import", "message": one_line(exc)})
        return 1
    info: dict[str, Any] = {"kind": "framework", "name": wanted}
    try:
        if wanted == "torch":
            info["version"] = fw.torch.__version__
            if device != "cpu":
                step("cuda init")
                props = fw.torch.cuda.get_device_properties(0)
                info.update(device_name=props.name, memory_total=props.total_memory)
                info["capability"] = list(fw.torch.cuda.get_device_capability(0))
                info["devices"] = fw.torch.cuda.device_count()
        else:
            info["version"] = fw.cp.__version__
    except Exception as exc:
        emit({"kind": "error", "what": "cuda init", "message": one_line(exc)})
        return 1
    emit(info)
    if device == "peers":
        emit_each("peer", lambda: fw.peers(plan))
        return 0
    for dtype, why in fw.dtypes(device):
        if why is not None:
            emit({"kind": "skip", "what": dtype, "why": why})
            continue
        step(f"matmul {dtype}")
        try:
            emit(fw.matmul(dtype, plan, device))
        except Exception as exc:  # out of memory, no kernel for this dtype, ...
            emit({"kind": "error", "what": f"matmul {dtype}", "message": one_line(exc)})
        with contextlib.suppress(Exception):
            if wanted == "torch" and device != "cpu":
                fw.torch.cuda.empty_cache()
    if device != "cpu":
        step("copies")
        emit_each("copies", lambda: fw.copies(plan))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
