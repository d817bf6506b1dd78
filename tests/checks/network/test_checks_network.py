"""The network layer's checks on snapshot fixtures: a DGX-like node (support/network_facts.py)
and one fault at a time; a single-GPU node gets warnings where a multi-GPU one fails, and a node
without the facts (an older snapshot, no GPU) gets no network finding at all."""

from __future__ import annotations

from support import builders
from support.evaluate import finding, run_checks, text, the
from support.network_facts import dgx, set_port

from gpucheck.checks.network.common import matches, selected
from gpucheck.model.environments import Distribution, FrameworkRuntime, PythonEnvironment
from gpucheck.model.fabric import FabricHostFacts
from gpucheck.model.network import GpuNicDistance, RdmaPort

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
PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  590.48.01  Fri Feb 21 2025"


def test_a_healthy_dgx_like_node_passes_every_network_check() -> None:
    findings = {f.id: f for f in run_checks(dgx(builders.h100_node(8)))}
    assert {i: findings[i].status.value for i in NETWORK_CHECKS} == dict.fromkeys(
        NETWORK_CHECKS, "pass"
    )
    assert "network.nccl-env" not in findings  # no NCCL variable set: nothing to judge
    assert findings["network.rdma-usable"].title == "RDMA: 8 ACTIVE port(s) on 8 of 8 device(s)"
    assert findings["network.gpudirect-rdma"].title == "GPUDirect RDMA: nvidia_peermem is loaded"
    assert findings["network.nic-affinity"].title.endswith(
        "each of 8 GPU(s) has an RDMA NIC at PIX"
    )
    assert findings["network.shm"].title == "/dev/shm: 1024.0 GiB"


def test_without_network_facts_or_without_a_gpu_there_is_no_network_finding() -> None:
    older = builders.h100_node(8)  # a snapshot from before the network section
    assert [f.id for f in run_checks(older) if f.id.startswith("network.")] == []
    no_gpu = dgx(builders.no_gpu_machine())
    assert [f.id for f in run_checks(no_gpu) if f.id.startswith("network.")] == []


def test_a_port_polling_among_active_ones_fails_a_multi_gpu_node() -> None:
    snap = set_port(dgx(builders.h100_node(8)), 3, state="1: DOWN", phys_state="2: Polling")
    found = the(snap, "network.rdma-ports")
    assert found.status.value == "fail"
    assert "Polling: no link trained" in found.title
    assert "mlx5_3 port 1: 1: DOWN, 2: Polling" in found.evidence[0]
    assert "ibstat" in text(found)
    assert the(snap, "network.rdma-usable").status.value == "pass"  # seven others still up


def test_a_port_polling_on_a_single_gpu_node_is_a_warning() -> None:
    snap = dgx(builders.node([builders.h100(0), builders.h100(1)]))
    snap.system.pci_gpus = snap.system.pci_gpus[:1]
    snap.nvml.gpus = snap.nvml.gpus[:1]
    set_port(snap, 1, state="2: INIT", phys_state="5: LinkUp")
    found = the(snap, "network.rdma-ports")
    assert found.status.value == "warn"
    assert "INIT: link up but not configured by a subnet manager" in found.title


def test_an_unused_second_port_of_every_card_is_not_a_fault() -> None:
    snap = dgx(builders.h100_node(2))
    for device in snap.network.rdma:
        device.ports.append(RdmaPort(2, "1: DOWN", "3: Disabled"))
    assert the(snap, "network.rdma-ports").status.value == "pass"


def test_one_port_at_200g_among_400g_is_a_warning() -> None:
    snap = set_port(dgx(builders.h100_node(8)), 5, rate="200 Gb/sec (4X HDR)", rate_gbps=200.0)
    found = the(snap, "network.rdma-rate")
    assert found.status.value == "warn"
    assert found.evidence == [
        "mlx5_5 port 1: 4: ACTIVE, 5: LinkUp, 200 Gb/sec (4X HDR), InfiniBand (others: 400 Gb/sec)"
    ]


def test_rdma_devices_with_no_port_up_warn_eight_gpus_and_one() -> None:
    snap = dgx(builders.h100_node(8))
    for i in range(8):
        set_port(snap, i, state="1: DOWN", phys_state="2: Polling")
    found = the(snap, "network.rdma-usable")
    assert found.status.value == "warn"  # a standalone node trains without RDMA
    assert found.title.startswith("None of the 8 RDMA device(s) has an ACTIVE port")
    assert finding(snap, "network.rdma-ports") is None  # no kind is up: this check says it
    one = dgx(builders.node([builders.h100(0)]))
    set_port(one, 0, state="1: DOWN", phys_state="2: Polling")
    assert the(one, "network.rdma-usable").status.value == "warn"


