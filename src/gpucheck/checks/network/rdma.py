"""RDMA devices and their ports: a port that should be up and is not, ports of one kind at
unequal rates, no port NCCL can use, and GPUDirect RDMA (the NIC reading GPU memory directly)."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Literal

from gpucheck.checks.context import Context
from gpucheck.checks.network.common import (
    GPU_OPERATOR_RDMA,
    NCCL_TROUBLESHOOTING,
    active,
    active_ports,
    kind,
    network,
    port_label,
    port_text,
    problem,
    slot,
    word,
)
from gpucheck.checks.registry import check
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.network import RdmaDevice, RdmaPort

# NICs whose driver NVIDIA documents GPUDirect RDMA for (ConnectX and BlueField, mlx5_core:
# the GPU Operator's RDMA page and Mellanox/nv_peer_memory's README).
GDR_DRIVERS = ("mlx5_core",)
DMABUF_KERNEL = (5, 12)  # GPU Operator's RDMA page: DMA-BUF needs Linux 5.12 or higher
KERNEL_VERSION = re.compile(r"(\d+)\.(\d+)")


@check("network.rdma-ports", "RDMA ports that should be up are ACTIVE")
def rdma_ports(ctx: Context) -> Outcome | None:
    facts = network(ctx)
    if facts is None or not facts.rdma:
        return None
    ports = [(d, p) for d in facts.rdma for p in d.ports]
    # A port is expected up where another port of its kind is (the same adapter model, link
    # layer and port number), unless it is a spare: see _spare.
    kinds_up = {kind(d, p) for d, p in ports if active(p)}
    slots_up = {(slot(d), d.name) for d, p in ports if active(p) and slot(d)}
    down = [
        (d, p)
        for d, p in ports
        if not active(p) and kind(d, p) in kinds_up and not _spare(d, p, slots_up)
    ]
    up = [(d, p) for d, p in ports if active(p)]
    if not down:
        if not up:
            return None  # none up at all: network.rdma-usable says so
        return Outcome.passed(
            f"RDMA ports: {len(up)} ACTIVE ({', '.join(port_label(d, p) for d, p in up[:8])}"
            + (", ..." if len(up) > 8 else "")
            + ")"
        )
    causes = sorted({_cause(p) for _, p in down})
    return problem(
        ctx,
        f"{len(down)} RDMA port(s) are not ACTIVE while others of their kind are: "
        f"{'; '.join(causes)}. NCCL runs without them (fewer rails) or fails where a rank "
        "needs one",
        *[port_text(d, p) for d, p in down],
        f"{len(up)} port(s) of the same kind ACTIVE",
        fix=Fix.of(
            Step.info("see each port's state and rate", Layer.NETWORK, "ibstat"),
            Step.manual(
                "Polling: reseat or replace the cable or transceiver and check the switch "
                "port; INIT or ARMED: start a subnet manager on the fabric (opensm, or the "
                "switch's)",
                Layer.NETWORK,
            ),
        ),
    )


def _spare(device: RdmaDevice, port: RdmaPort, slots_up: set[tuple[str | None, str]]) -> bool:
    """A port left unused on purpose: disabled by an administrator, or on the second device of
    a dual-port card whose other port is up. mlx5 and irdma give each port of such a card its
    own PCI function and device, each with port 1 (mlx5_0/1 and mlx5_1/1 on 0000:19:00.0 and
    .1), so the port number alone cannot tell a spare second port from a fault."""
    if word(port.phys_state) == "Disabled":
        return True
    here = slot(device)
    return here is not None and any(s == here and n != device.name for s, n in slots_up)


def _cause(port: RdmaPort) -> str:
    state, phys = word(port.state), word(port.phys_state)
    if phys == "Polling":
        return "Polling: no link trained (cable, transceiver or switch port)"
    if state in ("INIT", "ARMED"):
        return f"{state}: link up but not configured by a subnet manager"
    return f"{state or '?'} / {phys or '?'}"


@check("network.rdma-rate", "RDMA ports of one kind run at the same rate")
def rdma_rate(ctx: Context) -> Outcome | None:
    facts = network(ctx)
    if facts is None:
        return None
    groups: dict[tuple[str, str], list[tuple[RdmaDevice, RdmaPort]]] = defaultdict(list)
    for d, p in active_ports(facts):
        if p.rate_gbps is not None:
            groups[(d.hca_type or d.driver or "?", p.link_layer or "?")].append((d, p))
    if not groups:
        return None
    slow: list[tuple[RdmaDevice, RdmaPort, float]] = []
    for members in groups.values():
        top = max(p.rate_gbps or 0.0 for _, p in members)
        slow += [(d, p, top) for d, p in members if (p.rate_gbps or 0.0) < top]
    if not slow:
        rates = sorted({p.rate or "?" for ms in groups.values() for _, p in ms})
        return Outcome.passed(f"RDMA port rates: {', '.join(rates)}")
    return Outcome.warn(
        f"{len(slow)} RDMA port(s) came up below the rate of the others of their kind: a "
        "collective runs at the pace of its slowest link",
        *[f"{port_text(d, p)} (others: {top:g} Gb/sec)" for d, p, top in slow],
        fix=Fix.of(
            Step.info("see each port's rate and width", Layer.NETWORK, "ibstat"),
            Step.manual(
                "a link trained at a lower rate or width is a cable, transceiver or switch "
                "port fault: reseat or replace it, or check the switch port's speed setting",
                Layer.NETWORK,
            ),
        ),
    )


@check("network.rdma-usable", "a multi-GPU node's RDMA devices have a port NCCL can use")
def rdma_usable(ctx: Context) -> Outcome | None:
    facts = network(ctx)
    if facts is None or not facts.rdma:
        return None
    up = active_ports(facts)
    nccl = _nccl_versions(ctx)
    if up:
        return Outcome.passed(
            f"RDMA: {len(up)} ACTIVE port(s) on {len({d.name for d, _ in up})} of "
            f"{len(facts.rdma)} device(s)",
            *nccl,
        )
    ports = [(d, p) for d in facts.rdma for p in d.ports]
    # A warning, not a fail: a standalone node (an unplugged ConnectX, an onboard E810 with
    # irdma loaded) trains on its own GPUs without any RDMA port; only a multi-node job needs one.
    return Outcome.warn(
        f"None of the {len(facts.rdma)} RDMA device(s) has an ACTIVE port: a multi-node NCCL "
        "job falls back to TCP sockets between nodes (a fraction of the bandwidth) or fails",
        *[port_text(d, p) for d, p in ports[:16]],
        *nccl,
        fix=Fix.of(
            Step.info("see each port's state", Layer.NETWORK, "ibstat"),
            Step.manual(
                "connect the ports to the fabric; on InfiniBand, a port stuck in INIT has no "
                "subnet manager: start opensm (or the switch's) on the fabric",
                Layer.NETWORK,
            ),
        ),
    )


def _nccl_versions(ctx: Context) -> list[str]:
    """The NCCL each environment carries: its nvidia-nccl-cu* wheel, and with --deep the one
    each framework reported when imported (torch.cuda.nccl.version())."""
    found = []
    for env in ctx.snapshot.environments:
        for dist in env.distributions:
            if dist.name.startswith("nvidia-nccl-cu") and dist.version:
                found.append(f"NCCL {dist.version} ({dist.name}) in {env.python}")
        for runtime in env.runtimes:
            if runtime.nccl_version:
                found.append(f"NCCL {runtime.nccl_version} ({runtime.framework}) in {env.python}")
    return found


@check("network.gpudirect-rdma", "GPUDirect RDMA: nvidia_peermem loaded, or DMA-BUF possible")
def gpudirect_rdma(ctx: Context) -> Outcome | None:
    facts = network(ctx)
    if facts is None:
        return None
    capable = [d for d in facts.rdma if d.driver in GDR_DRIVERS and any(active(p) for p in d.ports)]
    if not capable:
        return None
    names = ", ".join(d.name for d in capable[:8]) + (", ..." if len(capable) > 8 else "")
    banner = ctx.snapshot.system.nvidia_module_banner
    open_module = None if banner is None else "Open Kernel Module" in banner
    kernel = _kernel(facts.kernel_release)
    dmabuf = bool(open_module) and kernel is not None and kernel >= DMABUF_KERNEL
    module_text = {None: "unknown", True: "open", False: "proprietary"}[open_module]
    evidence = (
        f"NICs: {names} ({capable[0].driver})",
        f"nvidia kernel module: {module_text}; kernel {facts.kernel_release or 'unknown'}",
        f"peer-memory module: {facts.peermem or 'not loaded'}",
    )
    if facts.peermem:
        return Outcome.passed(f"GPUDirect RDMA: {facts.peermem} is loaded", *evidence)
    if dmabuf:
        return Outcome.passed(
            "GPUDirect RDMA: DMA-BUF (open kernel module, Linux 5.12 or later)", *evidence
        )
    if not facts.peermem_read or open_module is None or kernel is None:
        return Outcome.skip("GPUDirect RDMA: cannot tell whether it is available", *evidence)
    steps: list[Step | Literal["or"]] = [
        Step.run(
            "load the peer-memory module (NCCL's troubleshooting guide: GPU-to-NIC)",
            "sudo modprobe nvidia-peermem",
            layer=Layer.NETWORK,
        ),
        Step.run(
            "and load it at every boot",
            "echo nvidia-peermem | sudo tee /etc/modules-load.d/nvidia-peermem.conf",
            layer=Layer.NETWORK,
        ),
        OR,
        Step.manual(
            "use DMA-BUF instead: the open NVIDIA kernel module (Turing or newer GPUs) on "
            "Linux 5.12 or later; NCCL then needs no nvidia-peermem",
            Layer.DRIVER,
        ),
    ]
    if ctx.snapshot.system.container:
        steps.insert(0, Step.manual("on the host: the module is the host kernel's", Layer.SYSTEM))
    return Outcome.warn(
        f"GPUDirect RDMA is not available to {len(capable)} RDMA NIC(s): nvidia_peermem is "
        "not loaded and DMA-BUF needs the open kernel module on Linux 5.12+. NCCL copies "
        "through host memory instead (lower bandwidth between nodes)",
        *evidence,
        f"NCCL's troubleshooting guide: {NCCL_TROUBLESHOOTING}; requirements: {GPU_OPERATOR_RDMA}",
        fix=Fix.of(*steps),
    )


def _kernel(release: str | None) -> tuple[int, int] | None:
    match = KERNEL_VERSION.match(release or "")
    return (int(match.group(1)), int(match.group(2))) if match else None
