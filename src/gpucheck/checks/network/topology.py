"""Where the RDMA NICs sit from the GPUs: a GPU whose nearest NIC is across the CPUs'
interconnect while other GPUs have one close, and ACS or a translating IOMMU on the PCIe path
between a GPU and the NIC under its own switch (peer traffic sent up to the root complex)."""

from __future__ import annotations

from gpucheck.checks.context import Context
from gpucheck.checks.network.common import (
    NCCL_TROUBLESHOOTING,
    active_ports,
    network,
    selected,
)
from gpucheck.checks.registry import check
from gpucheck.model.fabric import PASSTHROUGH
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.network import PCI_LEVELS, GpuNicDistance


def gpu_names(ctx: Context) -> dict[str, str]:
    """Each GPU's PCI address (sysfs form) -> "GPU <NVML index>", else the address itself."""
    names = {g.address: g.address for g in ctx.snapshot.system.pci_gpus}
    for gpu in ctx.gpus:
        if gpu.pci_bus_id:
            names[gpu.pci_bus_id[-12:].lower()] = f"GPU {gpu.index}"
    return names


def _usable(ctx: Context) -> list[GpuNicDistance]:
    """The GPU-NIC distances to RDMA devices NCCL may use (an ACTIVE port, and chosen by
    NCCL_IB_HCA where it is set), where the level is known."""
    facts = ctx.snapshot.network
    up = sorted({d.name for d, _ in active_ports(facts)})
    usable = set(selected(facts.nccl_env.get("NCCL_IB_HCA"), up))
    return [d for d in facts.distances if d.nic in usable and d.level in PCI_LEVELS]


@check("network.nic-affinity", "each GPU has an RDMA NIC near it, where some GPU does")
def nic_affinity(ctx: Context) -> Outcome | None:
    facts = network(ctx)
    if facts is None or not facts.rdma:
        return None
    distances = _usable(ctx)
    if not distances:
        return None
    nearest: dict[str, GpuNicDistance] = {}
    for d in distances:
        best = nearest.get(d.gpu)
        if best is None or PCI_LEVELS.index(d.level or "SYS") < PCI_LEVELS.index(best.level or ""):
            nearest[d.gpu] = d
    names = gpu_names(ctx)
    far = [d for d in nearest.values() if d.level == "SYS"]
    near = [d for d in nearest.values() if d.level != "SYS"]
    lines = [
        f"{names.get(d.gpu, d.gpu)}: nearest NIC {d.nic} ({d.level})" for d in nearest.values()
    ]
    if far and near:
        hca = facts.nccl_env.get("NCCL_IB_HCA")
        return Outcome.warn(
            f"{len(far)} GPU(s) have no RDMA NIC on their own CPU socket (nearest: SYS) while "
            f"{len(near)} other GPU(s) do: their traffic to the network crosses the CPUs' "
            "interconnect, and NCCL may not use GPUDirect RDMA for them",
            *lines,
            *([f"NCCL_IB_HCA={hca}: only these NICs are counted"] if hca else []),
            fix=Fix.of(
                Step.info("see the GPU and NIC matrix", Layer.NETWORK, "nvidia-smi topo -m"),
                Step.unset_env(
                    "NCCL_IB_HCA", "let NCCL use every NIC, the near ones too", Layer.NETWORK
                )
                if hca
                else None,
                Step.manual(
                    "put an RDMA NIC on each CPU socket that has GPUs (move a NIC or GPU to "
                    "a slot of that socket), or run the job's ranks only on the GPUs near a NIC",
                    Layer.SYSTEM,
                ),
            ),
        )
    levels = sorted({d.level or "" for d in nearest.values()}, key=PCI_LEVELS.index)
    return Outcome.passed(
        f"GPU-NIC placement: each of {len(nearest)} GPU(s) has an RDMA NIC at "
        f"{' or '.join(levels)}",
        *lines[:8],
    )


@check("network.acs-iommu", "no ACS or translating IOMMU on the GPU-NIC peer paths")
def acs_iommu(ctx: Context) -> Outcome | None:
    facts = network(ctx)
    if facts is None or not facts.rdma or facts.iommu_units is None:
        return None
    peer = [d for d in _usable(ctx) if d.level in ("PIX", "PXB")]
    if not peer:
        return None  # no GPU shares a PCIe switch with a NIC: their traffic goes up anyway
    fabric = ctx.snapshot.system.fabric
    cmdline = fabric.iommu_cmdline if fabric is not None else []
    translating = bool(facts.iommu_units) and not any(a in PASSTHROUGH for a in cmdline)
    isolated = [d for d in peer if d.acs_isolated]
    names = gpu_names(ctx)
    iommu = (
        f"IOMMU units: {', '.join(facts.iommu_units) or 'none'}; kernel arguments: "
        f"{' '.join(cmdline) or 'no iommu='}"
    )
    if not translating and not isolated:
        return Outcome.passed(
            f"GPU-NIC peer paths: {len(peer)} under a shared PCIe switch, none redirected "
            "(no translating IOMMU, no ACS isolation seen)",
            iommu,
        )
    why = []
    if translating:
        why.append("the IOMMU translates their DMA (no iommu=pt)")
    if isolated:
        why.append(
            f"{len(isolated)} pair(s) sit in different IOMMU groups under one switch (ACS "
            "redirects their peer requests)"
        )
    return Outcome.warn(
        f"GPUDirect traffic between GPUs and the NICs under their own PCIe switch goes up to "
        f"the root complex: {' and '.join(why)}. Bandwidth drops, or transfers hang",
        iommu,
        *[
            f"{names.get(d.gpu, d.gpu)} - {d.nic} ({d.level}): IOMMU groups differ"
            for d in isolated[:8]
        ],
        f"NCCL's troubleshooting guide (PCI Access Control Services): {NCCL_TROUBLESHOOTING}",
        fix=Fix.of(
            Step.info(
                "see ACS on the bridges (root)", Layer.NETWORK, "sudo lspci -vvv | grep ACSCtl"
            ),
            Step.manual(
                "disable ACS on the PCIe switches (BIOS: IO virtualization / VT-d, or "
                "`setpci` on each switch port after every boot), and put the IOMMU in "
                "passthrough (kernel argument iommu=pt), then reboot",
                Layer.SYSTEM,
            ),
        ),
    )
