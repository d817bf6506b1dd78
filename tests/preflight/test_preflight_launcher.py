"""Where a rank stands, read from each engine's own environment variables (as torchrun, srun,
mpirun and MPICH's hydra set them), and the first host of Slurm's host list syntax."""

from __future__ import annotations

import pytest

from gpucheck.inputs import UserError
from gpucheck.preflight.launcher import first_host, placement


def test_torchrun_gives_rank_world_local_rank_and_master() -> None:
    env = {
        "RANK": "5",
        "WORLD_SIZE": "8",
        "LOCAL_RANK": "1",
        "MASTER_ADDR": "node0",
        "MASTER_PORT": "29400",
        "TORCHELASTIC_RUN_ID": "job",
    }
    where = placement(env)
    assert (where.launcher, where.rank, where.world, where.local_rank) == ("torchrun", 5, 8, 1)
    assert (where.master_addr, where.master_port) == ("node0", 29400)


def test_torchrun_inside_a_slurm_allocation_is_torchrun() -> None:
    env = {
        "RANK": "3",
        "WORLD_SIZE": "4",
        "MASTER_ADDR": "n1",
        "SLURM_PROCID": "0",
        "SLURM_NTASKS": "1",
        "SLURM_NODELIST": "gpu[07-08]",
    }
    where = placement(env)
    assert (where.launcher, where.rank, where.world, where.master_addr) == ("torchrun", 3, 4, "n1")


def test_srun_tasks_find_rank_0_on_the_first_host_of_the_step() -> None:
    env = {
        "SLURM_PROCID": "2",
        "SLURM_NTASKS": "4",
        "SLURM_LOCALID": "0",
        "SLURM_STEP_NODELIST": "gpu[07-08,11],login1",
        "SLURM_JOB_NODELIST": "other[1-9]",
        "SLURM_JOB_ID": "123456",
    }
    where = placement(env)
    assert (where.launcher, where.rank, where.world, where.local_rank) == ("slurm", 2, 4, 0)
    assert where.master_addr == "gpu07"
    assert where.master_port == 29500 + 456  # job id modulo 1000: jobs sharing a node differ


def test_open_mpi_and_pmi_ranks() -> None:
    ompi = {
        "OMPI_COMM_WORLD_RANK": "1",
        "OMPI_COMM_WORLD_SIZE": "2",
        "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "MASTER_ADDR": "10.0.0.1",
    }
    assert placement(ompi).launcher == "openmpi"
    assert (placement(ompi).rank, placement(ompi).local_rank) == (1, 1)
    pmi = {"PMI_RANK": "3", "PMI_SIZE": "4", "MPI_LOCALRANKID": "0"}
    where = placement(pmi, master_addr="head", master_port=4000)
    assert (where.launcher, where.rank, where.world, where.local_rank) == ("pmi", 3, 4, 0)
    assert (where.master_addr, where.master_port) == ("head", 4000)


def test_no_launcher_is_a_job_of_one_on_loopback() -> None:
    where = placement({})
    assert (where.launcher, where.rank, where.world) == ("none", 0, 1)
    assert (where.master_addr, where.master_port) == ("127.0.0.1", 29500)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RANK": "4", "WORLD_SIZE": "4", "MASTER_ADDR": "a"}, "rank 4 does not fit a world of 4"),
        ({"RANK": "x", "WORLD_SIZE": "4"}, "RANK='x': expected a whole number"),
        ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"}, "no address of rank 0"),
        (
            {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "70000"},
            "master port 70000",
        ),
    ],
)
def test_variables_that_do_not_add_up_are_a_usage_error(env: dict[str, str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        placement(env)


@pytest.mark.parametrize(
    ("nodelist", "first"),
    [
        ("gpu01", "gpu01"),
        ("gpu[01-04]", "gpu01"),
        ("gpu[007,009-010],cpu3", "gpu007"),
        ("cpu3,gpu[1-2]", "cpu3"),
        ("rack[2-3]-node[10-11]", "rack2-node10"),
        ("node[5]", "node5"),
    ],
)
def test_first_host_of_a_slurm_host_list(nodelist: str, first: str) -> None:
    # As `scontrol show hostnames LIST | head -1` prints it (zero padding kept).
    assert first_host(nodelist) == first


@pytest.mark.parametrize("nodelist", ["gpu[01-04", "[]", "gpu]1["])
def test_a_host_list_that_is_not_one_is_refused(nodelist: str) -> None:
    with pytest.raises(UserError, match="cannot read its first host"):
        first_host(nodelist)
