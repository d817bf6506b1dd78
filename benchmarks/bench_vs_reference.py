"""gpucheck bench's figures against a hand-written reference, side by side in one run: a plain
timed `torch.matmul` loop and a plain `Tensor.copy_` loop, in the same environment and on the
same device, alternated so that clock or thermal drift hits both alike. Prints each figure,
the reference's, and their ratio; `bench` should be within 5% of the reference. The sustained
run (`bench --duration`, here 3 s) is compared with the same reference matmul: its median
per-second figure.

    python benchmarks/bench_vs_reference.py                       # the test venv, on the CPU
    python benchmarks/bench_vs_reference.py --python ENV/bin/python --device cuda --rounds 5

On a GPU: --device cuda compares FP32 (TF32 off), BF16 and FP16 matmuls, the device-to-device
copy and the pinned host-to-device copy. On the CPU: the FP32 matmul alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = REPO / "src" / "gpucheck" / "bench" / "scripts" / "bench.py"

# The reference: the loop a person would write by hand. Warm-up, then N back-to-back runs
# between two synchronisations, timed with the wall clock; the median of 5 such loops.
REFERENCE = r"""
import json, sys, time
import torch
device, n, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
def loop(fn, count):
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(count):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / count)
    return sorted(times)[2]
out = {}
if what == "matmul":
    torch.backends.cuda.matmul.allow_tf32 = False
    for name, dt in (("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)):
        if device == "cpu" and name != "fp32":
            continue
        a = torch.randn(n, n, device=device, dtype=dt)
        b = torch.randn(n, n, device=device, dtype=dt)
        seconds = loop(lambda: torch.matmul(a, b), 20 if device == "cuda" else 3)
        out[name] = 2 * n**3 / seconds / 1e12
else:
    size = 1024 * 2**20
    src = torch.empty(size, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    out["d2d"] = 2 * size / loop(lambda: dst.copy_(src), 20) / 1e9
    host = torch.empty(256 * 2**20, dtype=torch.uint8).pin_memory()
    dev = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    out["h2d_pinned"] = 256 * 2**20 / loop(lambda: dev.copy_(host, non_blocking=True), 20) / 1e9
print(json.dumps(out))
"""


def reference(python: str, device: str, n: int, what: str) -> dict[str, float]:
    proc = subprocess.run(
        [python, "-c", REFERENCE, device, str(n), what], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"reference failed: {proc.stderr.strip().splitlines()[-1:]}")
    figures: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


def gpucheck(python: str, device: str) -> dict[str, float]:
    args = json.dumps({"device": device, "quick": False, "framework": "torch", "duration": 3})
    proc = subprocess.run([python, str(CHILD), args], capture_output=True, text=True, check=False)
    out = {}
    sustained: dict[str, list[float]] = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        if record.get("kind") == "matmul" and "m" not in record:  # (square: the reference's)
            out[record["dtype"]] = record["tflops"]
        elif record.get("kind") == "sustained":
            sustained.setdefault(record["dtype"], []).append(record["tflops"])
        elif record.get("kind") == "copy" and record["path"] in ("d2d", "h2d_pinned"):
            out[record["path"]] = record["gbs"]
    for dtype, figures in sustained.items():
        out[f"{dtype} sust."] = statistics.median(figures)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", help="an interpreter with torch (default: the test venv)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    python = args.python
    if python is None:
        sys.path.insert(0, str(REPO / "tests"))
        from support.venvs import venv_python

        print("building or reusing the torch test environment ...", flush=True)
        python = str(venv_python("torch-2.13.0"))
    n = 8192 if args.device == "cuda" else 2048  # the sizes bench uses (its default mode)
    ours: dict[str, list[float]] = {}
    theirs: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for key, value in gpucheck(python, args.device).items():
            ours.setdefault(key, []).append(value)
        ref = reference(python, args.device, n, "matmul")
        if args.device == "cuda":
            ref |= reference(python, args.device, n, "copy")
        for key, value in ref.items():
            theirs.setdefault(key, []).append(value)
            theirs.setdefault(f"{key} sust.", []).append(value)  # (the same loop, held)
    head = f"{'figure':12} {'gpucheck':>12} {'reference':>12} {'ratio':>7}"
    print(f"\n{head}  ({args.rounds} rounds, medians)")
    worst = 0.0
    for key in theirs:
        if key not in ours:
            continue
        mine, ref_value = statistics.median(ours[key]), statistics.median(theirs[key])
        unit = "GB/s" if key in ("d2d", "h2d_pinned") else "TFLOPS"
        ratio = mine / ref_value
        worst = max(worst, abs(ratio - 1))
        print(f"{key:12} {mine:12.3f} {ref_value:12.3f} {ratio:7.3f}  {unit}")
    verdict = "within" if worst <= 0.05 else "NOT within"
    print(f"\nlargest difference {worst:.1%}: {verdict} 5% of the hand-written reference")


if __name__ == "__main__":
    main()
