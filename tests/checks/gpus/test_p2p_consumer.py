"""gpus.p2p on consumer GPUs: where NVML reports P2P between GeForce cards the NCCL hang warning
names NCCL_P2P_DISABLE=1 (tinygrad/open-gpu-kernel-modules#45, NVIDIA/nccl-tests#117: 4090s
that hang with P2P and run with it off); where NVML reports no P2P, NCCL already leaves the P2P
transport out by itself (NVIDIA/nccl#1637, an NCCL maintainer: "NCCL_P2P_DISABLE=1 should have
no effect as NCCL will auto-detect P2P connectivity and disable that transport layer on its own
if it's not available"), so nothing is asked of the user."""

from __future__ import annotations

from support import builders
from support.evaluate import the

from gpucheck.model.fabric import GpuPair
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot


def two_geforce(read: str) -> Snapshot:
    snap = builders.node(
        [builders.rtx_3060(0), builders.rtx_3060(1)], driver="570.124.04", cuda=12080
    )
    for gpu in snap.nvml.gpus:
        gpu.brand = "GeForce"
    snap.nvml.gpus[1].pci_bus_id = "00000000:41:00.0"
    snap.nvml.pairs = [GpuPair(0, 1, read, read, "not_supported", "node")]
    return snap


def test_consumer_gpus_reporting_p2p_get_the_nccl_switch() -> None:
    f = the(two_geforce("ok"), "gpus.p2p")
    assert f.status is Status.WARN
    assert f.fix is not None and "export NCCL_P2P_DISABLE=1" in f.fix.commands


def test_consumer_gpus_without_p2p_are_not_told_to_disable_it() -> None:
    f = the(two_geforce("not_supported"), "gpus.p2p")
    assert f.status is Status.PASS
    assert "1 without P2P" in f.title
    assert f.fix is None
