"""gpucheck bench's all-reduce harness (bench/scripts/allreduce.py) against a hand-written
`torch.distributed.all_reduce` loop, side by side in one run, alternated: the same ranks, sizes
and backend. Prints each size's bus bandwidth, the reference's, and their ratio (the harness
should be within 10%: its extra is a barrier and one MAX reduction per size).

    python benchmarks/allreduce_vs_reference.py                 # gloo, 2 CPU processes
    python benchmarks/allreduce_vs_reference.py --python ENV/bin/python --backend nccl \\
        --device cuda --world 8
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = REPO / "src" / "gpucheck" / "bench" / "scripts" / "allreduce.py"
SIZES = [2**20, 2**24]

# The loop a person would write: spawn the ranks, all_reduce N times, time rank 0's wall clock.
REFERENCE = r"""
import datetime, json, os, sys, time
import torch, torch.distributed as dist, torch.multiprocessing as mp
world, backend, device = int(sys.argv[1]), sys.argv[2], sys.argv[3]
sizes, iters = json.loads(sys.argv[4]), int(sys.argv[5])
def rank_main(rank, port, queue):
    url = f"tcp://127.0.0.1:{port}"
    dist.init_process_group(backend, init_method=url, rank=rank, world_size=world)
    dev = f"cuda:{rank}" if device == "cuda" else "cpu"
    if device == "cuda":
        torch.cuda.set_device(rank)
    for size in sizes:
        t = torch.ones(size // 4, device=dev)
        for _ in range(3):
            dist.all_reduce(t)
        dist.barrier()
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        if device == "cuda":
            torch.cuda.synchronize()
        if rank == 0:
            algbw = size / ((time.perf_counter() - t0) / iters) / 1e9
            queue.put((size, algbw * 2 * (world - 1) / world))
    dist.destroy_process_group()
if __name__ == "__main__":
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    ctx = mp.get_context("spawn"); queue = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, port, queue)) for r in range(world)]
    [p.start() for p in procs]
    out = dict(queue.get(timeout=300) for _ in sizes)
    [p.join() for p in procs]
    print(json.dumps({str(k): v for k, v in out.items()}))
"""


def reference(python: str, args: argparse.Namespace) -> dict[int, float]:
    # A file, not -c: spawned ranks import the main module again to find rank_main.
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "reference_allreduce.py"
        script.write_text(REFERENCE)
        proc = subprocess.run(
            [python, str(script), str(args.world), args.backend, args.device,
             json.dumps(SIZES), str(args.iterations)],
            capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"reference failed: {proc.stderr.strip().splitlines()[-1:]}")
    return {int(k): v for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}


def gpucheck(python: str, args: argparse.Namespace) -> dict[int, float]:
    spec = {
        "world": args.world,
        "backend": args.backend,
        "device": args.device,
        "sizes": SIZES,
        "iterations": args.iterations,
    }
    proc = subprocess.run(
        [python, str(CHILD), json.dumps(spec)], capture_output=True, text=True, check=False
    )
    out = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        if record.get("kind") == "allreduce":
            out[int(record["bytes"])] = float(record["busbw_gbs"])
        elif record.get("kind") == "error":
            raise SystemExit(f"gpucheck's harness failed: {record}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--python", help="an interpreter with torch (default: the test venv)")
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    python = args.python
    if python is None:
        sys.path.insert(0, str(REPO / "tests"))
        from support.venvs import venv_python

        python = str(venv_python("torch-2.13.0"))
    ours: dict[int, list[float]] = {}
    theirs: dict[int, list[float]] = {}
    for _ in range(args.rounds):  # alternated: load on the machine hits both alike
        for size, value in gpucheck(python, args).items():
            ours.setdefault(size, []).append(value)
        for size, value in reference(python, args).items():
            theirs.setdefault(size, []).append(value)
    print(f"all-reduce, {args.world} ranks, {args.backend} on {args.device}, {args.rounds} rounds")
    print(f"{'size':>8} {'gpucheck':>10} {'reference':>10} {'ratio':>7}   busbw GB/s, medians")
    worst = 0.0
    for size in SIZES:
        mine, ref = statistics.median(ours[size]), statistics.median(theirs[size])
        worst = max(worst, abs(mine / ref - 1))
        print(f"{size // 2**20:>5} MiB {mine:10.3f} {ref:10.3f} {mine / ref:7.3f}")
    verdict = "within" if worst <= 0.10 else "NOT within"
    print(f"\nlargest difference {worst:.1%}: {verdict} 10% of the hand-written reference")


if __name__ == "__main__":
    main()
