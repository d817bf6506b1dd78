"""The network probe reads a node's RDMA devices, interfaces, PCIe places and limits from a
sysfs laid out as Linux lays it out (tests/sim/network.py), and from this machine's own
/dev/shm and RLIMIT_MEMLOCK where the root is "/"."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from sim.network import HDR, POLLING, Place, dgx_network, port

from gpucheck.model.network import PciPlace
from gpucheck.probes.network import acs_isolated, limits, pci_level, probe_network

GPU0, GPU4 = "0000:18:00.0", "0000:9a:00.0"
GPUS = [GPU0, "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0", GPU4]


def test_a_dgx_like_node_reads_as_eight_ndr_ports_each_gpu_pix_to_its_own_nic(
    tmp_path: Path,
) -> None:
    dgx_network().write_root(tmp_path)
    env = {"NCCL_IB_HCA": "mlx5", "NCCL_COMM_ID": "node7:5000", "PATH": "/bin"}
    facts = probe_network(tmp_path, env, GPUS)
    assert facts.scanned is True
    assert [d.name for d in facts.rdma] == [f"mlx5_{i}" for i in range(8)]
    mlx0 = facts.rdma[0]
    assert (mlx0.pci_address, mlx0.driver, mlx0.hca_type) == ("0000:19:00.0", "mlx5_core", "MT4129")
    assert mlx0.netdevs == ["ibp25s0"]
    assert mlx0.node_type == "1: CA" and mlx0.fw_ver == "28.39.1002"
    (p,) = mlx0.ports
    assert (p.number, p.state, p.phys_state) == (1, "4: ACTIVE", "5: LinkUp")
    assert (p.rate, p.rate_gbps, p.link_layer) == ("400 Gb/sec (4X NDR)", 400.0, "InfiniBand")
    ipoib = [f"ibp{bus}s0" for bus in (25, 43, 59, 94, 155, 172, 187, 220)]
    assert facts.interfaces == sorted(["docker0", "eno1", "lo", *ipoib])
    eno1 = next(n for n in facts.nics if n.name == "eno1")
    assert (eno1.pci_address, eno1.driver, eno1.speed_mbps, eno1.operstate) == (
        "0000:c1:00.0",
        "bnxt_en",
        25000,
        "up",
    )
    assert {n.name for n in facts.nics} >= {"eno1", "ibp25s0"}
    assert "lo" not in {n.name for n in facts.nics}  # virtual: named, not described
    level = {(d.gpu, d.nic): d.level for d in facts.distances}
    assert level[(GPU0, "mlx5_0")] == "PIX"
    assert level[(GPU0, "mlx5_1")] == "NODE"  # another host bridge, the same socket
    assert level[(GPU0, "mlx5_4")] == "SYS"  # the other socket
    assert level[(GPU4, "mlx5_4")] == "PIX"
    gpu0 = next(p for p in facts.places if p.address == GPU0)
    assert gpu0.host_bridge == "pci0000:14"
    assert gpu0.bridges == ["0000:14:01.0", "0000:15:00.0", "0000:16:00.0"]
    assert gpu0.numa_node == 0 and gpu0.iommu_group is None
    assert facts.iommu_units == []
    assert facts.peermem == "nvidia_peermem"
    assert facts.kernel_release == "5.15.0-185-generic"
    assert facts.shm_bytes == 1 << 40 and facts.memlock_bytes == -1
    assert facts.nccl_env == {"NCCL_IB_HCA": "mlx5"}  # never NCCL_COMM_ID: it names a host


def test_faults_read_back_as_the_ports_and_limits_they_are(tmp_path: Path) -> None:
    network = dgx_network(peermem=False, shm_bytes=64 << 20, memlock_bytes=8 << 20)
    port(network, 3, state=POLLING[0], phys_state=POLLING[1], rate="10 Gb/sec (4X SDR)")
    port(network, 5, rate=HDR)
    network.write_root(tmp_path)
    facts = probe_network(tmp_path, {}, GPUS)
    assert facts.rdma[3].ports[0].phys_state == "2: Polling"
    assert facts.rdma[5].ports[0].rate_gbps == 200.0
    assert (facts.peermem, facts.peermem_read) == (None, True)
    assert (facts.shm_bytes, facts.memlock_bytes) == (64 << 20, 8 << 20)


def test_another_root_without_given_limits_leaves_them_unknown(tmp_path: Path) -> None:
    (tmp_path / "dev/shm").mkdir(parents=True)  # a folder, not a tmpfs: its size means nothing
    assert limits(tmp_path) == (None, None)


def test_this_machines_own_limits_are_its_statvfs_and_getrlimit() -> None:
    shm, memlock = limits(Path("/"))
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    assert memlock == (-1 if soft == resource.RLIM_INFINITY else soft)
    if os.path.isdir("/dev/shm"):
        st = os.statvfs("/dev/shm")
        assert shm == st.f_blocks * st.f_frsize


def test_no_sysfs_and_not_linux_give_no_facts(tmp_path: Path) -> None:
    facts = probe_network(tmp_path, {}, [GPU0])
    assert facts.scanned and facts.rdma == [] and facts.interfaces == []
    assert [(d.gpu, d.level) for d in facts.distances] == []
    assert probe_network(tmp_path, {}, [GPU0], linux=False).scanned is False


def place(bridges: tuple[str, ...], host: str = "pci0000:00", numa: int | None = 0) -> PciPlace:
    return PciPlace(bridges[-1] if bridges else "x", host, list(bridges), numa)


def test_levels_follow_nvidia_smi_topo_legend() -> None:
    rp, up, down1, down2 = "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:02:01.0"
    gpu = place((rp, up, down1))
    assert pci_level(gpu, place((rp, up, down2))) == "PIX"  # one switch
    assert pci_level(gpu, place((rp, up, down1))) == "PIX"  # one port: a multi-function card
    deeper = place((rp, up, down2, "0000:03:00.0", "0000:04:00.0"))
    assert pci_level(gpu, deeper) == "PXB"  # switches under a switch
    assert pci_level(gpu, place(("0000:00:02.0",))) == "PHB"  # another root port
    assert pci_level(gpu, place(("0000:80:01.0",), "pci0000:80", 0)) == "NODE"
    assert pci_level(gpu, place(("0000:80:01.0",), "pci0000:80", 1)) == "SYS"
    assert pci_level(gpu, place(("0000:80:01.0",), "pci0000:80", None)) is None
    assert pci_level(gpu, PciPlace("0000:05:00.0")) is None  # a flat bus: no path


def test_a_switch_that_splits_its_ports_into_iommu_groups_isolates_them() -> None:
    a, b = Place("pci0000:00", ()), Place("pci0000:00", ())
    assert a.iommu_group is None and b.iommu_group is None
    gpu, nic = PciPlace("g", iommu_group="12"), PciPlace("n", iommu_group="13")
    assert acs_isolated(gpu, nic, "PIX") is True
    assert acs_isolated(gpu, PciPlace("n", iommu_group="12"), "PIX") is False
    assert acs_isolated(gpu, nic, "SYS") is None  # not under one switch: nothing to isolate
    assert acs_isolated(PciPlace("g"), nic, "PIX") is None  # no IOMMU


def test_odd_sysfs_content_is_unknown_never_a_crash(tmp_path: Path) -> None:
    ib = tmp_path / "sys/class/infiniband/mlx5_0"
    (ib / "ports/1").mkdir(parents=True)
    (ib / "ports/notaport").mkdir()
    (ib / "ports/1/rate").write_bytes(b"\xff\xfe fast\n")  # not UTF-8, no number
    (ib / "ports/1/state").write_text("")
    (ib / "device").symlink_to("../../../devices/nowhere/0000:19:00.0")  # dangling
    net = tmp_path / "sys/class/net/eth0"
    net.mkdir(parents=True)
    (net / "speed").write_text("-1\n")  # no link
    (net / "device").symlink_to(net / "device")  # a loop
    (tmp_path / "sys/bus/pci/devices").mkdir(parents=True)
    (tmp_path / "sys/bus/pci/devices/0000:18:00.0").symlink_to("/nonexistent/0000:18:00.0")
    facts = probe_network(tmp_path, {}, [GPU0])
    (device,) = facts.rdma
    assert (device.pci_address, device.driver, device.hca_type) == (None, None, None)
    (p,) = device.ports
    assert (p.number, p.state, p.rate_gbps) == (1, None, None)
    assert p.rate is not None and "fast" in p.rate
    assert facts.interfaces == ["eth0"] and facts.nics == []  # no PCI device: virtual
    assert facts.places == []
    assert [(d.gpu, d.nic, d.level) for d in facts.distances] == [(GPU0, "mlx5_0", None)]
