"""Measure one GPU (or the CPU) for `gpucheck bench`, run in a child process (child/run.py).

`python bench.py '{"device": "cuda" | "cpu" | "peers", "quick": false, "framework": "torch",
"duration": 0, "numa_node": null}'` under the interpreter of the probed environment, with
CUDA_VISIBLE_DEVICES set by the parent to the one GPU measured (two for "peers"), so that the
GPU is always device 0 here.

Method (docs/commands/bench.md says the same):
- Matmul: C = A @ B on n x n matrices (n = 8192, --quick 4096; CPU 2048 / 1024) per dtype the
  GPU has (fp32 with TF32 off, tf32, fp16, bf16, fp8 through torch._scaled_mm), 2 n^3 FLOPs
  each. Warm-up first (at least 3 runs and 0.5 s; --quick 0.1 s), then `samples` timed
  samples (15; --quick 5) of as many back-to-back runs as fill 50 ms (--quick 20 ms), timed
  with CUDA events; the figure is the median sample. Then a 16 x 16 block of C is checked
  against the same block computed on the CPU in float64 from the same (rounded) inputs.
  In FP16 and BF16 also the skinny GEMMs of LLM inference: m = 16 and 128 rows (tokens) times
  an n x n weight (m x n x n), shown beside the square figure.
- Sustained ("duration" > 0): the square matmul of the fastest dtype measured, back to back for
  that many seconds, one figure per second ({"kind": "sustained", "t": s, "tflops": x}):
  throttling shows as a drop (the parent samples NVML's clocks and power meanwhile).
- Copies: device-to-device of 1 GiB (--quick 256 MiB), counted as read + write (2 x bytes,
  as NVIDIA's bandwidthTest does); host-to-device and device-to-host of 256 MiB (--quick
  64 MiB) from pinned and from pageable host memory, allocated while this process runs on the
  CPUs of the GPU's NUMA node ("numa_node", from sysfs; Linux places a page on the node of the
  CPU that first touches it); between two GPUs both ways, with peer access as CUDA reports it.
  Same warm-up, samples and median.

stdout: one JSON object per line ({"kind": "framework" | "matmul" | "sustained" | "copy" |
"peer" | "skip" | "error", ...}); stderr: "@ <step>" before each step. Standard library only
apart from the framework; runs on Python 3.8+ (annotations are never evaluated). CuPy's path
and the numpy CPU figure: bench_cupy.py; what both share: bench_common.py.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py, which every child script shares)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

from . import protocol
from .bench_common import (
    CHECK,
    SKINNY_DTYPES,
    SKINNY_ROWS,
    Plan,
    copy_record,
    matmul_record,
    measure,
    on_node,
)
from .bench_cupy import Cupy, cpu_numpy

emit = protocol.emit
step = protocol.step
one_line = protocol.one_line


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

    def operands(self, dtype: str, plan: Plan, device: str, m: int | None = None) -> Any:
        """(run, a, b, n): one matmul of `dtype`, square or m x n times n x n."""
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
        rows = m or n
        if dtype == "fp8":
            a = torch.randn(rows, n, device=dev).to(torch.float8_e4m3fn)
            # _scaled_mm wants B column-major: the transpose of a row-major matrix.
            b = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t().contiguous().t()
            one = torch.ones((), device=dev, dtype=torch.float32)

            def run() -> Any:
                out = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                return out[0] if isinstance(out, tuple) else out  # older torch: (out, amax)

        else:
            a = torch.randn(rows, n, device=dev, dtype=store[dtype])
            b = torch.randn(n, n, device=dev, dtype=store[dtype])

            def run() -> Any:
                return torch.matmul(a, b)

        return run, a, b, n

    def matmul(self, dtype: str, plan: Plan, device: str, m: int | None = None) -> dict[str, Any]:
        torch = self.torch
        run, a, b, n = self.operands(dtype, plan, device, m)
        timer = self.gpu_timer if device != "cpu" else self.cpu_timer
        ms, runs = measure(run, plan, timer)
        c = run()
        dev = c.device
        rows = torch.linspace(0, (m or n) - 1, min(CHECK, m or n)).long().to(dev)
        idx = torch.linspace(0, n - 1, CHECK).long().to(dev)
        # float32 first: indexing is not implemented for every float8 type; the values are
        # the same (every fp8, fp16 and bf16 value is exact in float32).
        got = c.float()[rows][:, idx].double().cpu()
        ref = a.float()[rows].double().cpu() @ b.float()[:, idx].double().cpu()
        err = float((got - ref).norm() / ref.norm()) if bool(torch.isfinite(got).all()) else None
        return matmul_record(dtype, device, n, runs, plan.samples, ms, err, m)

    def sustained(self, dtype: str, plan: Plan, device: str) -> Iterable[dict[str, Any]]:
        """The square matmul back to back for plan.duration seconds: one figure a second."""
        run, _a, _b, n = self.operands(dtype, plan, device)
        timer = self.gpu_timer if device != "cpu" else self.cpu_timer
        one = max(timer(run, 1), 1e-3)
        runs = max(1, math.ceil(1000.0 / one))  # about a second a window
        start = time.perf_counter()
        while time.perf_counter() - start < plan.duration:
            ms = timer(run, runs)
            yield {
                "kind": "sustained",
                "dtype": dtype,
                "n": n,
                "t": round(time.perf_counter() - start, 3),
                "tflops": 2 * n**3 * runs / (ms / 1000) / 1e12,
            }

    def copies(self, plan: Plan) -> list[dict[str, Any]]:
        torch = self.torch
        out = []
        free, _total = torch.cuda.mem_get_info(0)
        size = min(plan.d2d_bytes, free // 8)
        src = torch.empty(size, dtype=torch.uint8, device="cuda:0")
        dst = torch.empty_like(src)
        ms, runs = measure(lambda: dst.copy_(src), plan, self.gpu_timer)
        out.append(copy_record("d2d", 2 * size, ms, runs, plan))
        src = dst = None  # free the device memory before the host copies
        dev = torch.empty(plan.host_bytes, dtype=torch.uint8, device="cuda:0")
        for pinned in (True, False):
            with on_node(plan.numa_node) as placed:  # (first touched, so placed, on the node)
                host = torch.empty(plan.host_bytes, dtype=torch.uint8, pin_memory=pinned)
                host.fill_(1)
            kind = "pinned" if pinned else "pageable"
            step(f"copy h2d {kind}")
            ms, runs = measure(
                functools.partial(dev.copy_, host, non_blocking=pinned), plan, self.gpu_timer
            )
            out.append(copy_record(f"h2d_{kind}", plan.host_bytes, ms, runs, plan, placed))
            step(f"copy d2h {kind}")
            ms, runs = measure(
                functools.partial(host.copy_, dev, non_blocking=pinned), plan, self.gpu_timer
            )
            out.append(copy_record(f"d2h_{kind}", plan.host_bytes, ms, runs, plan, placed))
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
            record = copy_record("peer", plan.host_bytes, ms, runs, plan)
            record.update(
                kind="peer", src=a, dst=b, peer_access=torch.cuda.can_device_access_peer(a, b)
            )
            out.append(record)
        return out


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
    node = args.get("numa_node")
    plan = Plan(
        bool(args.get("quick")),
        device,
        float(args.get("duration") or 0.0),
        int(node) if isinstance(node, int) and node >= 0 else None,
    )
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
    fastest: tuple[float, str] | None = None
    for dtype, why in fw.dtypes(device):
        if why is not None:
            emit({"kind": "skip", "what": dtype, "why": why})
            continue
        shapes: list[int | None] = [None]
        if device != "cpu" and wanted == "torch" and dtype in SKINNY_DTYPES:
            shapes += list(SKINNY_ROWS)
        for m in shapes:
            step(f"matmul {dtype}" + (f" {m} rows" if m else ""))
            try:
                record = fw.matmul(dtype, plan, device, m)
                emit(record)
                if m is None and record["correct"] and dtype != "fp8":
                    fastest = max(fastest or (0.0, dtype), (record["tflops"], dtype))
            except Exception as exc:  # out of memory, no kernel for this dtype, ...
                what = f"matmul {dtype}" + (f" {m}x{plan.n}x{plan.n}" if m else "")
                emit({"kind": "error", "what": what, "message": one_line(exc)})
            with contextlib.suppress(Exception):
                if wanted == "torch" and device != "cpu":
                    fw.torch.cuda.empty_cache()
    if plan.duration > 0 and fastest is not None:
        chosen = fastest[1]  # (fp8 needs scales per run: the fastest of the others)
        step(f"sustained {chosen} {plan.duration:g} s")
        emit_each("sustained", lambda: fw.sustained(chosen, plan, device))
    if device != "cpu":
        step("copies")
        emit_each("copies", lambda: fw.copies(plan))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
