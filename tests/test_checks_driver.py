"""Driver checks: the kernel module, NVML's initialisation (one test per init error the
probe records), the /dev/nvidia* nodes, nvidia-uvm and persistence mode."""

from __future__ import annotations

import builders
import more_builders as mb
import pytest
from more_builders import finding, run_checks, text, the

from gpucheck.model.finding import Status
from gpucheck.model.fix import Tool
from gpucheck.model.snapshot import DeviceNode, NvmlError, PciDevice, Snapshot

# --- driver.kernel-module ----------------------------------------------------------------------


def test_kernel_module_loaded_passes_with_its_version_and_kind() -> None:
    f = the(builders.h100_node(2), "driver.kernel-module")
    assert f.status is Status.PASS
    assert "590.48.01" in f.title
    assert "(open kernel module)" in f.title  # from the banner, not the version
    assert f.evidence == ["modules: nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset"]


def test_proprietary_kernel_module_is_not_called_open() -> None:
    f = the(builders.workstation(), "driver.kernel-module")
    assert f.status is Status.PASS
    assert "570.124.04" in f.title
    assert "open" not in f.title


def test_kernel_module_not_loaded_with_a_gpu_on_the_bus_fails_with_modprobe_and_dkms() -> None:
    snap = mb.module_not_loaded(builders.h100_node(1))
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "not loaded" in f.title
    assert "GH100 [H100 SXM5 80GB] at 0000:18:00.0: no driver bound" in f.evidence
    # the installed user-space driver's version, read from the library's file name
    assert "the user-space driver 590.48.01 is installed (libnvidia-ml)" in f.evidence
    assert f.fix is not None
    assert "sudo modprobe nvidia" in f.fix.text
    assert "dkms status" in f.fix.text and "dkms autoinstall" in f.fix.text
    assert "mokutil --sb-state" in f.fix.text  # Secure Boot off/unknown: only how to look
    assert "mokutil --import" not in f.fix.text
    assert "Secure Boot is on" not in f.evidence
    assert "ubuntu-drivers" not in f.fix.text  # a driver is installed


def test_kernel_module_not_loaded_with_secure_boot_on_names_mokutil_import() -> None:
    snap = mb.module_not_loaded(builders.h100_node(1))
    snap.system.secure_boot = True
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "Secure Boot is on" in f.evidence
    assert f.fix and "sudo mokutil --import /var/lib/dkms/mok.pub" in f.fix.text


def test_kernel_module_not_loaded_and_no_driver_installed_says_install_one() -> None:
    snap = mb.module_not_loaded(builders.h100_node(1))
    snap.nvml.library_path = None
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert not [e for e in f.evidence if "user-space driver" in e]
    assert f.fix and "sudo ubuntu-drivers install" in f.fix.text


def test_kernel_module_not_loaded_gpu_bound_to_vfio() -> None:
    snap = mb.module_not_loaded(builders.h100_node(1))
    snap.system.pci_gpus[0].driver = "vfio-pci"
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "GH100 [H100 SXM5 80GB] at 0000:18:00.0: bound to vfio-pci" in f.evidence
    assert f.fix and "vfio-pci" in f.fix.text


def test_kernel_module_not_loaded_in_a_container_points_at_the_host() -> None:
    snap = mb.module_not_loaded(builders.h100_node(1))
    snap.system.container = "docker"
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "docker container's host" in f.title
    assert f.fix and "On the host" in f.fix.text and "cannot load kernel modules" in f.fix.text
    assert f.fix.commands == ["sudo modprobe nvidia"]


def test_kernel_module_unknown_when_proc_modules_unreadable() -> None:
    snap = mb.module_not_loaded(builders.h100_node(1))
    snap.system.nvidia_module_loaded = None
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.SKIP
    assert "/proc/modules" in f.title


def test_kernel_module_skips_without_a_gpu_on_windows_and_on_wsl() -> None:
    assert the(builders.no_gpu_machine(), "driver.kernel-module").status is Status.SKIP
    win = builders.workstation()
    win.system.os = "Windows"
    f = the(win, "driver.kernel-module")
    assert f.status is Status.SKIP
    assert "Windows" in f.title
    f = the(mb.wsl_machine(), "driver.kernel-module")
    assert f.status is Status.SKIP
    assert "WSL2" in f.title


# --- driver.nvml -------------------------------------------------------------------------------


