"""bench's verdicts on several GPUs together: the GPU-to-GPU copy matrix and the all-reduce
bus bandwidth, each against the link the topology offers. Pure: no I/O.

The link: NVML's best PCIe generation and width of the GPUs (their one-way rate), unless a
copy between two GPUs ran faster than PCIe can carry, which only a direct link (NVLink) does;
then the fastest pair measured is the figure an NVLink pair is held to.
"""

from __future__ import annotations

from gpucheck.bench.measurements import BenchRun, Peer
from gpucheck.bench.spec import Link, best_link
from gpucheck.compat.gpus import GpuIndex
from gpucheck.model.finding import Finding, Status, Subjects
from gpucheck.model.fix import Fix, Step
from gpucheck.model.layers import Layer

# Below these shares of the link's rate, bench warns. A pair with peer access moves close to
# the link's rate (CUDA's p2pBandwidthLatencyTest); nccl-tests' ring all-reduce reaches most
# of it in busbw at large sizes (its doc/PERFORMANCE.md: busbw "should be close to the
# hardware peak"). Both set well below, as the single-GPU fractions are.
PEER_FRACTION = 0.4
ALLREDUCE_FRACTION = 0.4
TOPOLOGY_FIX = Fix.of(
    Step.run("see how the GPUs connect", "nvidia-smi topo -m"),
    Step.run("see each NVLink's state", "nvidia-smi nvlink -s"),
    Step.run("look for link downgrades", "gpucheck doctor"),
)


def _finding(
    id_: str, status: Status, title: str, evidence: list[str], fix: Fix | None = None
) -> Finding:
    return Finding(id_, Layer.BENCH, status, title, evidence, fix, Subjects())


def topology(bench: BenchRun, index: GpuIndex) -> tuple[str, float | None, Link | None]:
    """(what the GPUs are joined by, its one-way rate in GB/s, the PCIe link)."""
    links = [best_link(g.facts, index.spec(g.facts.name or "")) for g in bench.gpus]
    known = [link for link in links if link is not None]
    pcie = min(known, key=lambda link: link.gbs) if known else None
    direct = [p for p in bench.peers if p.peer_access and pcie is not None and p.gbs > pcie.gbs]
    if direct:
        best = max(p.gbs for p in direct)
        return "NVLink (a GPU pair copied faster than PCIe carries)", best, pcie
    if pcie is not None:
        return f"{pcie.text} ({pcie.source})", pcie.gbs, pcie
    return "an unknown link", None, None


def peer_lines(bench: BenchRun, pcie: Link | None) -> list[str]:
    lines = []
    for p in bench.peers:
        how = "peer access on" if p.peer_access else "peer access off (staged through the host)"
        line = f"GPU {p.src} -> GPU {p.dst}: {p.gbs:,.1f} GB/s, {how}"
        if pcie is not None and p.gbs > pcie.gbs:
            line += f"; faster than {pcie.text} can carry: a direct link (NVLink)"
        elif pcie is not None:
            line += f"; within {pcie.text}'s {pcie.gbs:.1f} GB/s: PCIe or staged"
        lines.append(line)
    return lines


def peer_findings(bench: BenchRun, index: GpuIndex) -> list[Finding]:
    if bench.peer_problem:
        return [
            _finding(
                "bench.peers",
                Status.WARN,
                f"GPU-to-GPU copies not measured: {bench.peer_problem}",
                [],
                Fix.of(
                    Step.run("check the whole stack", "gpucheck doctor --deep"),
                    Step.run("see how the GPUs connect", "nvidia-smi topo -m"),
                ),
            )
        ]
    if not bench.peers:
        return []
    link, rate, pcie = topology(bench, index)
    lines = peer_lines(bench, pcie)
    off = [p for p in bench.peers if not p.peer_access]
    if off:
        lines.append(
            "peer access off: copies go through host memory (IOMMU/ACS, or GPUs under "
            "different PCIe root complexes)"
        )
    best = max(p.gbs for p in bench.peers)
    # Pairs with peer access are judged against the link; staged ones are shown only.
    slow: list[Peer] = []
    if rate is not None:
        slow = [p for p in bench.peers if p.peer_access and p.gbs < PEER_FRACTION * rate]
    if not slow:
        status = (
            Status.PASS
            if rate is not None and any(p.peer_access for p in bench.peers)
            else Status.INFO
        )
        title = f"GPU-to-GPU copies: {best:,.1f} GB/s at best"
        return [_finding("bench.peers", status, title, [f"link: {link}", *lines])]
    pairs = ", ".join(f"{p.src}->{p.dst}" for p in slow)
    title = f"GPU-to-GPU copies {pairs} below {PEER_FRACTION:.0%} of the link ({rate:,.1f} GB/s)"
    return [_finding("bench.peers", Status.WARN, title, [f"link: {link}", *lines], TOPOLOGY_FIX)]


def allreduce_findings(bench: BenchRun, index: GpuIndex) -> list[Finding]:
    if bench.allreduce_problem and not bench.allreduce:
        return [
            _finding(
                "bench.allreduce",
                Status.WARN,
                f"All-reduce not measured: {bench.allreduce_problem}",
                [],
                Fix.of(
                    Step.run(
                        "check that torch.distributed and NCCL work here",
                        'python -c "import torch.distributed as d; print(d.is_nccl_available())"',
                    )
                ),
            )
        ]
    if not bench.allreduce:
        return []
    largest = max(bench.allreduce, key=lambda a: a.bytes)
    lines = [
        f"{a.bytes / 2**20:,.0f} MiB: busbw {a.busbw_gbs:,.1f} GB/s (algbw {a.algbw_gbs:,.1f}, "
        f"{a.ms_per_op:,.2f} ms)"
        for a in bench.allreduce
    ]
    world, backend = (
        largest.world,
        largest.backend.upper() if largest.backend == "nccl" else largest.backend,
    )
    wrong = [a for a in bench.allreduce if not a.correct]
    if wrong:
        title = f"All-reduce across {world} ranks ({backend}) summed wrong"
        fix = Fix.of(
            Step.run("a wrong collective result needs the GPUs checked", "gpucheck doctor --deep")
        )
        return [_finding("bench.allreduce", Status.FAIL, title, lines, fix)]
    link, rate, _ = topology(bench, index) if bench.gpus else ("CPU processes", None, None)
    title = (
        f"All-reduce across {world} ranks ({backend}): busbw {largest.busbw_gbs:,.1f} GB/s at "
        f"{largest.bytes / 2**20:,.0f} MiB"
    )
    lines.append(f"link: {link}" + (f", {rate:,.1f} GB/s each way" if rate else ""))
    if rate is None:
        return [_finding("bench.allreduce", Status.INFO, title, lines)]
    share = largest.busbw_gbs / rate
    lines.append(f"busbw = {share:.0%} of the link")
    if share >= ALLREDUCE_FRACTION:
        return [_finding("bench.allreduce", Status.PASS, title, lines)]
    title += f", below {ALLREDUCE_FRACTION:.0%} of the link"
    return [_finding("bench.allreduce", Status.WARN, title, lines, TOPOLOGY_FIX)]


def multi_gpu_findings(bench: BenchRun, index: GpuIndex) -> list[Finding]:
    return peer_findings(bench, index) + allreduce_findings(bench, index)
