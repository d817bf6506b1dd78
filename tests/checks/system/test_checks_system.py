"""System checks: is there a GPU at all, the no-GPU machine as a whole, does a container get it,
and nouveau. Each test starts from a healthy builder and changes the one fact it is about;
evaluate.run_checks holds every warn/fail of every fixture to having a fix."""

from __future__ import annotations

import pytest
from support import builders
from support import more_builders as mb
from support.evaluate import finding, run_checks, the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import DeviceNode

# --- system.gpu-present ---------------------------------------------------------------------


def test_gpu_present_passes_with_gpus_on_the_pci_bus() -> None:
    snap = builders.h100_node(8)
    f = the(snap, "system.gpu-present")
    assert f.id == "system.gpu-present"
    assert f.status is Status.PASS
    assert "8 NVIDIA GPUs on the PCI bus" in f.title
    # one evidence line per device, named from pci.ids where the probe could, by address
    assert len(f.evidence) == 8
    assert f.evidence[3] == "GH100 [H100 SXM5 80GB] at 0000:48:00.0"


def test_gpu_present_names_an_unnamed_device_by_its_id() -> None:
    snap = builders.workstation()  # the RTX 3060 has no pci.ids name in the snapshot
    f = the(snap, "system.gpu-present")
    assert f.status is Status.PASS
    assert "1 NVIDIA GPU on the PCI bus" in f.title
    assert f.evidence == ["device 0x2504 at 0000:01:00.0"]


def test_gpu_present_fails_with_no_nvidia_device_on_the_bus() -> None:
    snap = builders.no_gpu_machine()
    snap.system.pci_device_count = 23
    f = the(snap, "system.gpu-present")
    assert f.status is Status.FAIL
    assert "no NVIDIA GPU" in f.title
    assert any("0x10de" in e and "23 PCI devices" in e for e in f.evidence)
    assert f.fix and "machine with an NVIDIA GPU" in f.fix.text


def test_gpu_present_fail_says_when_seen_from_a_container() -> None:
    snap = builders.no_gpu_machine()
    snap.system.container = "docker"
    snap.system.container_evidence = "/.dockerenv exists"
    f = the(snap, "system.gpu-present")
    assert f.status is Status.FAIL
    assert any("as seen from this docker container" in e for e in f.evidence)


@pytest.mark.parametrize(
    ("kind", "evidence", "fix_names"),
    [
        ("docker", "/.dockerenv exists", "docker run --gpus all"),
        ("kubernetes", "KUBERNETES_SERVICE_HOST is set", "nvidia.com/gpu"),
        ("podman", "/run/.containerenv exists", "podman run --device nvidia.com/gpu=all"),
    ],
)
def test_gpu_present_fails_in_a_container_with_a_hidden_pci_bus_and_no_nodes(
    kind: str, evidence: str, fix_names: str
) -> None:
    snap = mb.hidden_bus_container(kind, evidence)
    assert snap.system.pci_scanned and snap.system.pci_device_count == 0
    f = the(snap, "system.gpu-present")
    assert f.status is Status.FAIL
    assert f"No NVIDIA GPU visible in this {kind} container" in f.title
    assert any(evidence in e for e in f.evidence)
    assert "no /dev/nvidia* device nodes" in f.evidence
    assert f.fix and fix_names in f.fix.text


def test_gpu_present_in_a_hidden_bus_container_notes_existing_nodes() -> None:
    snap = mb.hidden_bus_container()
    snap.system.device_nodes = [DeviceNode("/dev/nvidiactl", True, True, True, "crw-rw-rw-")]
    f = the(snap, "system.gpu-present")
    assert f.status is Status.FAIL
    assert "device nodes exist" in f.evidence


def test_gpu_present_from_nvml_only() -> None:
    """A hidden PCI bus, but the driver lists the GPUs: they are there."""
    snap = builders.h100_node(2)
    snap.system.pci_gpus = []
    snap.system.pci_device_count = 0
    f = the(snap, "system.gpu-present")
    assert f.status is Status.PASS
    assert "2 NVIDIA GPUs reported by the driver" in f.title
    assert f.evidence == [
        "GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0)",
        "GPU 1 (NVIDIA H100 80GB HBM3, 00000000:28:00.0)",
    ]


def test_gpu_present_skips_on_wsl_until_the_driver_answers() -> None:
    snap = mb.wsl_machine()
    f = the(snap, "system.gpu-present")
    assert f.status is Status.SKIP
    assert "WSL2" in f.title
    # ... and nothing on the Linux side (kernel module, /dev nodes) is held against WSL
    findings = {x.id: x for x in run_checks(snap)}
    assert findings["driver.kernel-module"].status is Status.SKIP
    assert "driver.device-nodes" not in findings
    assert "driver.uvm" not in findings


def test_gpu_present_on_wsl_with_a_working_driver_passes() -> None:
    snap = builders.workstation()
    snap.system.wsl = True
    snap.system.pci_gpus = []
    snap.system.pci_device_count = 0
    f = the(snap, "system.gpu-present")
    assert f.status is Status.PASS
    assert "reported by the driver" in f.title
    assert f.evidence == ["GPU 0 (NVIDIA GeForce RTX 3060, 00000000:01:00.0)"]


