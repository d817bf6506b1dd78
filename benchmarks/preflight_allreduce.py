"""gpucheck preflight's job-wide all-reduce, measured as a job runs it (under the real torchrun,
one gpucheck per rank), against published nccl-tests figures on a GPU machine and against a
hand-written `torch.distributed.all_reduce` loop (allreduce_vs_reference.py's) everywhere.

    python benchmarks/preflight_allreduce.py                      # gloo, 2 CPU ranks, here
    python benchmarks/preflight_allreduce.py --python ENV/bin/python --world 8 --size 1GiB \\
        --published h100-sxm-8                                    # NCCL on an 8-GPU node

Bus bandwidth as nccl-tests defines it (its doc/PERFORMANCE.md): busbw = algbw * 2(n-1)/n.
NCCL reaches its peak only with large messages: compare at 1 GiB or more (nccl-tests' sweeps
go to 8 GiB). preflight's figure is the slowest rank's time over 10 timed all-reduces after 3
warm-up ones; the verdict (ready or not) does not matter here, only the measurement.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))

# Published all_reduce_perf bus bandwidth at large sizes, GB/s (low, high), from Alaya's
# "NCCL-tests in practice" (https://docs.alayanew.com/en/docs/tech-blog/2026-05-06-nccl-tests,
# its single-node reference table): what a healthy node of each kind reaches.
PUBLISHED: dict[str, tuple[int, float, float, str]] = {
    # name: (GPUs, low, high, what)
    "h100-sxm-8": (8, 460.0, 480.0, "8x H100 SXM5, NVLink 4 through NVSwitch"),
    "a100-sxm-8": (8, 230.0, 250.0, "8x A100 SXM4, NVLink 3"),
    "h100-pcie-8": (8, 35.0, 45.0, "8x H100 PCIe, no NVSwitch (PCIe Gen5)"),
}


def preflight(python: str, world: int, size: str, timeout: int) -> tuple[float, int, str]:
    """One job: `world` ranks under torchrun, each `gpucheck preflight`; rank 0's all-reduce
    (busbw in GB/s, bytes, backend)."""
    torchrun = Path(python).parent / "torchrun"
    command = [
        str(torchrun), f"--nproc-per-node={world}", "--no-python",
        sys.executable, "-m", "gpucheck", "preflight", "--json", f"--python={python}",
        f"--size={size}", f"--timeout={timeout}", "--min-fraction=0",
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout + 120, check=False
    )
    try:
        verdict = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(f"no verdict from rank 0: {done.stderr.strip()[-500:]}") from None
    allreduce = verdict.get("allreduce")
    if not allreduce:
        problems = "; ".join(p["title"] for p in verdict["problems"])
        raise SystemExit(f"preflight measured no all-reduce: {verdict['summary']}: {problems}")
    return float(allreduce["busbw_gbs"]), int(allreduce["bytes"]), str(allreduce["backend"])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--python", help="an interpreter with torch (default: the test venv)")
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--size", default="16MiB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=120)
    parser.add_argument("--published", choices=sorted(PUBLISHED))
    args = parser.parse_args()
    python = args.python
    if python is None:
        from support.venvs import venv_python

        python = str(venv_python("torch-2.13.0"))
    runs = [preflight(python, args.world, args.size, args.timeout) for _ in range(args.rounds)]
    ours = statistics.median(busbw for busbw, _, _ in runs)
    _, size, backend = runs[0]
    print(f"gpucheck preflight all-reduce: {args.world} ranks, {backend}, {size / 2**20:,.0f} MiB")
    print(f"  busbw {ours:,.3f} GB/s (median of {args.rounds} jobs)")
    if backend == "gloo":
        # The hand-written loop of allreduce_vs_reference.py, on the same ranks and size.
        import allreduce_vs_reference as reference

        reference.SIZES = [size]
        spec = argparse.Namespace(world=args.world, backend="gloo", device="cpu", iterations=10)
        theirs = statistics.median(
            reference.reference(python, spec)[size] for _ in range(args.rounds)
        )
        print(f"  hand-written loop: {theirs:,.3f} GB/s; ratio {ours / theirs:.2f}")
    if args.published and backend != "nccl":
        print("  (the published figures are NCCL's on GPUs: not compared with gloo)")
    elif args.published:
        gpus, low, high, what = PUBLISHED[args.published]
        if gpus != args.world:
            print(f"  (published figure is for {gpus} ranks, this run has {args.world})")
        share = ours / low
        print(f"  published nccl-tests busbw, {what}: {low:g}-{high:g} GB/s at large sizes")
        print(f"  preflight reaches {share:.0%} of the low end")


if __name__ == "__main__":
    main()