def test_gpudirect_rdma_without_peermem_on_the_proprietary_module_warns_with_modprobe() -> None:
    snap = dgx(builders.h100_node(8), peermem=None)
    snap.system.nvidia_module_banner = PROPRIETARY
    found = the(snap, "network.gpudirect-rdma")
    assert found.status.value == "warn"
    assert found.fix is not None
    assert "sudo modprobe nvidia-peermem" in found.fix.commands
    assert "nvidia kernel module: proprietary; kernel 5.15.0-185-generic" in found.evidence


def test_gpudirect_rdma_by_dma_buf_needs_the_open_module_and_linux_5_12() -> None:
    # NVIDIA GPU Operator, "GPUDirect RDMA and GPUDirect Storage", prerequisites table
    # (NVIDIA/cloud-native-docs gpu-operator/gpu-operator-rdma.rst): DMA-BUF needs an Open
    # Kernel module driver and Linux 5.12 or higher; nvidia-peermem has no kernel minimum.
    snap = dgx(builders.h100_node(8), peermem=None)  # builders' banner: the open module
    found = the(snap, "network.gpudirect-rdma")
    assert found.status.value == "pass" and "DMA-BUF" in found.title
    old_kernel = dgx(builders.h100_node(8), peermem=None, kernel_release="5.4.0-216-generic")
    assert the(old_kernel, "network.gpudirect-rdma").status.value == "warn"


def test_gpus_with_only_a_far_nic_warn_while_the_others_have_a_near_one() -> None:
    snap = dgx(builders.h100_node(8))
    net = snap.network
    net.rdma = net.rdma[:4]  # the second socket's NICs are gone
    net.distances = [d for d in net.distances if d.nic in {r.name for r in net.rdma}]
    found = the(snap, "network.nic-affinity")
    assert found.status.value == "warn"
    assert found.title.startswith("4 GPU(s) have no RDMA NIC on their own CPU socket")
    assert "GPU 4: nearest NIC mlx5_0 (SYS)" in found.evidence


def test_a_translating_iommu_or_acs_on_the_gpu_nic_switch_warns() -> None:
    snap = dgx(builders.h100_node(8), iommu_units=["dmar0", "dmar1"])
    snap.system.fabric = FabricHostFacts(iommu_cmdline=["intel_iommu=on"])
    found = the(snap, "network.acs-iommu")
    assert found.status.value == "warn"
    assert "the IOMMU translates their DMA (no iommu=pt)" in found.title
    snap.system.fabric = FabricHostFacts(iommu_cmdline=["intel_iommu=on", "iommu=pt"])
    assert the(snap, "network.acs-iommu").status.value == "pass"
    pair = snap.network.distances[0]
    snap.network.distances[0] = GpuNicDistance(pair.gpu, pair.nic, "PIX", acs_isolated=True)
    isolated = the(snap, "network.acs-iommu")
    assert isolated.status.value == "warn"
    assert "GPU 0 - mlx5_0 (PIX): IOMMU groups differ" in isolated.evidence


def test_dockers_64_mib_dev_shm_fails_a_multi_gpu_container_with_shm_size() -> None:
    # NCCL's troubleshooting guide (NVIDIA/nccl docs/userguide/source/troubleshooting/
    # runtime_and_mpi_issues.rst, "Shared memory", Docker): `--shm-size=1g --ulimit memlock=-1`.
    snap = dgx(builders.h100_node(8), shm_bytes=64 << 20)
    snap.system.container = "docker"
    found = the(snap, "network.shm")
    assert found.status.value == "fail"
    assert found.title.startswith("/dev/shm is 64 MiB")
    assert "--shm-size=1g" in text(found) and "emptyDir" in text(found)
    single = dgx(builders.node([builders.h100(0)]), shm_bytes=64 << 20)
    assert the(single, "network.shm").status.value == "warn"
    assert finding(dgx(builders.h100_node(8), shm_bytes=None), "network.shm") is None


