"""The topology matrix's NIC columns: one per RDMA device, named NIC0.. with nvidia-smi's NIC
legend, each cell the GPU-NIC distance the network probe recorded."""

from __future__ import annotations

from support import builders
from support.network_facts import dgx

from gpucheck.model.network import NetworkFacts
from gpucheck.report.topology import matrix


def test_a_single_gpu_with_a_nic_gets_its_one_row() -> None:
    snap = dgx(builders.node([builders.h100(0)]))
    assert matrix(snap.nvml, snap.network) == [
        "      GPU0  NIC0",
        "GPU0  X     PIX",
        "NV#: NVLink (# links)  PIX/PXB: PCIe bridge(s)  PHB: through the CPU  "
        "NODE: across host bridges  SYS: across CPUs  ?: unknown",
        "NIC Legend:",
        "  NIC0: mlx5_0",
    ]


def test_without_rdma_devices_a_single_gpu_has_no_matrix() -> None:
    snap = builders.node([builders.h100(0)])
    assert matrix(snap.nvml, NetworkFacts(scanned=True)) == []
    assert matrix(snap.nvml) == []


def test_an_unknown_distance_is_a_question_mark() -> None:
    snap = dgx(builders.h100_node(2))
    snap.network.distances[1].level = None  # GPU 0 - mlx5_1
    assert matrix(snap.nvml, snap.network)[:3] == [
        "      GPU0  GPU1  NIC0  NIC1",
        "GPU0  X     ?     PIX   ?",
        "GPU1  ?     X     SYS   PIX",
    ]