def test_gpu_present_skips_when_the_pci_bus_cannot_be_read() -> None:
    snap = builders.no_gpu_machine()
    snap.system.pci_scanned = False
    snap.system.pci_device_count = 0
    f = the(snap, "system.gpu-present")
    assert f.status is Status.SKIP
    assert "/sys/bus/pci" in f.title


# --- the no-GPU machine as a whole -------------------------------------------------------------


def test_no_gpu_machine_first_failure_is_gpu_present_and_nothing_else_fails() -> None:
    findings = run_checks(builders.no_gpu_machine())
    failed = [f for f in findings if f.status is Status.FAIL]
    assert failed, "a machine without a GPU must fail"
    assert failed[0].id == "system.gpu-present"
    assert "no NVIDIA GPU" in failed[0].title
    assert [f.id for f in failed] == ["system.gpu-present"]
    assert not [f for f in findings if f.status in (Status.WARN, Status.ERROR)]
    driver = [f for f in findings if f.id.startswith("driver.")]
    assert {f.id for f in driver} >= {"driver.kernel-module", "driver.nvml"}
    assert all(f.status is Status.SKIP for f in driver), [(f.id, f.status) for f in driver]


def test_no_gpu_machine_reports_no_gpu_health_and_no_cuda_failure() -> None:
    ids = {f.id: f for f in run_checks(builders.no_gpu_machine())}
    assert not [i for i in ids if i.startswith("gpus.")]
    assert "cuda.driver-api" not in ids
    # nvcc 13.0 with no driver: worth knowing, not a problem
    assert ids["cuda.toolkit"].status is Status.INFO
    assert "no driver to run it" in ids["cuda.toolkit"].title


# --- system.container-gpu-access ---------------------------------------------------------------


def test_container_without_the_host_gpu_fails_naming_docker_run_gpus_all() -> None:
    snap = mb.container_without_gpu("docker")
    f = the(snap, "system.container-gpu-access")
    assert f.status is Status.FAIL
    assert "docker container" in f.title
    assert any("1 NVIDIA GPU(s) on the host's PCI bus" in e for e in f.evidence)
    assert f.fix and "docker run --gpus all" in f.fix.text
    assert "nvidia-ctk runtime configure" in f.fix.text
    # the GPU itself is there (host bus): gpu-present does not blame the machine
    assert the(snap, "system.gpu-present").status is Status.PASS


def test_kubernetes_pod_without_the_gpu_fails_naming_the_resource() -> None:
    snap = mb.container_without_gpu("kubernetes", "/proc/1/cgroup mentions kubepods")
    f = the(snap, "system.container-gpu-access")
    assert f.status is Status.FAIL
    assert "kubernetes container" in f.title
    assert f.fix and "nvidia.com/gpu" in f.fix.text
    assert "docker run" not in f.fix.text


def test_container_with_the_gpu_passed_in_passes() -> None:
    snap = builders.h100_node(1)
    snap.system.container = "docker"
    snap.system.container_evidence = "/.dockerenv exists"
    f = the(snap, "system.container-gpu-access")
    assert f.status is Status.PASS
    assert "docker container with GPU access" in f.title


def test_container_with_nodes_but_no_driver_library_is_given_the_gpu() -> None:
    """Device nodes are there: the GPU is passed in (the library is driver.nvml's business)."""
    snap = mb.container_without_gpu("docker")
    snap.system.device_nodes = builders.h100_node(1).system.device_nodes
    assert the(snap, "system.container-gpu-access").status is Status.PASS


def test_container_access_not_reported_outside_containers_or_without_a_gpu() -> None:
    assert finding(builders.h100_node(1), "system.container-gpu-access") is None
    snap = builders.no_gpu_machine()
    snap.system.container = "docker"
    assert finding(snap, "system.container-gpu-access") is None


# --- system.nouveau ----------------------------------------------------------------------------


def test_nouveau_bound_to_the_gpu_fails_with_the_blacklist_fix() -> None:
    snap = mb.module_not_loaded(builders.workstation())
    snap.system.nouveau_loaded = True
    snap.system.pci_gpus[0].driver = "nouveau"
    f = the(snap, "system.nouveau")
    assert f.status is Status.FAIL
    assert "nouveau" in f.title
    assert "the nouveau kernel module is loaded" in f.evidence
    assert "0000:01:00.0 is bound to nouveau" in f.evidence
    assert f.fix and "blacklist nouveau" in f.fix.text and "modeset=0" in f.fix.text
    assert "update-initramfs" in f.fix.text
    # and driver.kernel-module points at it as a cause
    km = the(snap, "driver.kernel-module")
    assert km.status is Status.FAIL
    assert km.fix and "nouveau holds the GPU" in km.fix.text


def test_nouveau_loaded_but_gpu_on_nvidia_still_fails() -> None:
    snap = builders.workstation()
    snap.system.nouveau_loaded = True
    f = the(snap, "system.nouveau")
    assert f.status is Status.FAIL
    assert f.evidence == ["the nouveau kernel module is loaded"]


def test_nouveau_not_loaded_passes_and_without_a_gpu_says_nothing() -> None:
    f = the(builders.workstation(), "system.nouveau")
    assert f.status is Status.PASS
    assert finding(builders.no_gpu_machine(), "system.nouveau") is None


def test_nouveau_unknown_is_not_reported_as_not_loaded() -> None:
    snap = builders.workstation()
    snap.system.nouveau_loaded = None
    f = finding(snap, "system.nouveau")
    assert f is None or f.status is not Status.PASS
