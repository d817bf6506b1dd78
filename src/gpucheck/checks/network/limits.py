"""The memory NCCL needs from the node: /dev/shm for its shared-memory segments (Docker's
default is 64 MiB), and the locked-memory limit RDMA memory registration counts against."""

from __future__ import annotations

from typing import Literal

from gpucheck.checks.context import Context
from gpucheck.checks.network.common import NCCL_TROUBLESHOOTING, active_ports, network, problem
from gpucheck.checks.registry import check
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer

GIB = 1 << 30
MIB = 1 << 20
# NCCL's troubleshooting guide (Memory issues, Shared memory; Docker) gives
# `--shm-size=1g --ulimit memlock=-1` for containers: below 1 GiB is too small.
SHM_NEEDED = GIB


def size_text(value: int) -> str:
    if value >= GIB:
        return f"{value / GIB:.1f} GiB"
    return f"{value / MIB:.0f} MiB" if value >= MIB else f"{value // 1024} KiB"


@check("network.shm", "/dev/shm is large enough for NCCL's shared-memory segments")
def shm(ctx: Context) -> Outcome | None:
    facts = network(ctx)
    if facts is None or facts.shm_bytes is None:
        return None
    size = facts.shm_bytes
    if size >= SHM_NEEDED:
        return Outcome.passed(f"/dev/shm: {size_text(size)}")
    container = ctx.snapshot.system.container
    steps: list[Step | Literal["or"]] = [
        Step.manual(
            "Docker: start the container with --shm-size=1g (or --ipc=host to share the "
            "host's /dev/shm), and --ulimit memlock=-1",
            Layer.SYSTEM,
        ),
        Step.manual(
            "Kubernetes: mount an emptyDir volume with medium: Memory at /dev/shm",
            Layer.SYSTEM,
        ),
    ]
    if not container:
        steps = [
            Step.run(
                "grow the host's /dev/shm (and its size= in /etc/fstab for the next boot)",
                "sudo mount -o remount,size=50% /dev/shm",
                layer=Layer.SYSTEM,
            ),
            OR,
            *steps,
        ]
    return problem(
        ctx,
        f"/dev/shm is {size_text(size)}: NCCL fails to initialise ('failed to extend "
        "/dev/shm/nccl-*') and data loader workers die with a bus error"
        + (" (Docker's default is 64 MiB)" if container else ""),
        f"/dev/shm: {size_text(size)}; NCCL's troubleshooting guide asks for 1 GiB in a "
        f"container: {NCCL_TROUBLESHOOTING}",
        fix=Fix.of(*steps),
    )


@check("network.memlock", "the locked-memory limit lets RDMA register NCCL's buffers")
def memlock(ctx: Context) -> Outcome | None:
    facts = network(ctx)
    # Judged only where a port is ACTIVE: RDMA devices that cannot carry traffic register no
    # memory (NCCL uses sockets), so their limit is no fault.
    if facts is None or not active_ports(facts) or facts.memlock_bytes is None:
        return None
    limit = facts.memlock_bytes
    if limit < 0:
        return Outcome.passed("Locked memory (ulimit -l): unlimited")
    container = ctx.snapshot.system.container
    steps = [
        Step.manual(
            "raise it for the job's user: '* soft memlock unlimited' and '* hard memlock "
            "unlimited' in /etc/security/limits.conf (log in again; Slurm: restart slurmd so "
            "jobs inherit it)",
            Layer.SYSTEM,
        ),
        Step.manual("Docker: --ulimit memlock=-1", Layer.SYSTEM),
    ]
    if container:
        steps.reverse()
    return problem(
        ctx,
        f"The locked-memory limit is {size_text(limit)}: RDMA registration of NCCL's buffers "
        "fails ('Call to ibv_reg_mr failed' or 'ibv_create_qp failed')",
        f"RLIMIT_MEMLOCK of this process: {size_text(limit)}; NCCL's troubleshooting guide "
        f"(InfiniBand) asks for unlimited: {NCCL_TROUBLESHOOTING}",
        fix=Fix.of(*steps, Step.info("check it", Layer.SYSTEM, "ulimit -l")),
    )
