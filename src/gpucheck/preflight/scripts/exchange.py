"""One rank of `gpucheck preflight`: post this rank's report, and (rank 0) gather the job's,
through a torch.distributed.TCPStore that rank 0 hosts; then one timed all-reduce over the
whole job. Every wait is bounded, so rank 0 always knows which ranks are missing.

`python exchange.py ARGS` (JSON: rank, world, local_rank, addr, port, arrival_timeout,
collective_timeout, size, iterations, steps); stdin: this rank's report (one JSON line), and,
for rank 0, later the job's verdict (one JSON line: exit_code, named: the ranks it names),
which it hands to the other ranks.

0. The store: torchrun's agent's where it serves one (every rank a client), else one that
   rank 0 hosts; the keys under gpucheck-preflight/<job id>/<torchrun's restart count>.
1. Each rank sets `report/<rank>` (its report and whether CUDA works here). Rank 0 polls the
   keys until all arrive or arrival_timeout passes, emitting each report as it comes; the
   others wait for `decision` as long.
2. Rank 0 sets `decision`: "stop" (someone is missing) or the backend ("nccl" where every rank
   has CUDA, else "gloo"). On a backend, every rank joins a process group on the same store
   (timeout: collective_timeout), times its local step (the fastest of `steps` matmuls on
   its device; GPUCHECK_PREFLIGHT_TEST_DELAY_MS, a test hook, adds a sleep to it) and the
   all-reduce (collective.py), and sets `time/<rank>` (or, where its collective failed,
   `failed/<rank>`: it is alive, another rank was lost).
3. Rank 0 emits the all-reduce and each time as it arrives (until the time is up), emits
   "collected", reads the verdict from stdin, sets `verdict`, waits briefly for each rank's
   `ack/<rank>` and exits; the others emit the verdict they read and exit.

stdout: JSON lines ({"kind": "report" | "missing" | "backend" | "allreduce" | "time" |
"survived" | "collective-error" | "collected" | "verdict" | "error", ...}); stderr: "@ <step>".
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import select
import sys
import time
from collections.abc import Mapping
from typing import Any

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py and collective.py, which child scripts share)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

from . import collective, protocol

emit = protocol.emit
step = protocol.step
one_line = protocol.one_line
DELAY_HOOK = "GPUCHECK_PREFLIGHT_TEST_DELAY_MS"  # test hook: a slow rank's extra step time
POLL = 0.2  # seconds between looks at the store
ACK_WAIT = 5.0  # seconds rank 0 keeps its store up for the others to read the verdict


def seconds(value: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=max(0.1, value))


def read_line(timeout: float) -> str:
    """A line from stdin within `timeout` seconds ("" when none came)."""
    ready, _, _ = select.select([sys.stdin], [], [], max(0.0, timeout))
    return sys.stdin.readline() if ready else ""


def gather_reports(store: Any, world: int, until: float) -> list[int]:
    """Rank 0: emit each rank's report as it arrives; the ranks still missing at `until`."""
    missing = list(range(world))
    while missing:
        for rank in list(missing):
            key = f"report/{rank}"
            if store.check([key]):
                posted = json.loads(store.get(key))
                emit({"kind": "report", "rank": rank, **posted})
                missing.remove(rank)
        if missing and time.monotonic() >= until:
            break
        if missing:
            time.sleep(POLL)
    return missing


def local_steps(torch: Any, device: str, steps: int) -> float:
    """The fastest of `steps` local steps (a 512 x 512 matmul on this rank's device), in ms:
    a rank whose best step is slow is slow in itself (a throttled GPU, a busy node), not
    unlucky in one moment of a shared machine."""
    delay = float(os.environ.get(DELAY_HOOK) or 0) / 1000
    a = torch.rand((512, 512), device=device)
    b = torch.rand((512, 512), device=device)
    times = []
    for _ in range(max(1, steps)):
        start = time.perf_counter()
        torch.mm(a, b)
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)
        if delay:
            time.sleep(delay)
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def measure(torch: Any, dist: Any, store: Any, args: dict[str, Any], backend: str) -> None:
    """Join the job's process group, time the local step and the all-reduce, post the times."""
    rank, world = int(args["rank"]), int(args["world"])
    device = "cpu"
    if backend == "nccl":
        # Its local rank among the GPUs it sees (modulo: where Slurm binds one GPU to each
        # task, every task sees its own as cuda:0).
        local = args.get("local_rank")
        index = (int(local) if local is not None else rank) % torch.cuda.device_count()
        device = f"cuda:{index}"
        torch.cuda.set_device(index)
    prefix = dist.PrefixStore("preflight/group", store)
    step(f"join the process group ({backend})")
    dist.init_process_group(
        backend,
        store=prefix,
        rank=rank,
        world_size=world,
        timeout=seconds(float(args["collective_timeout"])),
    )
    step_ms = local_steps(torch, device, int(args.get("steps", 10)))
    step("all-reduce")
    measured = collective.timed_allreduce(
        torch, dist, rank, world, int(args["size"]), int(args["iterations"]), device
    )
    own = measured.pop("own_ms_per_op")
    store.set(f"time/{rank}", json.dumps({"step_ms": step_ms, "allreduce_ms": own}))
    if rank == 0:
        emit({"kind": "allreduce", "backend": backend, **measured})
    dist.destroy_process_group()


