"""Where this rank stands in the job, read from the environment the engine that launched it
sets: torchrun, Slurm's srun, Open MPI's mpirun, MPICH/Intel MPI (PMI); none of them, a job of
one. Pure: the environment is handed in.

Which engine: torchrun first (its RANK/WORLD_SIZE, or TORCHELASTIC_RUN_ID; torchrun inside a
Slurm allocation also carries SLURM_* variables of the allocation, not of its workers), then
Open MPI and PMI (an mpirun inside an allocation likewise), then srun's own task variables.

Rank 0's address (where the TCP store listens): --master-addr, else MASTER_ADDR, else under
Slurm the first host of the step's (or job's) node list, read by this module's own parser of
Slurm's host list syntax ("gpu[01-04,07]" starts with gpu01). The port: --master-port, else
MASTER_PORT, else under Slurm 29500 + the job id modulo 1000 (two jobs sharing a first node
rarely meet), else 29500 (torchrun's default).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping

from msgspec import Struct

from gpucheck.inputs import UserError

DEFAULT_PORT = 29500  # torchrun's own default MASTER_PORT


class Placement(Struct, frozen=True, kw_only=True):
    """This rank in the job."""

    launcher: str  # torchrun, slurm, openmpi, pmi, or none (a job of one)
    rank: int
    world: int
    local_rank: int | None  # its index among the ranks on its node, where the engine says
    master_addr: str  # rank 0's host: the TCP store's address
    master_port: int
    host: str  # this node's name


# engine -> (rank, world size, local rank) variables
_ENGINES: tuple[tuple[str, tuple[str, str, tuple[str, ...]]], ...] = (
    ("torchrun", ("RANK", "WORLD_SIZE", ("LOCAL_RANK",))),
    ("openmpi", ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", ("OMPI_COMM_WORLD_LOCAL_RANK",))),
    ("pmi", ("PMI_RANK", "PMI_SIZE", ("MPI_LOCALRANKID", "PMI_LOCAL_RANK"))),
    ("slurm", ("SLURM_PROCID", "SLURM_NTASKS", ("SLURM_LOCALID",))),
)
_NODELISTS = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")


def placement(
    env: Mapping[str, str], master_addr: str | None = None, master_port: int | None = None
) -> Placement:
    """This rank's placement; UserError (exit 2) for a launcher's variables that do not add up,
    or a job of several ranks whose rank 0 cannot be found."""
    launcher, rank, world, local = "none", 0, 1, None
    for name, (rank_var, world_var, local_vars) in _ENGINES:
        if rank_var in env or (name == "torchrun" and "TORCHELASTIC_RUN_ID" in env):
            launcher = name
            rank = _number(env, rank_var, 0)
            world = _number(env, world_var, 1)
            local = next((_number(env, v, 0) for v in local_vars if v in env), None)
            break
    if world < 1 or not 0 <= rank < world:
        raise UserError(f"{launcher}: rank {rank} does not fit a world of {world}")
    addr = master_addr or env.get("MASTER_ADDR") or _first_slurm_host(env)
    if addr is None:
        if world > 1:
            raise UserError(
                f"{launcher}: no address of rank 0 (set MASTER_ADDR or give --master-addr)"
            )
        addr = "127.0.0.1"
    port = master_port if master_port is not None else _port(env)
    if not 0 < port < 65536:
        raise UserError(f"master port {port}: expected 1 to 65535")
    return Placement(
        launcher=launcher,
        rank=rank,
        world=world,
        local_rank=local,
        master_addr=addr,
        master_port=port,
        host=socket.gethostname(),
    )


def _number(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name)
    if text is None:
        return default
    try:
        return int(text.strip())
    except ValueError:
        raise UserError(f"{name}={text!r}: expected a whole number") from None


def _port(env: Mapping[str, str]) -> int:
    if "MASTER_PORT" in env:
        return _number(env, "MASTER_PORT", DEFAULT_PORT)
    if "SLURM_JOB_ID" in env:
        return DEFAULT_PORT + _number(env, "SLURM_JOB_ID", 0) % 1000
    return DEFAULT_PORT


def _first_slurm_host(env: Mapping[str, str]) -> str | None:
    for name in _NODELISTS:
        if env.get(name):
            return first_host(env[name])
    return None


_BRACKET = re.compile(r"\[([^\]]*)\]")


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list ("gpu[01-04],cpu7" -> "gpu01"; "r[1-2]-n[3,5]" ->
    "r1-n3"): each bracket's first entry, zero padding kept, as `scontrol show hostnames`
    lists them. UserError for a list that is not one."""
    depth, end = 0, len(nodelist)
    for i, char in enumerate(nodelist):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            end = i
            break
    first = nodelist[:end].strip()

    def lowest(match: re.Match[str]) -> str:
        return match.group(1).split(",")[0].split("-")[0].strip()

    host = _BRACKET.sub(lowest, first)
    if not host or any(c in host for c in "[], ") or depth < 0:
        raise UserError(f"Slurm node list {nodelist!r}: cannot read its first host")
    return host
