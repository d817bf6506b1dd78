"""NVSwitch fabric, NVLink and peer-to-peer end to end in the simulator:
the real `gpucheck doctor --json` on a fake NVML answering nvmlDeviceGetGpuFabricInfoV,
nvmlDeviceGetNvLinkState, nvmlDeviceGetP2PStatus and nvmlDeviceGetTopologyCommonAncestor, and a
fake root with NVSwitch PCI devices, dpkg's status file and the daemons' processes."""

from __future__ import annotations

from typing import Any

import pynvml as nv
import pytest
import sim.scenario as sim
from sim.fabric import Fabric, hgx_fabric
from support.sim_doctor import doctor, doctor_text
from test_healthy_sim import rtx_4090

DRIVER = "590.48.01"  # the simulator's default driver


def commands(finding: dict[str, Any]) -> list[str]:
    return [step.get("command") or "" for step in finding["fix"]["steps"]]


def hgx(fabric: Fabric, **changes: Any) -> sim.Scenario:
    gpus = [sim.replace(sim.h100(i), persistence=True) for i in range(8)]
    return sim.Scenario(gpus, fabric=fabric, **changes)


def test_a_healthy_hgx_h100_reports_its_fabric_links_and_pairs(simulate: Any) -> None:
    d = doctor(simulate(hgx(hgx_fabric())))
    fab = d.snapshot["system"]["fabric"]
    assert fab["nvswitch_pci"] == ["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]
    assert fab["nvswitch_nodes"][0] == "/dev/nvidia-nvswitch0"
    assert fab["fabricmanager_package"] == "nvidia-fabricmanager-590"
    assert fab["fabricmanager_version"] == "590.48.01"
    assert fab["fabricmanager_running"] is True and fab["persistenced_running"] is True
    gpu0 = d.snapshot["nvml"]["gpus"][0]
    assert gpu0["fabric_state"] == "completed" and gpu0["fabric_status"] == 0
    assert gpu0["nvlink_active"] == [True] * 18
    pairs = d.snapshot["nvml"]["pairs"]
    assert len(pairs) == 28  # 8 GPUs: 8 * 7 / 2
    assert pairs[0] == {
        "gpu_a": 0,
        "gpu_b": 1,
        "p2p_read": "ok",
        "p2p_write": "ok",
        "p2p_nvlink": "ok",
        "topology": "node",
        "errors": {},
    }
    assert d.status("driver.fabric-manager") == "pass"
    assert d.status("gpus.nvlink") == "pass"
    assert d.status("gpus.p2p") == "pass"
    assert "28 GPU pair(s): 28 over NVLink" in d.text("gpus.p2p")
    assert d.status("cuda.driver-api") == "pass"
    assert d.statuses("fail") == set()


def test_the_topology_matrix_is_in_the_text_report(simulate: Any) -> None:
    text = doctor_text(simulate(hgx(hgx_fabric())))
    assert "GPU topology" in text
    header, row = [line.split() for line in text.splitlines() if line.split()[:1] == ["GPU0"]]
    assert header == ["GPU0", "GPU1", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7"]
    assert row == ["GPU0", "X", "NV18", "NV18", "NV18", "NV18", "NV18", "NV18", "NV18"]


def not_ready(fabric: Fabric) -> sim.Scenario:
    """cuInit answers 802 (CUDA_ERROR_SYSTEM_NOT_READY), the GPUs' fabric is not started."""
    fabric.gpu_fabric = {
        i: (nv.NVML_GPU_FABRIC_STATE_NOT_STARTED, nv.NVML_SUCCESS) for i in range(8)
    }
    return hgx(fabric, faults=[sim.error("cuInit", sim.CUDA_ERROR_SYSTEM_NOT_READY)])


@pytest.mark.parametrize(
    ("changes", "cause", "command"),
    [
        (
            {"fabricmanager_running": False},
            "the fabric manager is installed but not running",
            "sudo systemctl enable --now nvidia-fabricmanager",
        ),
        (
            {"fabricmanager_version": "590.44.01-1"},
            "the fabric manager is version 590.44.01 and the driver 590.48.01",
            "sudo apt-get install -y --allow-downgrades 'nvidia-fabricmanager-590=590.48.01-*'",
        ),
        (
            {
                "fabricmanager_package": None,
                "fabricmanager_version": None,
                "fabricmanager_unit": False,
                "fabricmanager_enabled": False,
                "fabricmanager_running": False,
            },
            "the fabric manager (nvidia-fabricmanager) is not installed",
            "sudo apt-get install -y --allow-downgrades 'nvidia-fabricmanager-590=590.48.01-*'",
        ),
    ],
    ids=["stopped", "wrong-version", "not-installed"],
)
def test_cuinit_802_names_the_fabric_managers_exact_fault(
    simulate: Any, changes: dict[str, Any], cause: str, command: str
) -> None:
    d = doctor(simulate(not_ready(hgx_fabric(**changes))))
    assert d.status("cuda.driver-api") == "fail"
    title = d.finding("cuda.driver-api")["title"]
    assert title.startswith(f"CUDA cannot start on this NVSwitch system: {cause}")
    assert any(command in c for c in commands(d.finding("cuda.driver-api")))
    assert d.status("driver.fabric-manager") == "fail"
    assert d.returncode == 1


def test_a_running_manager_with_untrained_gpus_points_at_its_log(simulate: Any) -> None:
    d = doctor(simulate(not_ready(hgx_fabric())))
    assert "8 GPU(s) are not in the fabric" in d.finding("cuda.driver-api")["title"]
    assert any(
        "journalctl -u nvidia-fabricmanager" in c for c in commands(d.finding("cuda.driver-api"))
    )


def test_a_stopped_manager_after_training_is_a_warning(simulate: Any) -> None:
    d = doctor(simulate(hgx(hgx_fabric(fabricmanager_running=False))))
    assert d.status("driver.fabric-manager") == "warn"
    assert d.status("cuda.driver-api") == "pass"


def test_a_gpu_with_nvlinks_down_is_named(simulate: Any) -> None:
    fabric = hgx_fabric()
    fabric.nvlinks[3] = (18, ((1 << 18) - 1) & ~(1 << 5) & ~(1 << 11))
    d = doctor(simulate(hgx(fabric)))
    assert d.status("gpus.nvlink") == "warn"
    assert "GPU 3 (NVIDIA H100 80GB HBM3, 00000000:5D:00.0): link(s) 5, 11 down" in d.text(
        "gpus.nvlink"
    )


def two_4090s(iommu_groups: int, cmdline: str) -> sim.Scenario:
    """Two RTX 4090s on one CPU's PCIe root (nvidia-smi topo: NODE), P2P reported OK."""
    ok, unsupported = nv.NVML_P2P_STATUS_OK, nv.NVML_P2P_STATUS_NOT_SUPPORTED
    second = sim.replace(
        rtx_4090(), uuid="GPU-5bd52c4c-0000-0000-0000-000000000001", pci_bus_id="00000000:41:00.0"
    )
    fabric = Fabric(
        p2p={(0, 1): (ok, ok, unsupported)},
        topology={(0, 1): nv.NVML_TOPOLOGY_NODE},
        iommu_groups=iommu_groups,
        cmdline=cmdline,
    )
    return sim.Scenario([rtx_4090(), second], fabric=fabric)


def test_pcie_p2p_through_a_translating_iommu_is_the_nccl_hang_warning(simulate: Any) -> None:
    d = doctor(simulate(two_4090s(42, "BOOT_IMAGE=/vmlinuz ro amd_iommu=on")))
    f = d.finding("gpus.p2p")
    assert f["status"] == "warn"
    assert "IOMMU on (42 IOMMU groups; amd_iommu=on)" in f["title"]
    assert "export NCCL_P2P_DISABLE=1" in commands(f)
    assert "GPU 0 <-> GPU 1: read ok, write ok, NVLink not_supported, path node" in f["evidence"]
    assert d.snapshot["system"]["fabric"]["iommu_cmdline"] == ["amd_iommu=on"]
    assert d.status("driver.fabric-manager") is None  # no NVSwitch: not reported


def test_unknown_pair_facts_stay_unknown(simulate: Any) -> None:
    scenario = sim.Scenario([sim.h100(0), sim.h100(1)])  # no p2p/topo lines: NOT_SUPPORTED
    d = doctor(simulate(scenario))
    (pair,) = d.snapshot["nvml"]["pairs"]
    assert pair["p2p_read"] is None and pair["errors"]["p2p_read"] == "NotSupported"
    assert d.snapshot["nvml"]["gpus"][0]["fabric_state"] is None
    assert d.snapshot["nvml"]["gpus"][0]["field_errors"]["fabric_state"] == "NotSupported"
    assert d.status("gpus.p2p") is None  # nothing known about any pair: nothing said


def test_a_crashing_p2p_call_costs_only_the_pairs(simulate: Any) -> None:
    scenario = hgx(hgx_fabric(), faults=[sim.crash("nvmlDeviceGetP2PStatus")])
    d = doctor(simulate(scenario))
    assert len(d.snapshot["nvml"]["gpus"]) == 8
    pair = d.snapshot["nvml"]["pairs"][0]
    assert pair["errors"]["p2p_read"] == "Crashed" and pair["topology"] == "node"
