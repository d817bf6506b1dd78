"""Fabric manager, NVLink and P2P facts judged from literal snapshots, read from fabricated
files, and rendered as nvidia-smi's topology matrix (only where some pair's link is known)."""

from __future__ import annotations

import json
from pathlib import Path

from support import builders as b
from support.evaluate import finding, the

from gpucheck.model.fabric import FabricHostFacts, GpuPair
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import ContainerHostFacts, Snapshot, dumps, loads
from gpucheck.probes.fabric import dpkg_fabricmanager, probe_fabric_host
from gpucheck.report.topology import matrix

# dpkg's status file as Ubuntu 22.04 writes it: the CUDA repository's package (Debian revision
# -1), Ubuntu's own (0ubuntu0.22.04.1), a removed one (config files only) and a -dev package.
DPKG_CUDA_REPO = """Package: nvidia-fabricmanager-dev-570
Status: install ok installed
Version: 570.86.15-1

Package: nvidia-fabricmanager-550
Status: deinstall ok config-files
Version: 550.54.15-1

Package: nvidia-fabricmanager-570
Status: install ok installed
Priority: optional
Layer: multiverse/utils
Version: 570.86.15-1
Description: Fabric Manager for NVSwitch based systems.
 A long description line.
"""
DPKG_UBUNTU = """Package: nvidia-fabricmanager-535
Status: install ok installed
Version: 535.230.02-0ubuntu0.22.04.1
"""


def test_dpkg_names_the_installed_package_and_its_upstream_version() -> None:
    assert dpkg_fabricmanager(DPKG_CUDA_REPO) == ("nvidia-fabricmanager-570", "570.86.15")
    assert dpkg_fabricmanager(DPKG_UBUNTU) == ("nvidia-fabricmanager-535", "535.230.02")
    assert dpkg_fabricmanager("Package: libc6\nStatus: install ok installed\n") == (None, None)
    assert dpkg_fabricmanager(None) == (None, None)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def fabricated_root(root: Path) -> Path:
    devices = root / "sys/bus/pci/devices"
    for address, vendor, cls in (
        ("0000:05:00.0", "0x10de", "0x068000"),  # NVSwitch
        ("0000:06:00.0", "0x10de", "0x068000"),
        ("0000:18:00.0", "0x10de", "0x030200"),  # an H100: a GPU, not a switch
        ("0000:00:1f.0", "0x8086", "0x068000"),  # another vendor's bridge
    ):
        _write(devices / address / "vendor", vendor + "\n")
        _write(devices / address / "class", cls + "\n")
    for name in ("nvidia-nvswitch0", "nvidia-nvswitch1", "nvidia-nvswitchctl", "nvidia0"):
        _write(root / "dev" / name, "")
    _write(root / "var/lib/dpkg/status", DPKG_CUDA_REPO)
    _write(root / "lib/systemd/system/nvidia-fabricmanager.service", "[Service]\n")
    _write(root / "proc/2101/comm", "nv-fabricmanage\n")
    _write(root / "proc/2102/comm", "sshd\n")
    for group in range(3):
        (root / f"sys/kernel/iommu_groups/{group}").mkdir(parents=True)
    _write(root / "proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt\n")
    return root


def test_the_host_files_are_read(tmp_path: Path) -> None:
    facts = probe_fabric_host(fabricated_root(tmp_path), in_container=False)
    assert facts == FabricHostFacts(
        nvswitch_pci=["0000:05:00.0", "0000:06:00.0"],
        nvswitch_nodes=[
            "/dev/nvidia-nvswitch0",
            "/dev/nvidia-nvswitch1",
            "/dev/nvidia-nvswitchctl",
        ],
        fabricmanager_package="nvidia-fabricmanager-570",
        fabricmanager_version="570.86.15",
        fabricmanager_unit=True,
        fabricmanager_enabled=False,
        fabricmanager_running=True,
        persistenced_running=False,
        iommu_groups=3,
        iommu_cmdline=["intel_iommu=on", "iommu=pt"],
    )


def test_a_containers_proc_says_nothing_about_the_hosts_daemons(tmp_path: Path) -> None:
    facts = probe_fabric_host(fabricated_root(tmp_path), in_container=True)
    assert facts.fabricmanager_running is None and facts.persistenced_running is None


