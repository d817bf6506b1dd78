"""Driver checks: the kernel module and NVML's initialisation (one test per init error the probe
records)."""

from __future__ import annotations

from support import builders
from support import more_builders as mb
from support.evaluate import run_checks, the

from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Status
from gpucheck.model.fix import Tool
from gpucheck.model.snapshot import NvmlError

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
    assert "gpus.ecc-errors" not in ids


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


def test_nvml_binding_missing_names_gpucheck_s_own_interpreter() -> None:
    # Even as the only environment: gpucheck's own pip may not be the `pip` on PATH (pipx).
    snap = builders.h100_node(1)
    snap.environments = [
        PythonEnvironment(python="/opt/my tools/bin/python3", origin="gpucheck", version="3.12.3")
    ]
    snap.nvml = type(snap.nvml)(
        init_error=NvmlError(-1, "BindingMissing", "No module named 'pynvml'")
    )
    f = the(snap, "driver.nvml")
    assert f.fix and [(s.command, s.environment) for s in f.fix.steps] == [
        ("'/opt/my tools/bin/python3' -m pip install nvidia-ml-py", "/opt/my tools/bin/python3")
    ]
