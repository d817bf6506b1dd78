"""The timed all-reduce that child scripts share (bench's allreduce.py on one machine's GPUs,
preflight's exchange.py over a whole job): one size, reduced `iterations` times back to back
from a barrier, the slowest rank's time counting. Standard library only; torch and
torch.distributed are handed in by the script that imported them, so that this module loads
anywhere (Python 3.8+, like protocol.py beside it).

Figures as nccl-tests defines them (its doc/PERFORMANCE.md): algorithm bandwidth = bytes /
time; bus bandwidth = algbw * 2 (n - 1) / n, the rate each link carries in a ring all-reduce,
which is what compares with a link's speed. Each rank holds rank + 1 everywhere, so the sum
must be world * (world + 1) / 2 on every rank.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # mypy treats this name as True; typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

WARMUP = 3


def bus_bandwidth(algbw: float, world: int) -> float:
    """nccl-tests' bus bandwidth of a ring all-reduce among `world` ranks."""
    return algbw * 2 * (world - 1) / world


def timed_allreduce(
    torch: Any, dist: Any, rank: int, world: int, size: int, iterations: int, device: str
) -> dict[str, Any]:
    """One size, measured: the record every rank computes alike (the slowest rank's time),
    plus this rank's own time (`own_ms_per_op`). Raises what torch.distributed raises."""
    gpu = device.startswith("cuda")
    count = max(1, int(size) // 4)
    tensor = torch.full((count,), float(rank + 1), dtype=torch.float32, device=device)
    expected = world * (world + 1) / 2
    for _ in range(WARMUP):
        tensor.fill_(float(rank + 1))
        dist.all_reduce(tensor)
    correct = bool(tensor[0].item() == expected and tensor[-1].item() == expected)
    dist.barrier()
    if gpu:
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(tensor)
    if gpu:
        torch.cuda.synchronize(device)
    own = time.perf_counter() - start
    elapsed = torch.tensor([own], dtype=torch.float64)
    ok = torch.tensor([1 if correct else 0], dtype=torch.int32)
    if gpu:
        elapsed, ok = elapsed.to(device), ok.to(device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank's time
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    seconds = float(elapsed.item()) / iterations
    algbw = count * 4 / seconds / 1e9
    return {
        "world": world,
        "bytes": count * 4,
        "iterations": iterations,
        "ms_per_op": seconds * 1000,
        "own_ms_per_op": own / iterations * 1000,
        "algbw_gbs": algbw,
        "busbw_gbs": bus_bandwidth(algbw, world),
        "correct": bool(ok.item()),
    }
