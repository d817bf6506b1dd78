"""Driver checks: the /dev/nvidia* nodes, nvidia-uvm and persistence mode, and a fix for every
driver problem."""

from __future__ import annotations

import pytest
from support import builders
from support import more_builders as mb
from support.evaluate import finding, run_checks, text, the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import DeviceNode, NvmlError, PciDevice, Snapshot

# --- driver.device-nodes -----------------------------------------------------------------------


def test_device_nodes_usable_passes_counting_gpu_nodes() -> None:
    f = the(builders.h100_node(4), "driver.device-nodes")
    assert f.status is Status.PASS
    assert f.title.startswith("4 GPU device node(s)")


def test_missing_nvidiactl_fails_with_nvidia_modprobe() -> None:
    snap = builders.h100_node(2)
    for n in snap.system.device_nodes:
        if n.path == "/dev/nvidiactl":
            n.exists = False
    f = the(snap, "driver.device-nodes")
    assert f.status is Status.FAIL
    assert f.evidence == ["/dev/nvidiactl missing"]
    assert f.fix and "nvidia-modprobe" in f.fix.text


def test_missing_gpu_nodes_fail() -> None:
    snap = builders.h100_node(2)
    snap.system.device_nodes = [
        n for n in snap.system.device_nodes if not n.path[len("/dev/nvidia") :].isdigit()
    ]
    f = the(snap, "driver.device-nodes")
    assert f.status is Status.FAIL
    assert "/dev/nvidia0 ... missing" in f.evidence


def test_missing_nodes_in_a_container_get_the_container_fix() -> None:
    snap = builders.h100_node(1)
    snap.system.container = "kubernetes"
    snap.system.device_nodes = [DeviceNode(n.path, False) for n in snap.system.device_nodes]
    f = the(snap, "driver.device-nodes")
    assert f.status is Status.FAIL
    assert f.fix and "nvidia.com/gpu" in f.fix.text


def test_device_nodes_without_permission_name_their_group() -> None:
    snap = builders.h100_node(2)
    for n in snap.system.device_nodes:
        if n.path in ("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"):
            n.readable = n.writable = False
            n.mode = "crw-rw----"
            n.owner_group = "gpu"
    f = the(snap, "driver.device-nodes")
    assert f.status is Status.FAIL
    assert "/dev/nvidia0 crw-rw---- group gpu" in f.evidence
    assert f.fix and f.fix.commands[0] == "sudo usermod -aG gpu $USER"


def test_device_nodes_not_judged_without_the_module() -> None:
    assert finding(mb.module_not_loaded(builders.h100_node(1)), "driver.device-nodes") is None
    assert finding(builders.no_gpu_machine(), "driver.device-nodes") is None


# --- driver.uvm --------------------------------------------------------------------------------


def test_uvm_present_passes() -> None:
    assert the(builders.h100_node(1), "driver.uvm").status is Status.PASS


def _without_uvm(snap: Snapshot) -> Snapshot:
    for node in snap.system.device_nodes:
        if node.path.startswith("/dev/nvidia-uvm"):
            node.exists = node.readable = node.writable = False
    snap.system.nvidia_modules = [m for m in snap.system.nvidia_modules if m != "nvidia_uvm"]
    snap.cuda.driver.init_result = mb.CU_RESULTS["CUDA_ERROR_UNKNOWN"]
    snap.cuda.driver.init_error_name = "CUDA_ERROR_UNKNOWN"
    snap.cuda.driver.device_count = None
    snap.cuda.driver.devices = []
    return snap


def test_uvm_missing_fails_with_modprobe_nvidia_uvm() -> None:
    f = the(_without_uvm(builders.h100_node(1)), "driver.uvm")
    assert f.status is Status.FAIL
    assert "/dev/nvidia-uvm does not exist" in f.evidence
    assert "nvidia_uvm module not loaded" in f.evidence
    assert "cuInit: CUDA_ERROR_UNKNOWN" in f.evidence
    assert f.fix and "sudo modprobe nvidia-uvm" in f.fix.text


def test_uvm_node_missing_but_cuinit_working_passes() -> None:
    snap = builders.h100_node(1)
    for node in snap.system.device_nodes:
        if node.path == "/dev/nvidia-uvm":
            node.exists = False
    assert the(snap, "driver.uvm").status is Status.PASS


def test_uvm_not_set_up_and_cuinit_not_tried_warns() -> None:
    """Read-only: with no /dev/nvidia-uvm the probe does not call cuInit (it would load the
    module); the first CUDA program may still set it up through nvidia-modprobe."""
    snap = _without_uvm(builders.h100_node(1))
    snap.cuda.driver.init_result = None
    snap.cuda.driver.init_error_name = None
    snap.cuda.driver.init_skipped_reason = "cuInit not called: /dev/nvidia-uvm does not exist yet"
    f = the(snap, "driver.uvm")
    assert f.status is Status.WARN
    assert "nvidia-modprobe" in f.title
    assert f.fix and "sudo modprobe nvidia-uvm" in f.fix.text