def hgx(fabric: FabricHostFacts, state: str = "completed", status: int = 0) -> Snapshot:
    snap = b.h100_node(8)
    snap.system.fabric = fabric
    for g in snap.nvml.gpus:
        g.fabric_state, g.fabric_status = state, status
    return snap


def healthy_fabric(**changes: object) -> FabricHostFacts:
    fab = FabricHostFacts(
        nvswitch_pci=["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"],
        fabricmanager_package="nvidia-fabricmanager-590",
        fabricmanager_version="590.48.01",
        fabricmanager_unit=True,
        fabricmanager_enabled=True,
        fabricmanager_running=True,
        persistenced_running=True,
    )
    for key, value in changes.items():
        setattr(fab, key, value)
    return fab


def test_a_trained_fabric_passes() -> None:
    f = the(hgx(healthy_fabric()), "driver.fabric-manager")
    assert f.status is Status.PASS
    assert f.title == "NVSwitch fabric up: fabric manager 590.48.01, 8 GPU(s) trained"


def test_a_version_mismatch_while_trained_warns_and_fails_once_cuda_cannot_start() -> None:
    snap = hgx(healthy_fabric(fabricmanager_version="590.44.01"))
    f = the(snap, "driver.fabric-manager")
    assert f.status is Status.WARN
    assert f.title.startswith("The fabric manager is version 590.44.01 and the driver 590.48.01")
    snap.cuda.driver.init_result, snap.cuda.driver.init_error_name = (
        802,
        "CUDA_ERROR_SYSTEM_NOT_READY",
    )
    assert the(snap, "driver.fabric-manager").status is Status.FAIL
    api = the(snap, "cuda.driver-api")
    assert api.status is Status.FAIL
    assert api.title.startswith("CUDA cannot start on this NVSwitch system: the fabric manager is")
    assert "'nvidia-fabricmanager-590=590.48.01-*' && " in " ".join(
        api.fix.commands if api.fix else []
    )


def test_a_failed_training_and_one_in_progress() -> None:
    failed = the(hgx(healthy_fabric(), status=999), "driver.fabric-manager")
    assert (failed.status, failed.title) == (Status.FAIL, "Fabric training failed on 8 GPU(s)")
    busy = the(hgx(healthy_fabric(), state="in_progress"), "driver.fabric-manager")
    assert busy.status is Status.WARN and "still training on 8 GPU(s)" in busy.title


def test_no_nvswitch_no_finding() -> None:
    snap = b.h100_node(2)
    snap.system.fabric = FabricHostFacts()
    assert finding(snap, "driver.fabric-manager") is None


def test_a_snapshot_1_3_still_reads_and_its_unknown_facts_judge_nothing() -> None:
    data = json.loads(dumps(b.h100_node(2)))
    data["schema_version"] = "1.3"
    del data["system"]["fabric"], data["nvml"]["pairs"]
    for gpu in data["nvml"]["gpus"]:
        del gpu["fabric_state"], gpu["fabric_status"], gpu["nvlink_active"]
    snap = loads(json.dumps(data))
    assert snap.system.fabric is None and snap.nvml.pairs is None
    for check_id in ("driver.fabric-manager", "gpus.p2p", "gpus.nvlink"):
        assert finding(snap, check_id) is None


def test_pcie_p2p_without_iommu_on_data_centre_gpus_passes() -> None:
    snap = b.h100_node(2)
    snap.system.fabric = FabricHostFacts(iommu_groups=0)
    snap.nvml.pairs = [GpuPair(0, 1, "ok", "ok", "not_supported", "hostbridge")]
    f = the(snap, "gpus.p2p")
    assert f.status is Status.PASS
    assert f.title == "Peer-to-peer: 1 GPU pair(s): 0 over NVLink, 1 over PCIe, 0 without P2P"


def test_iommu_passthrough_is_not_translating() -> None:
    snap = b.h100_node(2)
    snap.system.fabric = FabricHostFacts(iommu_groups=40, iommu_cmdline=["iommu=pt"])
    snap.nvml.pairs = [GpuPair(0, 1, "ok", "ok", "not_supported", "node")]
    assert the(snap, "gpus.p2p").status is Status.PASS
    snap.system.fabric.iommu_cmdline = ["intel_iommu=on"]
    assert the(snap, "gpus.p2p").status is Status.WARN


