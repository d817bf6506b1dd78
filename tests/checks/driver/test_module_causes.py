"""driver.kernel-module names the cause the facts show: a branch that no longer drives the GPU,
the wrong module flavour, a signing key the kernel refuses, a DKMS build that failed for the
running kernel; and the fix acts on that cause."""

from __future__ import annotations

from support import builders
from support import more_builders as mb
from support.evaluate import the

from gpucheck.model.finding import Status
from gpucheck.model.install_state import DkmsBuild, DkmsFailure, InstallStateFacts
from gpucheck.model.snapshot import Snapshot

# NixOS/nixos-hardware#1880's lines (a GTX 1050 under 595.71.05), as the probe keeps them.
LEGACY_580 = [
    "NVRM: The NVIDIA NVIDIA GeForce GTX 1050 GPU installed in this system is",
    "NVRM:  supported through the NVIDIA 580.xx Legacy drivers. Please",
    "NVRM:  visit http://www.nvidia.com/object/unix.html for more",
    "NVRM:  information.  The 595.71.05 NVIDIA driver will ignore",
    "NVRM:  this GPU.  Continuing probe...",
    "NVRM: No NVIDIA GPU found.",
]
# negativo17/nvidia-driver#158's lines (a GT 1030 under the open 560.31 module).
NO_GSP = [
    "NVRM: The NVIDIA GPU 0000:09:00.0 (PCI ID: 10de:1d01)",
    "NVRM: installed in this system is not supported by open",
    "NVRM: nvidia.ko because it does not include the required GPU",
    "NVRM: System Processor (GSP).",
    "NVRM: The NVIDIA probe routine failed for 1 device(s).",
    "NVRM: None of the NVIDIA devices were initialized.",
]
NEEDS_OPEN = [
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.105.08  Wed Oct 29 23:15:11 UTC 2025",
    "NVRM: The NVIDIA GPU 0000:02:00.0 (PCI ID: 10de:2c58)",
    "NVRM: installed in this system requires use of the NVIDIA open kernel modules.",
    "NVRM: GPU 0000:02:00.0: RmInitAdapter failed! (0x22:0x56:884)",
]


def pascal_not_loaded(name: str, driver: str) -> Snapshot:
    snap = mb.module_not_loaded(builders.workstation())
    snap.system.pci_gpus[0].name = name
    snap.nvml.library_path = f"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{driver}"
    snap.system.kernel_log_nvrm = []
    return snap


def test_a_legacy_gpu_named_by_nvrm_gets_its_legacy_branch() -> None:
    snap = pascal_not_loaded("GP107 [GeForce GTX 1050]", "595.71.05")
    snap.system.kernel_log_nvrm = LEGACY_580
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "595.71.05 no longer supports this GPU (NVIDIA GeForce GTX 1050)" in f.title
    assert "580.xx legacy branch" in f.title
    assert f.fix is not None
    assert "sudo apt install nvidia-driver-580" in f.fix.text
    assert "sudo apt-mark hold nvidia-driver-580" in f.fix.text
    assert "NVIDIA-Linux-x86_64-580.126.18.run" in f.fix.text
    assert "dkms autoinstall" not in f.fix.text
    assert "modprobe" not in f.fix.text


def test_without_a_kernel_log_the_architecture_decides_the_legacy_branch() -> None:
    snap = pascal_not_loaded("GP107 [GeForce GTX 1050]", "590.48.01")
    snap.system.kernel_log_nvrm = None
    snap.system.kernel_log_error = "the kernel log is not readable by this user"
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "580.xx legacy branch" in f.title
    assert any("is a Pascal GPU (compat/gpus.toml)" in e for e in f.evidence)


def test_a_pascal_gpu_on_its_last_branch_is_not_called_legacy() -> None:
    snap = pascal_not_loaded("GP107 [GeForce GTX 1050]", "580.95.05")
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "legacy" not in f.title
    assert f.fix is not None and "sudo modprobe nvidia" in f.fix.text


def test_nixos_gets_its_legacy_package_set() -> None:
    snap = pascal_not_loaded("GP107 [GeForce GTX 1050]", "595.71.05")
    snap.system.os_release = "NixOS 26.05 (Yarara)"
    snap.system.kernel_log_nvrm = LEGACY_580
    f = the(snap, "driver.kernel-module")
    assert f.fix is not None
    assert "nvidiaPackages.legacy_580" in f.fix.text
    assert "apt" not in f.fix.text