def test_nvml_working_passes_with_driver_and_cuda_version() -> None:
    f = the(builders.h100_node(8), "driver.nvml")
    assert f.status is Status.PASS
    # 13010 from nvmlSystemGetCudaDriverVersion is CUDA 13.1
    assert f.title == "Driver 590.48.01, supports CUDA 13.1, 8 GPU(s)"


def test_nvml_and_kernel_module_versions_differ_warns() -> None:
    snap = builders.h100_node(1)
    snap.system.nvidia_module_version = "580.95.05"
    f = the(snap, "driver.nvml")
    assert f.status is Status.WARN
    assert "kernel module 580.95.05, NVML 590.48.01" in f.evidence
    assert (
        f.fix
        and (
            "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && "
            "sudo modprobe -a nvidia nvidia_modeset nvidia_drm nvidia_uvm"
        )
        in f.fix.text
    )


def test_nvml_driver_not_loaded_fails_with_modprobe() -> None:
    snap = mb.nvml_fails(builders.h100_node(1), "DriverNotLoaded")
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "not running" in f.title
    assert f.evidence[0] == "nvmlInit: DriverNotLoaded (Driver Not Loaded)"
    assert f.fix and "sudo modprobe nvidia" in f.fix.text


def test_nvml_driver_not_loaded_without_a_gpu_skips() -> None:
    snap = mb.nvml_fails(builders.no_gpu_machine(), "DriverNotLoaded")
    f = the(snap, "driver.nvml")
    assert f.status is Status.SKIP


def test_nvml_lib_rm_version_mismatch_names_both_versions() -> None:
    """The classic driver update without a reboot: module 535, library 550."""
    snap = mb.nvml_fails(
        mb.driver_535_node(1),
        "LibRmVersionMismatch",
        library_path="/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14",
    )
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "mismatch" in f.title
    assert "kernel module 535.104.05, libnvidia-ml 550.54.14" in f.evidence
    assert f.fix and "Reboot" in f.fix.text and "sudo rmmod nvidia_uvm" in f.fix.text


def test_a_mismatch_whose_module_on_disk_matches_the_libraries_says_reboot() -> None:
    snap = mb.nvml_fails(
        mb.driver_535_node(1),
        "LibRmVersionMismatch",
        library_path="/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14",
    )
    snap.system.nvidia_module_file = "/lib/modules/5.15.0-185-generic/updates/dkms/nvidia.ko"
    snap.system.nvidia_module_file_version = "550.54.14"
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "the module on disk matches" in f.title
    assert f.fix and f.fix.text.startswith("Reboot")
    assert "apt" not in f.fix.text


def test_a_mismatch_that_survives_reboot_gives_the_package_fix() -> None:
    # illinois#70 (Debian bookworm/sid): module 520.56.06 loads again after the reboot, the
    # user space is 525.85.12; fixed with apt install --fix-broken.
    snap = mb.nvml_fails(
        builders.workstation(),
        "LibRmVersionMismatch",
        library_path="/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.525.85.12",
    )
    snap.system.os_release = "Debian GNU/Linux bookworm/sid"
    snap.system.nvidia_module_version = "520.56.06"
    snap.system.nvidia_module_file = "/lib/modules/6.1.0-3-amd64/updates/dkms/nvidia.ko"
    snap.system.nvidia_module_file_version = "520.56.06"
    snap.system.dkms_nvidia_versions = ["520.56.06"]
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "a reboot will not fix" in f.title
    assert "the module the next boot loads: 520.56.06 (" in " ".join(f.evidence)
    assert "DKMS holds nvidia 520.56.06" in f.evidence
    assert f.fix is not None
    assert f.fix.commands[0] == "sudo apt install --fix-broken"
    assert "Reboot;" not in f.fix.text
    assert f.subjects.paths == ["/lib/modules/6.1.0-3-amd64/updates/dkms/nvidia.ko"]
    snap.system.os_release = "Ubuntu 22.04.5 LTS"
    f = the(snap, "driver.nvml")
    assert f.fix and "sudo apt install --reinstall nvidia-driver-525" in f.fix.commands


def test_a_mismatch_with_the_module_on_disk_unknown_says_both() -> None:
    snap = mb.nvml_fails(
        mb.driver_535_node(1),
        "LibRmVersionMismatch",
        library_path="/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14",
    )
    f = the(snap, "driver.nvml")
    assert f.fix and "if the mismatch survives a reboot" in f.fix.text
    assert "sudo apt install --reinstall nvidia-driver-550" in f.fix.commands


