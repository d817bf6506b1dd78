"""Healthy layouts the network checks must not fail: a dual-port ConnectX with its second port
unplugged (mlx5 shows it as a device of its own), a port an administrator disabled, a container
given one GPU of an eight-GPU host, RDMA devices with no port in use on a standalone node, and a
job script's NCCL_IB_HCA on a node without RDMA."""

from __future__ import annotations

from pathlib import Path

from sim.network import dgx_network, second_ports
from support import builders
from support.evaluate import finding, the
from support.network_facts import dgx, set_port

from gpucheck.model.snapshot import NvmlError
from gpucheck.probes.network import probe_network


def test_a_dual_port_card_whose_second_device_is_unplugged_passes(tmp_path: Path) -> None:
    network = second_ports(dgx_network())
    network.write_root(tmp_path)
    facts = probe_network(tmp_path, {}, list(network.gpu_places))
    by_name = {d.name: d for d in facts.rdma}
    assert by_name["mlx5_8"].pci_address == "0000:19:00.1"  # mlx5_0's card, function 1
    assert (by_name["mlx5_8"].ports[0].number, by_name["mlx5_8"].ports[0].state) == (1, "1: DOWN")
    snap = builders.h100_node(8)
    snap.network = facts
    found = the(snap, "network.rdma-ports")
    assert found.status.value == "pass"
    assert found.title.startswith("RDMA ports: 8 ACTIVE (mlx5_0 port 1, ")


def test_a_card_with_both_devices_down_still_fails_among_active_cards(tmp_path: Path) -> None:
    network = second_ports(dgx_network())
    network.nics[3].ports[0].state, network.nics[3].ports[0].phys_state = "1: DOWN", "2: Polling"
    network.write_root(tmp_path)
    snap = builders.h100_node(8)
    snap.network = probe_network(tmp_path, {}, list(network.gpu_places))
    found = the(snap, "network.rdma-ports")
    assert found.status.value == "fail"
    assert "mlx5_3 port 1: 1: DOWN, 2: Polling, 400 Gb/sec (4X NDR), InfiniBand" in found.evidence
    down = {line.partition(":")[0] for line in found.evidence if line.startswith("mlx5")}
    assert down == {"mlx5_3 port 1", "mlx5_11 port 1"}  # the other cards' spares are not listed


def test_a_port_disabled_by_an_administrator_is_deliberate() -> None:
    snap = set_port(dgx(builders.h100_node(8)), 3, state="1: DOWN", phys_state="3: Disabled")
    assert the(snap, "network.rdma-ports").status.value == "pass"


def test_a_container_given_one_gpu_of_an_eight_gpu_host_is_judged_as_single_gpu() -> None:
    snap = dgx(builders.h100_node(8))  # /sys/bus/pci lists all eight GPUs of the host
    snap.nvml.gpus = snap.nvml.gpus[:1]  # NVML sees the one the container was given
    set_port(snap, 3, state="1: DOWN", phys_state="2: Polling")
    assert the(snap, "network.rdma-ports").status.value == "warn"
    snap.nvml.init_error = NvmlError(9, "DriverNotLoaded")  # NVML silent: PCI's count rules
    assert the(snap, "network.rdma-ports").status.value == "fail"


def test_rdma_devices_with_no_port_in_use_warn_and_their_memlock_is_not_judged() -> None:
    snap = dgx(builders.h100_node(8), memlock_bytes=64 << 10)
    for i in range(8):
        set_port(snap, i, state="1: DOWN", phys_state="2: Polling")
    usable = the(snap, "network.rdma-usable")
    assert usable.status.value == "warn"
    assert usable.title.startswith("None of the 8 RDMA device(s) has an ACTIVE port")
    assert finding(snap, "network.memlock") is None
    set_port(snap, 0, state="4: ACTIVE", phys_state="5: LinkUp")
    assert the(snap, "network.memlock").status.value == "fail"  # a port in use registers memory


def test_nccl_ib_hca_on_a_node_without_rdma_is_information_only() -> None:
    snap = dgx(builders.h100_node(8), rdma=[], distances=[], nccl_env={"NCCL_IB_HCA": "mlx5"})
    found = the(snap, "network.nccl-env")
    assert found.status.value == "info"
    assert "NCCL_IB_HCA=mlx5: no RDMA device here, NCCL uses sockets" in found.evidence
    env = {"NCCL_IB_HCA": "mlx5", "NCCL_SOCKET_IFNAME": "eth0"}  # bootstrap finds no interface
    bad = dgx(builders.h100_node(8), rdma=[], distances=[], nccl_env=env)
    found = the(bad, "network.nccl-env")
    assert found.status.value == "fail"
    assert found.title.startswith("NCCL_SOCKET_IFNAME names nothing on this node")