def test_the_open_module_on_a_gpu_without_gsp_switches_to_the_proprietary_one() -> None:
    snap = pascal_not_loaded("GP108 [GeForce GT 1030]", "560.31.02")
    snap.system.os_release = "Fedora Linux 40 (Workstation Edition)"
    snap.system.kernel_log_nvrm = NO_GSP
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "needs the proprietary module" in f.title
    assert f.fix is not None
    assert "sudo dnf install akmod-nvidia" in f.fix.text
    assert "--kernel-module-type=proprietary" in f.fix.text
    assert "akmod-nvidia-open" in f.fix.text  # named as the package it replaces


def test_no_gsp_on_a_branch_past_the_gpu_names_the_legacy_branch_instead() -> None:
    # The proprietary module of 590 does not drive Pascal either: only 580 does.
    snap = pascal_not_loaded("GP108 [GeForce GT 1030]", "590.48.01")
    snap.system.kernel_log_nvrm = NO_GSP
    f = the(snap, "driver.kernel-module")
    assert "580.xx legacy branch" in f.title
    assert f.fix is not None and "nvidia-driver-580" in f.fix.text


def test_a_loaded_proprietary_module_that_ignores_a_blackwell_gpu_fails_with_the_open_one() -> None:
    snap = builders.workstation()
    snap.nvml.device_count = 0
    snap.nvml.gpus = []
    snap.system.kernel_log_nvrm = NEEDS_OPEN
    snap.system.nvidia_module_version = "580.105.08"
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "loaded but drives no GPU" in f.title
    assert "needs the open kernel module" in f.title
    assert f.fix is not None
    assert "sudo apt install nvidia-driver-580-open" in f.fix.text
    assert "--kernel-module-type=open" in f.fix.text


def test_an_ignored_second_gpu_beside_a_driven_one_is_a_warning() -> None:
    snap = builders.workstation()
    snap.system.kernel_log_nvrm = LEGACY_580
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.WARN
    assert "drives 1 other GPU(s)" in f.title


def test_ordinary_nvrm_lines_leave_a_loaded_module_passing() -> None:
    snap = builders.workstation()
    snap.system.kernel_log_nvrm = [
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.124.04  Fri Feb 21 20:37:25 UTC 2025",
        "NVRM: Xid (PCI:0000:01:00): 31, pid=4242, name=python, Ch 00000010",
    ]
    assert the(snap, "driver.kernel-module").status is Status.PASS


