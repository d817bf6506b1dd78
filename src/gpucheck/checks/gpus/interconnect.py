"""How the GPUs reach each other: GPU peer-to-peer (NVLink, PCIe) and each GPU's NVLink links.

On PCIe boxes, peer-to-peer reported by the driver but routed through a translating IOMMU (or
ACS) is the classic NCCL all-reduce hang.
"""

from __future__ import annotations

from gpucheck.checks.context import Context, gpu_label, gpu_refs, gpu_subjects
from gpucheck.checks.registry import check
from gpucheck.model.fabric import PASSTHROUGH, FabricHostFacts, GpuPair
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import GpuFacts

# NCCL's troubleshooting guide (GPU Direct; PCI Access Control Services) says P2P through an
# IOMMU or ACS-redirecting PCIe switch fails or crawls, and NCCL_P2P_DISABLE=1 falls back to
# shared memory: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
# (and NVIDIA/nccl#199: "disable ACS ... or set NCCL_P2P_DISABLE=1").
NCCL_TROUBLESHOOTING = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
)
CONSUMER_BRANDS = ("GeForce", "Titan")


def _iommu_translating(fab: FabricHostFacts | None) -> bool:
    return bool(fab and fab.iommu_groups and not any(a in PASSTHROUGH for a in fab.iommu_cmdline))


@check("gpus.p2p", "peer-to-peer between GPUs: NVLink, PCIe, and what blocks it")
def p2p(ctx: Context) -> Outcome | None:
    pairs = ctx.snapshot.nvml.pairs
    if not pairs:
        return None
    by_index = {g.index: g for g in ctx.gpus}
    nvlink = [p for p in pairs if p.p2p_nvlink == "ok"]
    pcie = [p for p in pairs if p.p2p_read == "ok" and p.p2p_nvlink != "ok"]
    none = [p for p in pairs if p.p2p_read not in (None, "ok") and p.p2p_nvlink != "ok"]
    unknown = len(pairs) - len(nvlink) - len(pcie) - len(none)
    if unknown == len(pairs):
        return None  # NVML answered nothing about any pair: nothing to judge or show
    evidence = [
        f"{len(pairs)} GPU pair(s): {len(nvlink)} over NVLink, {len(pcie)} over PCIe, "
        f"{len(none)} without P2P" + (f", {unknown} unknown" if unknown else "")
    ]
    evidence += [f"GPU {p.gpu_a} <-> GPU {p.gpu_b}: {_pair_text(p)}" for p in pcie[:8]]
    fab = ctx.snapshot.system.fabric
    translating = _iommu_translating(fab)
    involved = sorted({i for p in pcie for i in (p.gpu_a, p.gpu_b)})
    gpus = [by_index[i] for i in involved if i in by_index]
    consumer = [g for g in gpus if g.brand in CONSUMER_BRANDS]
    if pcie and (translating or consumer):
        why = []
        if translating and fab is not None:
            args = " ".join(fab.iommu_cmdline) or "no iommu= on the kernel command line"
            why.append(f"IOMMU on ({fab.iommu_groups} IOMMU groups; {args})")
        if consumer:
            why.append(f"consumer GPUs ({', '.join(sorted({g.name or '?' for g in consumer}))})")
        return Outcome.warn(
            f"PCIe peer-to-peer is reported between {len(pcie)} GPU pair(s) but may not work: "
            f"{' and '.join(why)}; NCCL all-reduce can hang or crawl",
            *evidence,
            f"NCCL's troubleshooting guide (GPU Direct, ACS): {NCCL_TROUBLESHOOTING}",
            fix=Fix.of(
                Step.run(
                    "see whether P2P really works: a hang or near-zero bandwidth means broken",
                    "git clone https://github.com/NVIDIA/nccl-tests && make -C nccl-tests && "
                    f"./nccl-tests/build/all_reduce_perf -b 8 -e 256M -f 2 -g {len(involved)}",
                ),
                Step.set_env(
                    "NCCL_P2P_DISABLE",
                    "1",
                    "if it hangs: make NCCL copy through shared memory instead of P2P",
                ),
                OR,
                Step.manual(
                    "keep P2P: put the IOMMU in passthrough (kernel argument iommu=pt, or "
                    "intel_iommu=off / amd_iommu=off) and disable PCIe ACS on the switches "
                    "(BIOS), then reboot",
                    Layer.SYSTEM,
                ),
            ),
            subjects=gpu_subjects(gpus),
        )
    return Outcome.passed(f"Peer-to-peer: {evidence[0]}", *evidence[1:])


def _pair_text(p: GpuPair) -> str:
    return (
        f"read {p.p2p_read or '?'}, write {p.p2p_write or '?'}, NVLink {p.p2p_nvlink or '?'}, "
        f"path {p.topology or '?'}"
    )


@check("gpus.nvlink", "every NVLink link of each GPU is up")
def nvlink(ctx: Context) -> Outcome | None:
    linked = [g for g in ctx.gpus if g.nvlink_active]
    if not linked:
        return None
    # A GPU model's link count is the most any of its GPUs has up: one with fewer has links
    # down (a GPU with every link down still reports them, as inactive).
    expected: dict[str, int] = {}
    for g in linked:
        expected[g.name or ""] = max(expected.get(g.name or "", 0), sum(g.nvlink_active or []))
    down: list[tuple[GpuFacts, list[int]]] = []
    for g in linked:
        links = g.nvlink_active or []
        if sum(links) < expected[g.name or ""]:
            down.append((g, [i for i, up in enumerate(links) if not up]))
    if not down:
        counts = sorted({sum(g.nvlink_active or []) for g in linked})
        return Outcome.passed(
            f"NVLink: {'/'.join(map(str, counts))} link(s) up on each of {len(linked)} GPU(s)"
        )
    bad = [g for g, _ in down]
    return Outcome.warn(
        f"NVLink links are down on {len(bad)} GPU(s): traffic between them falls back to "
        "fewer links or PCIe (slower collectives), and NCCL may fail on an NVSwitch system",
        *[f"{gpu_label(g)}: link(s) {', '.join(map(str, idx))} down" for g, idx in down],
        fix=Fix.of(
            Step.run("see the links' state", "nvidia-smi nvlink -s", gpus=gpu_refs(bad)),
            Step.reboot("reset the GPUs (reboot the node)"),
            Step.hardware("if links stay down, the GPU or board needs service", gpu_refs(bad)),
        ),
        subjects=gpu_subjects(bad),
    )
