"""All-reduce bus bandwidth through torch.distributed, for `gpucheck bench` on several GPUs: what
cluster health suites run before admitting a node (nccl-tests' all_reduce_perf, NHC's
check_nccl_allreduce). Run in a child process (child/run.py) under the probed environment's
interpreter.

`python allreduce.py '{"world": 2, "backend": "nccl" | "gloo", "device": "cuda" | "cpu",
"sizes": [1048576, ...], "iterations": 20}'`: starts `world` worker processes (spawned, one per
GPU: rank r uses cuda:r of the GPUs CUDA_VISIBLE_DEVICES names; or CPU processes with gloo,
the same harness without a GPU), joined through a TCP store on 127.0.0.1. Per size: a float32
tensor of that many bytes holding rank + 1 on each rank, reduced (sum) 3 times to warm up, then
`iterations` times back to back, timed on each rank from a barrier; the slowest rank's time
counts (gpucheck/child/collective.py, which preflight's job-wide all-reduce shares). The sum
must be world * (world + 1) / 2 everywhere.

stdout: one JSON object per line ({"kind": "allreduce" | "error", ...}); stderr: "@ <step>".
Standard library only apart from torch; Python 3.8+.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import socket
import sys
from typing import Any

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py, which every child script shares)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

from . import collective, protocol

emit = protocol.emit
step = protocol.step
one_line = protocol.one_line


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def worker(rank: int, args: dict[str, Any], port: int, results: Any) -> None:
    """One rank: join the group, reduce each size, report (rank 0) what the slowest rank saw."""
    torch = importlib.import_module("torch")
    dist = importlib.import_module("torch.distributed")
    world, backend = int(args["world"]), str(args["backend"])
    gpu = args.get("device") == "cuda"
    try:
        if gpu:
            torch.cuda.set_device(rank)
        dist.init_process_group(
            backend,
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=float(args.get("join_timeout", 60))),
        )
        device = f"cuda:{rank}" if gpu else "cpu"
        iterations = int(args.get("iterations", 20))
        for size in args["sizes"]:
            measured = collective.timed_allreduce(
                torch, dist, rank, world, int(size), iterations, device
            )
            if rank == 0:
                del measured["own_ms_per_op"]
                results.put({"kind": "allreduce", "backend": backend, **measured})
        dist.destroy_process_group()
    except Exception as exc:
        results.put({"kind": "error", "what": f"rank {rank}", "message": one_line(exc)})


def main(argv: list[str]) -> int:
    try:
        args = json.loads(argv[1])
        world = int(args["world"])
        sizes = [int(s) for s in args["sizes"]]
    except (IndexError, KeyError, TypeError, ValueError):
        emit({"kind": "error", "what": "arguments", "message": "expected one JSON argument"})
        return 2
    if world < 2 or not sizes:
        emit({"kind": "error", "what": "arguments", "message": "needs 2+ ranks and a size"})
        return 2
    step("import torch")
    try:
        importlib.import_module("torch.distributed")
    except Exception as exc:
        emit({"kind": "error", "what": "import", "message": one_line(exc)})
        return 1
    import multiprocessing

    # spawn, not fork: CUDA cannot be used in a forked child of a process that touched it.
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = free_port()
    step(f"start {world} ranks ({args.get('backend')})")
    ranks = [context.Process(target=worker, args=(r, args, port, results)) for r in range(world)]
    for process in ranks:
        process.start()
    expected = len(sizes)
    got = 0
    failed = False
    while got < expected and not failed:
        try:
            record = results.get(timeout=1.0)
        except Exception:  # queue.Empty: see whether a rank died without a word
            if any(p.exitcode not in (None, 0) for p in ranks):
                dead = [f"rank {r}: exit {p.exitcode}" for r, p in enumerate(ranks) if p.exitcode]
                emit({"kind": "error", "what": "ranks", "message": "; ".join(dead)})
                failed = True
            elif all(p.exitcode is not None for p in ranks):
                break
            continue
        emit(record)
        if record.get("kind") == "allreduce":
            got += 1
        else:
            failed = True
    for process in ranks:
        process.join(timeout=5 if not failed else 1)
        if process.is_alive():
            process.kill()
    return 0 if got == expected else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
