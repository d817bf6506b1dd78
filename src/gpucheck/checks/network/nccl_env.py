"""NCCL's settings in the environment against the node: an interface or HCA filter that names
nothing here, and a transport switched off that the node has (InfiniBand with ports up, P2P
between NVLink-connected GPUs, shared memory between GPUs, GPUDirect RDMA)."""

from __future__ import annotations

from gpucheck.checks.context import Context
from gpucheck.checks.network.common import (
    NCCL_ENV_DOC,
    active_ports,
    gpu_count,
    matches,
    network,
    problem,
)
from gpucheck.checks.registry import check
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import Fix, Step
from gpucheck.model.layers import Layer

OFF = ("1", "true", "yes")  # NCCL reads an integer: 1 switches the transport off


@check("network.nccl-env", "NCCL's environment names what the node has and keeps its transports")
def nccl_env(ctx: Context) -> Outcome | None:
    facts = network(ctx)
    if facts is None or not facts.nccl_env:
        return None
    env = facts.nccl_env
    missing: list[tuple[str, str]] = []  # (variable, what it should name)
    off: list[tuple[str, str]] = []  # (variable, what it turns off that the node has)
    ifname = env.get("NCCL_SOCKET_IFNAME")
    if ifname and facts.interfaces and matches(ifname, facts.interfaces) == []:
        missing.append(("NCCL_SOCKET_IFNAME", f"interfaces here: {', '.join(facts.interfaces)}"))
    hca = env.get("NCCL_IB_HCA")
    rdma_names = [d.name for d in facts.rdma]
    notes: list[str] = []
    if hca and not rdma_names:
        # No RDMA device: NCCL logs "NET/IB : No device found" and uses sockets (the thread
        # NVIDIA/nccl#226 shows the two lines), whatever the filter says; a shared job script's
        # setting is no fault of this node.
        notes.append(f"NCCL_IB_HCA={hca}: no RDMA device here, NCCL uses sockets")
    elif hca and matches(hca, rdma_names) == []:
        missing.append(("NCCL_IB_HCA", f"RDMA devices here: {', '.join(rdma_names)}"))
    up = active_ports(facts)
    if env.get("NCCL_IB_DISABLE", "").strip().lower() in OFF and up:
        off.append(("NCCL_IB_DISABLE", f"{len(up)} RDMA port(s) ACTIVE"))
    nvlink = [p for p in ctx.snapshot.nvml.pairs or [] if p.p2p_nvlink == "ok"]
    if env.get("NCCL_P2P_DISABLE", "").strip().lower() in OFF and nvlink:
        off.append(("NCCL_P2P_DISABLE", f"{len(nvlink)} GPU pair(s) over NVLink"))
    if env.get("NCCL_SHM_DISABLE", "").strip().lower() in OFF and gpu_count(ctx) >= 2:
        off.append(("NCCL_SHM_DISABLE", f"{gpu_count(ctx)} GPUs in this node"))
    gdr = env.get("NCCL_NET_GDR_LEVEL", "").strip().upper()
    if gdr in ("LOC", "0") and up and facts.peermem:
        off.append(("NCCL_NET_GDR_LEVEL", f"GPUDirect RDMA ready ({facts.peermem} loaded)"))
    shown = [f"{k}={v}" for k, v in sorted(env.items())]
    if not missing and not off:
        if notes:
            return Outcome.info(
                "NCCL environment: NCCL_IB_HCA is set but this node has no RDMA device",
                *notes,
                *shown,
                f"NCCL's environment variables: {NCCL_ENV_DOC}",
            )
        return Outcome.passed("NCCL environment: consistent with this node", *shown)
    evidence = [
        *[f"{name}={env[name]} matches nothing ({what})" for name, what in missing],
        *[f"{name}={env[name]} turns off what this node has: {what}" for name, what in off],
        *notes,
        f"NCCL's environment variables: {NCCL_ENV_DOC}",
    ]
    fix = Fix.of(
        *[
            Step.unset_env(name, "or set it to what this node has", Layer.NETWORK)
            for name, _ in missing
        ],
        *[
            Step.unset_env(name, "unless it is a deliberate workaround", Layer.NETWORK)
            for name, _ in off
        ],
    )
    if missing:
        names = " and ".join(name for name, _ in missing)
        return problem(
            ctx,
            f"{names} names nothing on this node: NCCL finds no interface or device to use "
            "and fails to initialise, or falls back to slower transports",
            *evidence,
            fix=fix,
        )
    return Outcome.warn(
        f"NCCL is told to switch off transports this node has ({', '.join(n for n, _ in off)}): "
        "collectives run slower than the hardware allows",
        *evidence,
        fix=fix,
    )
