"""A multi-node job's node, end to end in the simulator: the real `gpucheck doctor` on an
HGX H100 node whose fake root has eight ConnectX-7 400G InfiniBand ports, a DGX-like PCIe tree
(each GPU and its NIC under one switch, four pairs per socket), nvidia_peermem, /dev/shm and
the memlock limit (tests/sim/network.py), healthy and with the faults that break such jobs."""

from __future__ import annotations

from typing import Any

import sim.scenario as sim
from sim.fabric import hgx_fabric
from sim.network import HDR, POLLING, Network, dgx_network, port
from support.sim_doctor import doctor, doctor_text

NETWORK_CHECKS = (
    "network.rdma-ports",
    "network.rdma-rate",
    "network.rdma-usable",
    "network.gpudirect-rdma",
    "network.nic-affinity",
    "network.acs-iommu",
    "network.shm",
    "network.memlock",
)


def node(network: Network, **changes: Any) -> sim.Scenario:
    gpus = [sim.replace(sim.h100(i), persistence=True) for i in range(8)]
    return sim.Scenario(gpus, fabric=hgx_fabric(), network=network, **changes)


def test_a_healthy_dgx_like_node_reports_its_network_and_passes(simulate: Any) -> None:
    d = doctor(simulate(node(dgx_network())))
    net = d.snapshot["network"]
    assert [r["name"] for r in net["rdma"]] == [f"mlx5_{i}" for i in range(8)]
    assert net["rdma"][0]["ports"][0]["rate"] == "400 Gb/sec (4X NDR)"
    assert net["rdma"][0]["pci_address"] == "0000:19:00.0"
    levels = {(x["gpu"], x["nic"]): x["level"] for x in net["distances"]}
    assert levels[("0000:18:00.0", "mlx5_0")] == "PIX"
    assert levels[("0000:18:00.0", "mlx5_7")] == "SYS"
    assert net["peermem"] == "nvidia_peermem"
    assert (net["shm_bytes"], net["memlock_bytes"]) == (1 << 40, -1)
    assert {i: d.status(i) for i in NETWORK_CHECKS} == dict.fromkeys(NETWORK_CHECKS, "pass")
    assert d.statuses("fail") == set()


def test_a_polling_port_and_a_200g_port_are_what_the_doctor_reports(simulate: Any) -> None:
    network = dgx_network()
    port(network, 3, state=POLLING[0], phys_state=POLLING[1], rate="10 Gb/sec (4X SDR)")
    port(network, 6, rate=HDR)
    d = doctor(simulate(node(network)))
    assert d.status("network.rdma-ports") == "fail"
    assert "mlx5_3 port 1: 1: DOWN, 2: Polling" in d.text("network.rdma-ports")
    assert d.status("network.rdma-rate") == "warn"
    assert "mlx5_6 port 1" in d.text("network.rdma-rate")
    assert d.status("network.rdma-usable") == "pass"
    assert d.returncode == 1


def test_no_peermem_on_the_proprietary_module_and_dockers_dev_shm(simulate: Any) -> None:
    network = dgx_network(peermem=False, shm_bytes=64 << 20, memlock_bytes=8 << 20)
    d = doctor(simulate(node(network, open_kernel_module=False)))
    assert d.status("network.gpudirect-rdma") == "warn"
    assert "sudo modprobe nvidia-peermem" in d.text("network.gpudirect-rdma")
    assert d.status("network.shm") == "fail"
    assert d.finding("network.shm")["title"].startswith("/dev/shm is 64 MiB")
    assert d.status("network.memlock") == "fail"
    assert d.returncode == 1


def test_a_single_gpu_node_with_the_same_faults_only_warns(simulate: Any) -> None:
    network = dgx_network(count=1, shm_bytes=64 << 20, memlock_bytes=8 << 20)
    d = doctor(simulate(sim.Scenario([sim.h100(0)], network=network)))
    assert d.status("network.shm") == "warn"
    assert d.status("network.memlock") == "warn"
    assert {i for i in d.statuses("fail") if i.startswith("network.")} == set()


def test_the_topology_matrix_has_nic_columns_as_nvidia_smi_prints_them(simulate: Any) -> None:
    text = doctor_text(simulate(node(dgx_network())))
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.split()[:1]}
    header = next(
        line.split() for line in text.splitlines() if line.split()[:2] == ["GPU0", "GPU1"]
    )
    assert header[8:] == [f"NIC{i}" for i in range(8)]
    assert rows["GPU0"][1:] == ["X", *["NV18"] * 7, "PIX", "NODE", "NODE", "NODE", *["SYS"] * 4]
    assert rows["GPU5"][9:] == ["SYS", "SYS", "SYS", "SYS", "NODE", "PIX", "NODE", "NODE"]
    assert "NIC Legend:" in text
    assert "  NIC0: mlx5_0" in text