def test_the_matrix_reads_like_nvidia_smi_topo() -> None:
    snap = b.h100_node(3)
    for g in snap.nvml.gpus[:2]:
        g.nvlink_active = [True] * 18
    snap.nvml.pairs = [
        GpuPair(0, 1, "ok", "ok", "ok", "node"),
        GpuPair(0, 2, "ok", "ok", "not_supported", "system"),
        GpuPair(1, 2, None, None, None, None),
    ]
    assert matrix(snap.nvml) == [
        "      GPU0  GPU1  GPU2",
        "GPU0  X     NV18  SYS",
        "GPU1  NV18  X     ?",
        "GPU2  SYS   ?     X",
        "NV#: NVLink (# links)  PIX/PXB: PCIe bridge(s)  PHB: through the CPU  "
        "NODE: across host bridges  SYS: across CPUs  ?: unknown",
    ]
    assert matrix(b.h100_node(1).nvml) == []


def test_a_matrix_of_nothing_but_unknown_pairs_is_not_printed() -> None:
    # NVML answered NOT_SUPPORTED for every pair (a simulated or older node): no information.
    snap = b.h100_node(3)
    snap.nvml.pairs = [
        GpuPair(0, 1, None, None, None, None),
        GpuPair(0, 2, "not_supported", "not_supported", "not_supported", None),
        GpuPair(1, 2, None, None, None, None),
    ]
    assert matrix(snap.nvml) == []


def test_persistence_off_on_a_container_host_names_slow_container_starts() -> None:
    snap = b.h100_node(2)
    for g in snap.nvml.gpus:
        g.persistence_mode = False
    snap.system.container_host = ContainerHostFacts(engines=["docker"])
    snap.system.fabric = FabricHostFacts(persistenced_running=False)
    f = the(snap, "driver.persistence-mode")
    assert f.status is Status.WARN
    assert "slow or timing-out container starts" in f.title
    assert "nvidia-persistenced: not running" in f.evidence


def test_inside_a_container_the_hosts_fabric_manager_is_not_judged_from_files() -> None:
    # A container sees the NVSwitch nodes but neither the host's dpkg nor its processes.
    fab = FabricHostFacts(nvswitch_nodes=["/dev/nvidia-nvswitch0"], fabricmanager_unit=False)
    snap = hgx(fab)
    snap.system.container = "docker"
    assert the(snap, "driver.fabric-manager").status is Status.PASS
    for g in snap.nvml.gpus:
        g.fabric_state = "not_started"
    f = the(snap, "driver.fabric-manager")
    assert f.status is Status.FAIL
    assert f.title.startswith("8 GPU(s) are not in the NVSwitch fabric (state: not started)")


def test_nvswitch_gpus_without_a_fabric_state_pass_on_a_running_manager() -> None:
    snap = hgx(healthy_fabric())
    for g in snap.nvml.gpus:
        g.fabric_state, g.fabric_status = None, None
    f = the(snap, "driver.fabric-manager")
    assert (f.status, f.title) == (
        Status.PASS,
        "NVSwitch system: fabric manager 590.48.01, no fault seen (the GPUs report no fabric "
        "state)",
    )


def test_on_the_rhel_family_the_fabric_manager_is_installed_with_dnf_at_the_driver_s_version() -> (
    None
):
    # NVIDIA's RPM is nvidia-fabric-manager, versioned as the driver (yum-packaging-fabric-manager's
    # fabricmanager.spec); apt's nvidia-fabricmanager-590 does not exist on Rocky Linux.
    snap = hgx(healthy_fabric(fabricmanager_version="590.44.01"))
    snap.system.os_release = "Rocky Linux 9.4 (Blue Onyx)"
    f = the(snap, "driver.fabric-manager")
    assert f.fix is not None
    step = f.fix.steps[0]
    assert step.command == (
        "sudo dnf install -y nvidia-fabric-manager-590.48.01 && "
        "sudo systemctl enable --now nvidia-fabricmanager"
    )
    assert step.tool is not None and step.tool.value == "dnf"
    assert [(c.name, c.to_version) for c in step.changes] == [
        ("nvidia-fabric-manager", "590.48.01")
    ]