def gather_times(store: Any, ranks: list[int], until: float) -> None:
    """Each rank's times as they come, or its word that its collective failed (it is alive:
    another rank was lost); a rank with neither by `until` is lost itself."""
    waiting = list(ranks)
    while waiting and time.monotonic() < until:
        for rank in list(waiting):
            if store.check([f"time/{rank}"]):
                emit({"kind": "time", "rank": rank, **json.loads(store.get(f"time/{rank}"))})
                waiting.remove(rank)
            elif store.check([f"failed/{rank}"]):
                emit({"kind": "survived", "rank": rank})
                waiting.remove(rank)
        if waiting:
            time.sleep(POLL)


def lead(torch: Any, dist: Any, store: Any, args: dict[str, Any], start: float) -> None:
    """Rank 0's part: gather, decide, measure, hand out the verdict."""
    world = int(args["world"])
    arrival, collective_timeout = float(args["arrival_timeout"]), float(args["collective_timeout"])
    step("gather the reports")
    missing = gather_reports(store, world, start + arrival)
    cuda = [
        json.loads(store.get(f"report/{r}")).get("cuda") for r in range(world) if r not in missing
    ]
    if missing:
        emit({"kind": "missing", "ranks": missing, "waited": arrival})
        store.set("decision", "stop")
    else:
        backend = "nccl" if all(cuda) and dist.is_nccl_available() else "gloo"
        emit({"kind": "backend", "backend": backend})
        store.set("decision", backend)
        measuring = time.monotonic()
        others = list(range(1, world))
        try:
            measure(torch, dist, store, args, backend)
        except Exception as exc:  # a rank lost in the collective: gloo's error, or the timeout
            emit({"kind": "collective-error", "message": one_line(exc)})
            emit({"kind": "survived", "rank": 0})
        else:
            others = list(range(world))
        # The survivors of a failed collective say so as their own error comes: a little longer.
        gather_times(store, others, max(measuring + collective_timeout, time.monotonic() + 5))
    emit({"kind": "collected"})
    verdict = read_line(float(args.get("verdict_wait", 30))).strip() or '{"exit_code": 5}'
    store.set("verdict", verdict)
    arrived = [r for r in range(1, world) if r not in missing]
    until = time.monotonic() + ACK_WAIT
    while arrived and time.monotonic() < until:
        arrived = [r for r in arrived if not store.check([f"ack/{r}"])]
        time.sleep(POLL)


def follow(torch: Any, dist: Any, store: Any, args: dict[str, Any]) -> None:
    """Another rank's part: wait for rank 0's decision, measure with it, take the verdict."""
    rank = int(args["rank"])
    wait = float(args["arrival_timeout"]) + 5
    step("wait for rank 0's decision")
    store.wait(["decision"], seconds(wait))
    decision = store.get("decision").decode()
    if decision != "stop":
        try:
            measure(torch, dist, store, args, decision)
        except Exception as exc:
            emit({"kind": "collective-error", "message": one_line(exc)})
            store.set(f"failed/{rank}", one_line(exc))
    step("wait for the verdict")
    store.wait(["verdict"], seconds(float(args["collective_timeout"]) + 45))
    emit({"kind": "verdict", **json.loads(store.get("verdict"))})
    store.set(f"ack/{rank}", "1")


def store_prefix(environ: Mapping[str, str]) -> str:
    """The keys' prefix: the job's own (SLURM_JOB_ID, else torchrun's TORCHELASTIC_RUN_ID), so
    that two jobs meeting at one address and port never read each other's reports, and per
    attempt (torchrun's store outlives a restart)."""
    job = environ.get("SLURM_JOB_ID") or environ.get("TORCHELASTIC_RUN_ID") or "-"
    attempt = environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return f"gpucheck-preflight/{job}/{attempt}"


def main(argv: list[str]) -> int:
    start = time.monotonic()
    try:
        args = json.loads(argv[1])
        rank = int(args["rank"])
        int(args["world"])
        report = json.loads(sys.stdin.readline())
    except (IndexError, KeyError, TypeError, ValueError):
        emit({"kind": "error", "what": "arguments", "message": "expected ARGS and a report"})
        return 2
    step("import torch")
    try:
        torch = importlib.import_module("torch")
        dist = importlib.import_module("torch.distributed")
    except Exception as exc:
        emit({"kind": "error", "what": "import", "message": one_line(exc)})
        return 1
    where = f"{args['addr']}:{args['port']}"
    # Under torchrun the agent already serves a store there (it says so in
    # TORCHELASTIC_USE_AGENT_STORE): every rank joins it; elsewhere rank 0 hosts one.
    hosting = rank == 0 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"
    step(f"{'host' if hosting else 'reach'} the store at {where}")
    try:
        served = dist.TCPStore(
            str(args["addr"]),
            int(args["port"]),
            None,
            hosting,
            seconds(float(args["arrival_timeout"])),
            wait_for_workers=False,
        )
        store = dist.PrefixStore(store_prefix(os.environ), served)
        cuda = bool(torch.cuda.is_available())
        store.set(f"report/{rank}", json.dumps({"report": report, "cuda": cuda}))
    except Exception as exc:
        what = "host a" if hosting else "reach rank 0's"
        emit(
            {
                "kind": "error",
                "what": "store",
                "message": f"cannot {what} store at {where}: " + one_line(exc),
            }
        )
        return 1
    try:
        if rank == 0:
            lead(torch, dist, store, args, start)
        else:
            follow(torch, dist, store, args)
    except Exception as exc:
        emit({"kind": "error", "what": "exchange", "message": one_line(exc)})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