def test_a_memlock_limit_fails_rdma_registration_and_unlimited_passes() -> None:
    # NCCL's troubleshooting guide (networking_troubleshooting.rst): "ibv_reg_mr failed" is
    # the memlock limit; "* soft memlock unlimited" / "* hard memlock unlimited".
    snap = dgx(builders.h100_node(8), memlock_bytes=8 << 20)
    found = the(snap, "network.memlock")
    assert found.status.value == "fail"
    assert "The locked-memory limit is 8 MiB" in found.title
    assert "memlock unlimited" in text(found)
    no_rdma = dgx(builders.h100_node(8), rdma=[], distances=[], memlock_bytes=64 << 10)
    assert finding(no_rdma, "network.memlock") is None  # no RDMA: nothing registers memory


def test_nccl_filters_that_name_nothing_here_fail_and_switched_off_transports_warn() -> None:
    snap = dgx(builders.h100_node(8), nccl_env={"NCCL_SOCKET_IFNAME": "eth0"})
    found = the(snap, "network.nccl-env")
    assert found.status.value == "fail"
    assert found.fix is not None and "unset NCCL_SOCKET_IFNAME" in found.fix.commands
    hca = dgx(builders.h100_node(8), nccl_env={"NCCL_IB_HCA": "=mlx4_0:1"})
    assert the(hca, "network.nccl-env").status.value == "fail"
    off = dgx(builders.h100_node(8), nccl_env={"NCCL_IB_DISABLE": "1"})
    disabled = the(off, "network.nccl-env")
    assert disabled.status.value == "warn"
    assert "NCCL_IB_DISABLE=1 turns off what this node has: 8 RDMA port(s) ACTIVE" in (
        disabled.evidence
    )
    fine = dgx(builders.h100_node(8), nccl_env={"NCCL_SOCKET_IFNAME": "^docker,lo"})
    assert the(fine, "network.nccl-env").status.value == "pass"


def test_nccl_interface_filters_read_as_nccl_documents_them() -> None:
    names = ["eno1", "eth0", "eth1", "ib0", "lo"]
    assert matches("eth", names) == ["eth0", "eth1"]  # a prefix
    assert matches("=eth0", names) == ["eth0"]  # exact names
    assert matches("=eth", names) == []
    assert matches("^docker", names) is None  # an exclude list: the rest is used
    assert matches("mlx5_0:1,mlx5_1:1", ["mlx5_0", "mlx5_1", "mlx5_2"]) == ["mlx5_0", "mlx5_1"]


def test_rdma_usable_names_the_nccl_each_environment_carries() -> None:
    snap = dgx(builders.h100_node(8))
    env = PythonEnvironment(python="/opt/venv/bin/python", origin="virtualenv")
    env.distributions = [Distribution("nvidia-nccl-cu12", "2.21.5")]
    env.runtimes = [FrameworkRuntime("torch", "ok", nccl_version="2.21.5")]
    snap.environments = [env]
    assert the(snap, "network.rdma-usable").evidence == [
        "NCCL 2.21.5 (nvidia-nccl-cu12) in /opt/venv/bin/python",
        "NCCL 2.21.5 (torch) in /opt/venv/bin/python",
    ]


def test_an_hca_filter_that_leaves_a_socket_only_far_nics_warns_with_unset() -> None:
    snap = dgx(builders.h100_node(8), nccl_env={"NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"})
    found = the(snap, "network.nic-affinity")
    assert found.status.value == "warn"
    assert "GPU 4: nearest NIC mlx5_0 (SYS)" in found.evidence
    assert "NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3: only these NICs are counted" in (
        found.evidence
    )
    assert found.fix is not None and "unset NCCL_IB_HCA" in found.fix.commands
    one_socket = {"NCCL_IB_HCA": "^mlx5_4,mlx5_5,mlx5_6,mlx5_7"}  # the second socket's NICs out
    assert (
        the(dgx(builders.h100_node(8), nccl_env=one_socket), "network.nic-affinity").status.value
        == "warn"
    )
    other_socket_left = {"NCCL_IB_HCA": "^mlx5_4,mlx5_5"}  # GPUs 4-7 still have mlx5_6, mlx5_7
    assert (
        the(
            dgx(builders.h100_node(8), nccl_env=other_socket_left), "network.nic-affinity"
        ).status.value
        == "pass"
    )


def test_nccl_selects_what_its_filter_leaves() -> None:
    names = ["mlx5_0", "mlx5_1", "mlx5_10"]
    assert selected(None, names) == names
    assert selected("mlx5_1", names) == ["mlx5_1", "mlx5_10"]  # a prefix
    assert selected("=mlx5_1", names) == ["mlx5_1"]
    assert selected("^mlx5_1", names) == ["mlx5_0"]
    assert selected("^=mlx5_1", names) == ["mlx5_0", "mlx5_10"]