def test_nvml_no_permission_points_at_the_device_nodes() -> None:
    snap = mb.nvml_fails(builders.h100_node(1), "NoPermission")
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "permission" in f.title.lower()
    assert f.fix and "/dev/nvidia*" in f.fix.text and "driver.device-nodes" in f.fix.text


def test_nvml_library_not_found_with_module_loaded_names_the_branch_packages() -> None:
    snap = mb.nvml_fails(mb.driver_535_node(1), "LibraryNotFound")
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "libnvidia-ml.so.1" in f.title
    assert f.fix is not None
    # the branch is the kernel module's major version
    assert "libnvidia-compute-535" in f.fix.text and "nvidia-utils-535" in f.fix.text
    assert "535.104.05" in f.fix.text


def test_nvml_library_not_found_without_module_version_installs_a_driver() -> None:
    snap = mb.nvml_fails(mb.module_not_loaded(builders.h100_node(1)), "LibraryNotFound")
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert f.fix and "ubuntu-drivers install" in f.fix.text
    assert "libnvidia-compute-" not in f.fix.text


def test_nvml_library_not_found_in_a_container_names_the_runtime_fix() -> None:
    snap = mb.container_without_gpu("docker")
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert f.fix and "docker run --gpus all" in f.fix.text
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in f.fix.text


def test_nvml_library_not_found_skips_without_a_gpu_or_in_a_bare_container() -> None:
    snap = mb.nvml_fails(builders.no_gpu_machine(), "LibraryNotFound")
    assert the(snap, "driver.nvml").status is Status.SKIP
    f = the(mb.hidden_bus_container(), "driver.nvml")
    assert f.status is Status.SKIP
    assert "container" in f.title


def test_nvml_gpu_is_lost_fails_with_reset() -> None:
    snap = mb.nvml_fails(builders.h100_node(8), "GpuIsLost")
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "fallen off the bus" in f.title
    assert f.evidence[0] == "nvmlInit: GpuIsLost (GPU is lost)"
    assert f.fix and "nvidia-smi -r" in f.fix.text and "xid" in f.fix.text


def test_nvml_binding_missing_says_pip_install() -> None:
    snap = builders.h100_node(1)
    snap.nvml = type(snap.nvml)(
        init_error=NvmlError(-1, "BindingMissing", "No module named 'pynvml'")
    )
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert f.fix and [(s.command, s.tool) for s in f.fix.steps] == [
        ("pip install nvidia-ml-py", Tool.PIP)
    ]
    assert "in the environment gpucheck runs from" in f.fix.text


def test_nvml_unknown_init_error_fails_with_its_name() -> None:
    snap = builders.h100_node(1)
    snap.nvml = type(snap.nvml)(init_error=NvmlError(999, "Unknown", "Unknown Error"))
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "Unknown" in f.title
    assert f.fix and "Xid" in f.fix.text


def test_nvml_probe_timeout_fails_mentioning_the_time() -> None:
    snap = mb.probe(builders.h100_node(8), "nvml", "timeout", "timed out after 10 s in nvmlInit")
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "timed out after 10 s" in f.title
    assert f.fix and "nvidia-smi -pm 1" in f.fix.text and "xid" in f.fix.text
    # the GPU facts of a timed-out probe are not trusted: no per-GPU findings either
    ids = {x.id for x in run_checks(snap)}
    assert "gpu.ecc-errors" not in ids


def test_nvml_probe_crashed_with_facts_warns() -> None:
    snap = mb.probe(
        builders.h100_node(2),
        "nvml",
        "crashed",
        "crashed with SIGSEGV in nvmlDeviceGetMemoryErrorCounter",
    )
    f = the(snap, "driver.nvml")
    assert f.status is Status.WARN
    assert any("SIGSEGV" in e for e in f.evidence)
    assert f.fix and "Update the NVIDIA driver" in f.fix.text


def test_nvml_probe_crashed_without_facts_fails() -> None:
    snap = mb.nvml_fails(builders.h100_node(1), "DriverNotLoaded")
    snap.nvml.init_error = None
    mb.probe(snap, "nvml", "crashed", "crashed with SIGSEGV in nvmlInit")
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "SIGSEGV" in f.title


def test_nvml_not_tried_with_the_module_unloaded_skips() -> None:
    f = the(mb.module_not_loaded(builders.h100_node(1)), "driver.nvml")
    assert f.status is Status.SKIP
    assert "kernel module is not loaded" in f.title


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
    from gpucheck.checks.driver_fixes import reload_fix

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
