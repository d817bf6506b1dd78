"""system.image-cuda-requirement: inside a container, the image's NVIDIA_REQUIRE_CUDA against
the host driver (spaces OR, commas AND, as NVIDIA's container toolkit docs define it)."""

from __future__ import annotations

from support import builders
from support import more_builders as mb
from support.evaluate import finding, the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot

# nvidia/cuda:12.4.1's requirement: CUDA 12.4, or forward compatibility on these branches.
CUDA_12_4 = (
    "cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 "
    "brand=tesla,driver>=535,driver<536 brand=nvidia,driver>=535,driver<536"
)


def in_container(driver: str, cuda: int, brand: str = "NVIDIA", **env: str) -> Snapshot:
    snap = builders.node([builders.h100(0)], driver=driver, cuda=cuda)
    snap.system.container, snap.system.container_evidence = "docker", "/.dockerenv exists"
    snap.nvml.gpus[0].brand = brand
    snap.system.env.update(env)
    return snap


def test_a_driver_of_the_images_cuda_meets_it() -> None:
    f = the(
        in_container("550.54.15", 12040, NVIDIA_REQUIRE_CUDA=CUDA_12_4),
        "system.image-cuda-requirement",
    )
    assert f.status is Status.PASS


def test_a_forward_compatibility_clause_on_a_data_centre_gpu_meets_it() -> None:
    snap = in_container("535.161.08", 12020, NVIDIA_REQUIRE_CUDA=CUDA_12_4)
    assert the(snap, "system.image-cuda-requirement").status is Status.PASS


def test_an_older_driver_outside_every_clause_fails_with_the_cudas_minimum_driver() -> None:
    snap = in_container(
        "525.147.05", 12000, NVIDIA_REQUIRE_CUDA=CUDA_12_4, NVIDIA_DISABLE_REQUIRE="1"
    )
    f = the(snap, "system.image-cuda-requirement")
    assert f.status is Status.FAIL
    assert (
        "needs CUDA 12.4 (NVIDIA_REQUIRE_CUDA), but the host driver 525.147.05 supports CUDA 12.0"
        in f.title
    )
    assert "NVIDIA_DISABLE_REQUIRE is set: the toolkit did not check it" in f.evidence
    assert f.fix is not None
    assert "install driver 550.54.14 or newer (CUDA 12.4's minimum)" in f.fix.text


def test_a_geforce_gpu_is_not_carried_by_a_tesla_clause() -> None:
    snap = in_container("535.161.08", 12020, brand="GeForce", NVIDIA_REQUIRE_CUDA=CUDA_12_4)
    assert the(snap, "system.image-cuda-requirement").status is Status.FAIL


def test_outside_a_container_or_without_the_variable_it_is_not_judged() -> None:
    host = builders.h100_node(1)
    host.system.env["NVIDIA_REQUIRE_CUDA"] = CUDA_12_4
    assert finding(host, "system.image-cuda-requirement") is None
    assert finding(in_container("550.54.15", 12040), "system.image-cuda-requirement") is None
    assert finding(mb.container_without_gpu(), "system.image-cuda-requirement") is None