def test_uvm_missing_in_a_container_gets_the_container_fix() -> None:
    snap = _without_uvm(builders.h100_node(1))
    snap.system.container = "docker"
    f = the(snap, "driver.uvm")
    assert f.status is Status.FAIL
    assert f.fix and "docker run --gpus all" in f.fix.text


def test_uvm_not_judged_without_the_module() -> None:
    assert finding(mb.module_not_loaded(builders.h100_node(1)), "driver.uvm") is None


# --- driver.persistence-mode -------------------------------------------------------------------


def test_persistence_mode_on_everywhere_passes() -> None:
    f = the(builders.h100_node(8), "driver.persistence-mode")
    assert f.status is Status.PASS
    assert "8 data-centre GPU(s)" in f.title


def test_persistence_mode_off_on_a_data_centre_gpu_warns_naming_it() -> None:
    snap = builders.h100_node(4)
    snap.nvml.gpus[2].persistence_mode = False
    f = the(snap, "driver.persistence-mode")
    assert f.status is Status.WARN
    assert "off on 1 data-centre GPU(s)" in f.title
    assert f.evidence == ["GPU 2 (NVIDIA H100 80GB HBM3, 00000000:38:00.0)"]
    assert f.fix and "nvidia-persistenced" in f.fix.text and "nvidia-smi -i 2 -pm 1" in f.fix.text


def test_persistence_mode_off_on_a_tesla_t4_warns() -> None:
    f = the(mb.t4_vm(), "driver.persistence-mode")
    assert f.status is Status.WARN
    assert "Tesla T4" in f.evidence[0]


def test_persistence_mode_not_judged_on_a_consumer_gpu() -> None:
    snap = builders.workstation()
    assert snap.nvml.gpus[0].persistence_mode is False
    assert finding(snap, "driver.persistence-mode") is None


def test_persistence_mode_not_judged_on_windows() -> None:
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].persistence_mode = False
    snap.system.os = "Windows"
    assert finding(snap, "driver.persistence-mode") is None


def test_persistence_mode_unknown_is_not_reported_as_on() -> None:
    snap = builders.h100_node(2)
    for g in snap.nvml.gpus:
        g.persistence_mode = None
        g.field_errors["persistence_mode"] = "NotSupported"
    f = finding(snap, "driver.persistence-mode")
    assert f is None or f.status is not Status.PASS


# --- every problem has a fix -------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["DriverNotLoaded", "LibRmVersionMismatch", "NoPermission", "GpuIsLost"]
)
def test_every_nvml_init_failure_has_a_fix_everywhere(name: str) -> None:
    snap = mb.nvml_fails(builders.h100_node(2), name)
    findings = run_checks(snap)  # raises on a warn/fail without a fix
    nvml = next(f for f in findings if f.id == "driver.nvml")
    assert nvml.status is Status.FAIL
    assert name in text(nvml)


def test_pci_device_bound_to_nouveau_and_module_unloaded_is_fully_explained() -> None:
    snap = mb.module_not_loaded(builders.workstation())
    snap.system.pci_gpus.append(
        PciDevice("0000:02:00.0", "0x10de", "0x2684", "0x030000", name=None, driver="nouveau")
    )
    snap.system.nouveau_loaded = True
    findings = {f.id: f for f in run_checks(snap)}
    assert findings["system.nouveau"].status is Status.FAIL
    assert "0000:02:00.0 is bound to nouveau" in findings["system.nouveau"].evidence
    assert findings["driver.kernel-module"].status is Status.FAIL


@pytest.mark.parametrize(
    ("modules", "unload", "load"),
    [
        # headless server: no nvidia_drm/nvidia_modeset; rmmod of those would fail the chain
        (["nvidia", "nvidia_uvm"], "nvidia_uvm nvidia", "nvidia nvidia_uvm"),
        # GPUDirect RDMA: nvidia_peermem holds nvidia and goes first; it is not reloaded blindly
        (
            ["nvidia", "nvidia_uvm", "nvidia_peermem"],
            "nvidia_peermem nvidia_uvm nvidia",
            "nvidia nvidia_uvm",
        ),
        ([], "nvidia", "nvidia"),
    ],
)
def test_reload_command_unloads_only_what_is_loaded(
    modules: list[str], unload: str, load: str
) -> None:
    from gpucheck.checks.driver.fixes import reload_fix

    assert f"sudo rmmod {unload} && sudo modprobe -a {load}" in reload_fix(modules).commands


def test_nvml_unknown_error_in_a_container_says_recreate_it_and_the_dev_char_fix() -> None:
    # nvidia-container-toolkit#251 / #1227, nvidia-docker#1671: NVML works when the
    # container starts, "Unknown Error" after the host's systemctl daemon-reload.
    snap = builders.h100_node(1)
    snap.system.container, snap.system.container_evidence = "docker", "/.dockerenv exists"
    snap.nvml = type(snap.nvml)(init_error=NvmlError(999, "Unknown", "Unknown Error"))
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "inside this docker container with Unknown Error" in f.title
    assert "container: /.dockerenv exists" in f.evidence
    assert f.fix is not None
    assert f.fix.text.startswith("Recreate the container")
    assert "sudo nvidia-ctk system create-dev-char-symlinks --create-all" in f.fix.commands
    assert "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml" in f.fix.commands
