"""Network facts for check tests, written out as the probe records them: a DGX-like node whose
GPUs each share a PCIe switch with one ConnectX-7 (mlx5_N, InfiniBand NDR), four pairs per
CPU socket, and the changes the tests make to it."""

from __future__ import annotations

from msgspec.structs import replace

from gpucheck.model.network import GpuNicDistance, NetworkFacts, RdmaDevice, RdmaPort
from gpucheck.model.snapshot import Snapshot

NDR = RdmaPort(1, "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", 400.0, "InfiniBand")


def gpu_addresses(snap: Snapshot) -> list[str]:
    return [d.address for d in snap.system.pci_gpus]


def dgx(snap: Snapshot, **changes: object) -> Snapshot:
    """`snap` with a healthy DGX-like network: one NIC per GPU, PIX to its own GPU, NODE to
    the others of its socket, SYS to the other socket's; nvidia_peermem loaded, /dev/shm 1 TiB,
    memlock unlimited, the IOMMU off."""
    gpus = gpu_addresses(snap)
    half = max(1, len(gpus) // 2)
    rdma = [
        RdmaDevice(
            f"mlx5_{i}",
            node_type="1: CA",
            fw_ver="28.39.1002",
            hca_type="MT4129",
            pci_address=f"0000:{0x19 + i * 0x10:02x}:00.0",
            driver="mlx5_core",
            ports=[replace(NDR)],
        )
        for i in range(len(gpus))
    ]
    distances = [
        GpuNicDistance(
            gpu, nic.name, "PIX" if g == n else ("NODE" if (g < half) == (n < half) else "SYS")
        )
        for g, gpu in enumerate(gpus)
        for n, nic in enumerate(rdma)
    ]
    facts = NetworkFacts(
        scanned=True,
        rdma=rdma,
        interfaces=["eno1", "lo", *[f"ibp{0x19 + i * 0x10}s0" for i in range(len(gpus))]],
        distances=distances,
        iommu_units=[],
        peermem="nvidia_peermem",
        peermem_read=True,
        kernel_release="5.15.0-185-generic",
        shm_bytes=1 << 40,
        memlock_bytes=-1,
    )
    for key, value in changes.items():
        setattr(facts, key, value)
    snap.network = facts
    return snap


def set_port(snap: Snapshot, nic: int, **changes: object) -> Snapshot:
    device = snap.network.rdma[nic]
    device.ports = [replace(device.ports[0], **changes)]
    return snap
