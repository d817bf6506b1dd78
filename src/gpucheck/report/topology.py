"""The GPU topology matrix of a multi-GPU machine, as `nvidia-smi topo -m` prints it, from the
snapshot's pairs (NVML's P2P status and common-ancestor level of each GPU pair)."""

from __future__ import annotations

from gpucheck.model.fabric import GpuPair
from gpucheck.model.snapshot import NvmlFacts

# nvidia-smi topo -m's legend for each nvmlGpuTopologyLevel_t.
LEVELS = {
    "internal": "PIX",  # one board (a dual-GPU card)
    "single": "PIX",  # one PCIe bridge
    "multiple": "PXB",  # several PCIe bridges, no host bridge
    "hostbridge": "PHB",  # a PCIe host bridge (the CPU)
    "node": "NODE",  # host bridges within one NUMA node
    "system": "SYS",  # across NUMA nodes (the CPUs' interconnect)
}
LEGEND = (
    "NV#: NVLink (# links)  PIX/PXB: PCIe bridge(s)  PHB: through the CPU  "
    "NODE: across host bridges  SYS: across CPUs  ?: unknown"
)


def cell(pair: GpuPair, links: dict[int, int]) -> str:
    if pair.p2p_nvlink == "ok":
        count = min(links.get(pair.gpu_a, 0), links.get(pair.gpu_b, 0))
        return f"NV{count}" if count else "NV"
    return LEVELS.get(pair.topology or "", "?")


def matrix(nvml: NvmlFacts) -> list[str]:
    """The matrix's lines (header first, legend last); [] for fewer than two GPUs, or where
    no pair's link is known (a matrix of "?" says nothing a reader can use)."""
    if not nvml.pairs:
        return []
    indices = sorted({i for p in nvml.pairs for i in (p.gpu_a, p.gpu_b)})
    if len(indices) < 2:
        return []
    links = {g.index: sum(g.nvlink_active or []) for g in nvml.gpus}
    cells = {}
    for p in nvml.pairs:
        cells[p.gpu_a, p.gpu_b] = cells[p.gpu_b, p.gpu_a] = cell(p, links)
    if all(c == "?" for c in cells.values()):
        return []
    names = [f"GPU{i}" for i in indices]
    width = max(5, *(len(n) for n in names), *(len(c) for c in cells.values())) + 1
    out = [" " * width + "".join(n.ljust(width) for n in names).rstrip()]
    for i, name in zip(indices, names, strict=True):
        row = ["X" if i == j else cells.get((i, j), "?") for j in indices]
        out.append((name.ljust(width) + "".join(c.ljust(width) for c in row)).rstrip())
    return [*out, LEGEND]