def test_a_refused_signing_key_asks_which_fact_and_acts_on_each() -> None:
    snap = mb.module_not_loaded(builders.workstation())
    snap.system.secure_boot = True
    snap.install_state = InstallStateFacts(
        module_log=["Loading of module with unavailable key is rejected"],
        signing_keys=["/var/lib/shim-signed/mok/MOK.der"],
    )
    f = the(snap, "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "signature" in f.title
    assert "kernel log: Loading of module with unavailable key is rejected" in f.evidence
    assert f.fix is not None
    assert "mokutil --test-key /var/lib/shim-signed/mok/MOK.der" in f.fix.text
    assert "sudo mokutil --import /var/lib/shim-signed/mok/MOK.der" in f.fix.text
    assert "sudo mokutil --trust-mok" in f.fix.text


def dkms_390(running: str) -> Snapshot:
    # NVIDIA/open-gpu-kernel-modules#526: 390.157 built for 6.3.9-zen1-1-zen, failing for 6.4.1.
    snap = mb.module_not_loaded(builders.workstation())
    snap.system.kernel = running
    snap.install_state = InstallStateFacts(
        dkms_builds=[
            DkmsBuild("390.157", "6.3.9-zen1-1-zen", "x86_64", True),
            DkmsBuild("390.157", "6.4.1-zen1-1-zen", "x86_64", False),
        ],
        dkms_failures=[
            DkmsFailure(
                "390.157",
                "/var/lib/dkms/nvidia/390.157/build/make.log",
                "6.4.1-zen1-1-zen",
                ["make[1]: *** [Makefile:2024: /var/lib/dkms/nvidia/390.157/build] Error 2"],
            )
        ],
    )
    return snap


def test_a_dkms_build_that_failed_for_the_running_kernel_names_the_kernels_it_built_for() -> None:
    f = the(dkms_390("6.4.1-zen1-1-zen"), "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "not built for the running kernel 6.4.1-zen1-1-zen" in f.title
    assert "built for: 6.3.9-zen1-1-zen" in f.evidence
    assert f.fix is not None
    assert "Boot a kernel driver 390.157 builds for (6.3.9-zen1-1-zen)" in f.fix.text
    assert "dkms autoinstall" not in f.fix.text  # the same build fails the same way


def test_a_module_built_for_the_running_kernel_is_not_blamed_on_dkms() -> None:
    f = the(dkms_390("6.3.9-zen1-1-zen"), "driver.kernel-module")
    assert f.status is Status.FAIL
    assert "DKMS failed" not in f.title


def test_missing_headers_are_installed_before_anything_else() -> None:
    snap = dkms_390("6.4.1-zen1-1-zen")
    assert snap.install_state is not None
    snap.install_state.dkms_failures[0].errors = [
        "Error! Your kernel headers for kernel 6.4.1-zen1-1-zen cannot be found."
    ]
    f = the(snap, "driver.kernel-module")
    assert f.fix is not None
    assert f.fix.steps[0].command == (
        "sudo apt install linux-headers-6.4.1-zen1-1-zen && sudo dkms autoinstall"
    )


def test_without_the_deciding_facts_the_fix_says_how_to_read_them() -> None:
    snap = mb.module_not_loaded(builders.h100_node(1))
    snap.system.kernel_log_nvrm = None
    f = the(snap, "driver.kernel-module")
    assert f.fix is not None
    assert "sudo dmesg | grep -iE 'nvrm|nvidia|key'" in f.fix.text
    assert "dkms status; ls /lib/modules/$(uname -r)/updates" in f.fix.text


def test_a_legacy_branch_that_fails_on_a_new_kernel_is_not_told_to_upgrade() -> None:
    # 390.157 is Fermi's last branch: no newer one drives a GT 540M.
    f = the(dkms_390("6.4.1-zen1-1-zen"), "driver.kernel-module")
    assert "390.157 is the 390.xx legacy branch, the last for GF1xx Fermi GPUs" in f.evidence
    assert f.fix is not None
    assert "newer than 390.157" not in f.fix.text
    assert "long-term-support kernel" in f.fix.text


def test_a_current_branch_failing_on_a_new_kernel_is_told_to_move_to_a_newer_branch() -> None:
    # Frogging-Family/nvidia-all#379: 580.119.02 fails on kernel 7.0.9; an RTX 3060 (Ampere)
    # is driven by branches after 580, so 580's legacy status is not this GPU's.
    snap = dkms_390("7.0.9-1-cachyos")
    assert snap.install_state is not None
    snap.install_state.dkms_builds = [
        DkmsBuild("580.119.02", "6.18.32-1-cachyos-lts", "x86_64", True)
    ]
    snap.install_state.dkms_failures = [
        DkmsFailure(
            "580.119.02", "/var/lib/dkms/nvidia/580.119.02/build/make.log", "7.0.9-1-cachyos"
        )
    ]
    f = the(snap, "driver.kernel-module")
    assert f.fix is not None
    assert "newer than 580.119.02 that supports kernel 7.0.9-1-cachyos" in f.fix.text
    assert "6.18.32-1-cachyos-lts" in f.fix.text


def test_a_signing_key_path_from_the_snapshot_is_one_quoted_word() -> None:
    """A key path holding shell syntax (a snapshot is data) stays one word of each command."""
    snap = mb.module_not_loaded(builders.workstation())
    snap.system.secure_boot = True
    snap.install_state = InstallStateFacts(
        module_log=["Loading of module with unavailable key is rejected"],
        signing_keys=["/var/lib/x;touch PWNED/MOK.der"],
    )
    f = the(snap, "driver.kernel-module")
    assert f.fix is not None
    commands = [s.command for s in f.fix.steps]
    assert "mokutil --test-key '/var/lib/x;touch PWNED/MOK.der'" in commands
    assert "sudo mokutil --import '/var/lib/x;touch PWNED/MOK.der'" in commands
