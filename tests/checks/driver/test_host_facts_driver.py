"""The driver's user space against the running kernel module, both ways:
user space older than the module is left behind (install the module's version; a reboot does
not help), newer is an upgrade awaiting a reboot; a libcuda mismatch (cuInit 803) is blamed on
a cuda-compat package only when the libcuda loaded is that package's."""

from __future__ import annotations

from support import builders
from support import more_builders as mb
from support.evaluate import the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import CudaDriverFacts, Snapshot


def test_nvml_older_than_the_running_module_installs_the_module_s_user_space() -> None:
    # tinygrad/open-gpu-kernel-modules#47: NVIDIA-Linux-x86_64-570.124.04.run
    # --no-kernel-modules, then the 570.124.06 p2p modules: "Failed to initialize NVML:
    # Driver/library version mismatch, NVML library version: 570.124"; fixed by installing
    # 570.124.06's user space.
    snap = mb.nvml_fails(
        builders.workstation(),
        "LibRmVersionMismatch",
        library_path="/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.124.04",
    )
    snap.system.os_release = "Ubuntu 22.04.5 LTS"
    snap.system.nvidia_module_version = "570.124.06"
    f = the(snap, "driver.nvml")
    assert f.status is Status.FAIL
    assert "user-space driver (570.124.04) is older than the running kernel module" in f.title
    assert "reboot will not fix" in f.title
    assert f.fix is not None
    assert f.fix.commands == [
        "sudo apt install libnvidia-compute-570 nvidia-utils-570",
        "sudo sh NVIDIA-Linux-x86_64-570.124.06.run --no-kernel-modules",
    ]
    assert [c.name for s in f.fix.steps for c in s.changes] == [
        "libnvidia-compute-570",
        "nvidia-utils-570",
    ]


def test_nvml_newer_than_the_module_still_says_reboot() -> None:
    snap = mb.nvml_fails(
        mb.driver_535_node(1),
        "LibRmVersionMismatch",
        library_path="/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14",
    )
    f = the(snap, "driver.nvml")
    assert f.fix and f.fix.text.startswith("Reboot")


def _cuinit_803(library_path: str, module: str = "570.124.06") -> Snapshot:
    snap = builders.h100_node(1)
    snap.system.os_release = "Ubuntu 22.04.5 LTS"
    snap.system.nvidia_module_version = module
    snap.cuda.driver = CudaDriverFacts(
        library_path=library_path,
        init_result=803,
        init_error_name="CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    )
    return snap


def test_a_compat_libcuda_in_use_is_named_with_its_folder() -> None:
    # nvidia-container-toolkit#1679: cudaErrorSystemDriverMismatch (803) with
    # /usr/local/cuda-13.0/compat/libcuda.so.1 first in ldconfig; removing its ld.so.conf.d
    # entry and `ldconfig` fixed it.
    f = the(_cuinit_803("/usr/local/cuda-13.0/compat/libcuda.so.580.65.06"), "cuda.driver-api")
    assert f.status is Status.FAIL
    assert "forward-compatibility libcuda in use (/usr/local/cuda-13.0/compat/" in f.title
    assert f.fix and "Take /usr/local/cuda-13.0/compat off the loader path" in f.fix.text


def test_the_driver_s_own_libcuda_apart_from_the_module_never_blames_compat() -> None:
    older = the(_cuinit_803("/usr/lib/x86_64-linux-gnu/libcuda.so.570.124.04"), "cuda.driver-api")
    assert older.status is Status.FAIL
    assert "compat" not in older.title + (older.fix.text if older.fix else "")
    assert older.title.startswith("libcuda (570.124.04) is older than the loaded kernel module")
    assert "libcuda 570.124.04, kernel module 570.124.06" in older.evidence
    assert older.fix and older.fix.commands[0] == (
        "sudo apt install libnvidia-compute-570 nvidia-utils-570"
    )
    newer = the(_cuinit_803("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"), "cuda.driver-api")
    assert newer.title.startswith("libcuda (580.65.06) is newer than the loaded kernel module")
    assert "compat" not in newer.title + (newer.fix.text if newer.fix else "")
    assert newer.fix and newer.fix.text.startswith("Reboot")
