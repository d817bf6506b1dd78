"""The GPU topology matrix of a multi-GPU machine, as `nvidia-smi topo -m` prints it, from the
snapshot's pairs (NVML's P2P status and common-ancestor level of each GPU pair), with a column
per RDMA NIC (NIC0, NIC1, ... and their legend, as nvidia-smi names them) from the network
facts' GPU-NIC distances. (nvidia-smi also prints a row per NIC; NIC-to-NIC distances are not
in the snapshot, so those rows are left out.)"""

from __future__ import annotations

from gpucheck.model.fabric import GpuPair
from gpucheck.model.network import NetworkFacts
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


def matrix(nvml: NvmlFacts, network: NetworkFacts | None = None) -> list[str]:
    """The matrix's lines (header first, legends last); [] for fewer than two GPUs without a
    NIC, or where no link is known (a matrix of "?" says nothing a reader can use)."""
    nics = [d.name for d in network.rdma] if network is not None else []
    indices = sorted({i for p in nvml.pairs or [] for i in (p.gpu_a, p.gpu_b)})
    if nics and not indices:
        indices = sorted(g.index for g in nvml.gpus)
    if len(indices) < (1 if nics else 2):
        return []
    links = {g.index: sum(g.nvlink_active or []) for g in nvml.gpus}
    cells: dict[tuple[int, int | str], str] = {}
    for p in nvml.pairs or []:
        cells[p.gpu_a, p.gpu_b] = cells[p.gpu_b, p.gpu_a] = cell(p, links)
    address = {g.index: g.pci_bus_id[-12:].lower() for g in nvml.gpus if g.pci_bus_id is not None}
    for d in network.distances if network is not None and nics else []:
        for i, at in address.items():
            if at == d.gpu:
                cells[i, d.nic] = d.level or "?"
    if all(c == "?" for c in cells.values()):
        return []
    names = [f"GPU{i}" for i in indices] + [f"NIC{n}" for n in range(len(nics))]
    width = max(5, *(len(n) for n in names), *(len(c) for c in cells.values())) + 1
    out = [" " * width + "".join(n.ljust(width) for n in names).rstrip()]
    for i in indices:
        row = ["X" if i == j else cells.get((i, j), "?") for j in indices]
        row += [cells.get((i, nic), "?") for nic in nics]
        out.append((f"GPU{i}".ljust(width) + "".join(c.ljust(width) for c in row)).rstrip())
    out.append(LEGEND)
    if nics:
        out += ["NIC Legend:", *(f"  NIC{n}: {name}" for n, name in enumerate(nics))]
    return out
