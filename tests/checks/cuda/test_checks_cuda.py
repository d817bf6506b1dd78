"""CUDA checks: libcuda/cuInit and the toolkit (nvcc) against the driver and the GPUs. Every
driver-version fact the tests expect is a literal read off compat/cuda.toml (cited by row),
never computed with gpucheck.compat."""

from __future__ import annotations

import sys

from packaging.version import Version
from support import builders
from support import more_builders as mb
from support.evaluate import finding, the

from gpucheck import compat
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import CudaDriverFacts, NvccFacts

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass  # type: ignore[import-not-found,no-redef,unused-ignore]
from support.cuda_checks import cuinit_fails, toml_min_driver, upgrade_target, with_nvcc

# --- cuda.driver-api ---------------------------------------------------------------------------


def test_driver_api_working_passes_with_cuda_version_and_devices() -> None:
    f = the(builders.h100_node(8), "cuda.driver-api")
    assert f.status is Status.PASS
    assert f.title == "CUDA driver API 13.1: 8 device(s)"  # 13010 -> 13.1
    assert "device 7: NVIDIA H100 80GB HBM3 (compute 9.0)" in f.evidence


def test_cuinit_system_not_ready_names_the_fabric_manager() -> None:
    snap = cuinit_fails(builders.h100_node(8), "CUDA_ERROR_SYSTEM_NOT_READY")
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert "fabric manager" in f.title
    assert "cuInit(0) = 802 (CUDA_ERROR_SYSTEM_NOT_READY)" in f.evidence
    assert "while NVML works (driver 590.48.01)" in f.evidence
    assert f.fix and "nvidia-fabricmanager" in f.fix.text


def test_cuinit_no_device_points_at_visibility() -> None:
    snap = cuinit_fails(builders.h100_node(2), "CUDA_ERROR_NO_DEVICE")
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert f.title == "CUDA sees no device"
    assert "cuInit(0) = 100 (CUDA_ERROR_NO_DEVICE)" in f.evidence
    assert f.fix and "CUDA_VISIBLE_DEVICES" in f.fix.text and "/dev/nvidia-uvm" in f.fix.text


def test_cuinit_unlisted_error_still_fails_with_its_name() -> None:
    snap = builders.h100_node(1)
    snap.cuda.driver.init_result = 3
    snap.cuda.driver.init_error_name = "CUDA_ERROR_NOT_INITIALIZED"
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert "CUDA_ERROR_NOT_INITIALIZED" in f.title
    assert f.fix


def test_libcuda_missing_while_nvml_works_fails_naming_the_package() -> None:
    snap = builders.h100_node(1)
    snap.cuda.driver = CudaDriverFacts(
        load_error="libcuda.so.1: cannot open shared object file: No such file or directory"
    )
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert "libcuda.so.1" in f.title
    assert f.fix and "libnvidia-compute-590" in f.fix.text  # the running driver's branch


def test_libcuda_missing_in_a_container_says_compute_capability() -> None:
    snap = builders.h100_node(1)
    snap.system.container = "docker"
    snap.cuda.driver = CudaDriverFacts(load_error="libcuda.so.1: cannot open shared object file")
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert f.fix and "docker run --gpus all" in f.fix.text
    assert "export NVIDIA_DRIVER_CAPABILITIES=compute,utility" in f.fix.commands


def test_libcuda_missing_without_a_working_driver_skips_or_is_silent() -> None:
    snap = mb.nvml_fails(builders.h100_node(1), "LibraryNotFound")
    assert the(snap, "cuda.driver-api").status is Status.SKIP
    assert (
        finding(mb.nvml_fails(builders.no_gpu_machine(), "LibraryNotFound"), "cuda.driver-api")
        is None
    )


def test_fewer_cuda_devices_than_nvml_gpus_warns() -> None:
    snap = builders.h100_node(8)
    snap.cuda.driver.device_count = 7
    snap.cuda.driver.devices = snap.cuda.driver.devices[:7]
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.WARN
    assert f.title.startswith("CUDA sees 7 device(s), but the driver has 8 usable GPU(s)")
    assert f.fix and "CUDA_VISIBLE_DEVICES" in f.fix.text


def test_cuda_device_count_follows_cuda_visible_devices() -> None:
    snap = builders.h100_node(8)
    snap.system.env["CUDA_VISIBLE_DEVICES"] = "0,1"
    snap.cuda.driver.device_count = 2
    snap.cuda.driver.devices = snap.cuda.driver.devices[:2]
    assert the(snap, "cuda.driver-api").status is Status.PASS


def test_forward_compatibility_libcuda_is_noted() -> None:
    snap = mb.driver_535_node(1)
    snap.cuda.driver.driver_version = 12080
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.PASS
    assert any(
        "libcuda reports CUDA 12.8, NVML 12.2" in e and "forward-compatibility" in e
        for e in f.evidence
    )


def test_cuda_driver_probe_timeout_fails() -> None:
    snap = mb.probe(
        builders.h100_node(1), "cuda_driver", "timeout", "timed out after 10 s in cuInit"
    )
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL
    assert "timed out after 10 s" in f.title
    assert f.fix and "xid" in f.fix.text


def test_cuinit_not_tried_with_the_module_unloaded_skips() -> None:
    f = the(mb.module_not_loaded(builders.h100_node(1)), "cuda.driver-api")
    assert f.status is Status.SKIP


# --- cuda.toolkit ------------------------------------------------------------------------------


def test_nvcc_within_the_driver_passes() -> None:
    snap = with_nvcc(mb.driver_535_node(), "12.2.140")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.PASS
    assert f.title == "CUDA toolkit 12.2.140 runs on this driver (CUDA 12.2)"
    assert "CUDA home /usr/local/cuda (from default)" in f.evidence


def test_nvcc_newer_minor_warns_its_ptx_cannot_load_even_with_minor_version_compat() -> None:
    """nvcc 12.4 on a 535 driver (CUDA 12.2): the runtime starts through minor version
    compatibility, but what nvcc builds by default carries PTX for these GPUs, which the
    older driver cannot JIT (nvbandwidth#61, 13.2 on a 13.0 driver)."""
    snap = with_nvcc(mb.driver_535_node(), "12.4.131")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "cudaErrorUnsupportedPtxVersion" in f.evidence[1]
    assert f.fix and "nvcc -gencode arch=compute_90,code=sm_90 ..." in f.fix.text
    assert "12.4.131 is newer than the driver supports" in f.title
    why = f.evidence[0]
    assert "minor version compatibility" in why
    assert "(driver 535.104.05 >= 525)" in why  # cuda.toml minor_compat: CUDA 12 ">= 525"
    assert "PTX JIT" in why
    assert upgrade_target(f.fix) == compat.parse_version("550.54.14")  # cuda.toml, 12.4.0
    assert f.fix and "/usr/local/cuda-12.2" in f.fix.text


def test_nvcc_newer_major_warns_that_code_built_with_it_does_not_run() -> None:
    snap = with_nvcc(mb.driver_535_node(), "13.0.88")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "CUDA_ERROR_INSUFFICIENT_DRIVER" in f.evidence[0]
    assert upgrade_target(f.fix) == compat.parse_version("580.65.06")  # cuda.toml, 13.0.0


def test_driver_versions_in_toolkit_findings_are_printed_as_nvidia_prints_them() -> None:
    f = the(with_nvcc(mb.driver_535_node(), "13.0.88"), "cuda.toolkit")
    assert f.fix and f"to {toml_min_driver('13.0.0')} or newer" in f.fix.text  # "580.65.06"
    f = the(with_nvcc(mb.driver_535_node(), "12.4.131"), "cuda.toolkit")
    assert "driver 535.104.05 >= " in f.evidence[0]


def test_nvcc_newer_minor_below_the_minor_compat_floor_warns() -> None:
    """CUDA 11.0 GA's driver predates 11.x minor version compatibility's minimum."""
    snap = builders.node([mb.t4(0)], driver=toml_min_driver("11.0.1"), cuda=11000)
    # cuda.toml, [[minor_compat]] cuda_major = 11: min_driver_linux = "450.80.02"
    assert Version(toml_min_driver("11.0.1")) < Version("450.80.02")
    f = the(with_nvcc(snap, "11.4.152"), "cuda.toolkit")
    assert f.status is Status.WARN
    assert "CUDA 11.4 is newer than the driver's CUDA 11.0" in f.evidence[0]
    assert upgrade_target(f.fix) == compat.parse_version("470.42.01")  # cuda.toml, 11.4.0


def test_nvcc_minor_compat_on_windows_uses_the_windows_minimum() -> None:
    snap = with_nvcc(mb.driver_535_node(1), "12.4.131", path="C:\\CUDA\\v12.4\\bin\\nvcc.exe")
    snap.system.os = "Windows"
    snap.nvml.driver_version = "537.13"  # a Windows driver of the CUDA 12.2 era
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN  # PTX JIT; the runtime itself starts:
    assert "runs through minor version compatibility (driver 537.13 >= " in f.evidence[0]
    assert upgrade_target(f.fix) == compat.parse_version("551.61")  # cuda.toml, 12.4.0 windows
    assert f.fix and "on Windows" in f.fix.text


def test_cuda_home_pointing_at_nothing_warns() -> None:
    snap = builders.h100_node(1)
    snap.system.env["CUDA_HOME"] = "/opt/cuda-12.4"
    snap.cuda.cuda_home = "/opt/cuda-12.4"
    snap.cuda.cuda_home_source = "CUDA_HOME"
    snap.cuda.nvcc = None
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "CUDA_HOME points to a folder without a CUDA toolkit" in f.title
    assert f.evidence == ["CUDA_HOME=/opt/cuda-12.4 has no bin/nvcc; no nvcc on PATH either"]
    assert f.fix and f.fix.commands == ["export CUDA_HOME=/usr/local/cuda-X.Y", "unset CUDA_HOME"]


def test_cuda_home_without_a_toolkit_warns_even_with_nvcc_on_path() -> None:
    """CUDA_HOME=/nope with a working nvcc on PATH was reported as fine, but builds
    (torch extensions, CMake) take the toolkit from CUDA_HOME."""
    snap = builders.h100_node(1)
    snap.system.env["CUDA_HOME"] = "/nope"
    snap.cuda.cuda_home = "/nope"
    snap.cuda.cuda_home_source = "CUDA_HOME"
    snap.cuda.cuda_home_nvcc = False
    snap.cuda.nvcc = NvccFacts(
        path="/usr/local/bin/nvcc", version="12.4.131", toolkit="/usr/local/cuda-12.4"
    )
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert f.evidence == ["CUDA_HOME=/nope has no bin/nvcc; nvcc on PATH is /usr/local/bin/nvcc"]
    assert f.fix and f.fix.commands[0] == "export CUDA_HOME=/usr/local/cuda-12.4"
    assert f.subjects.paths == ["/nope"]


def test_cuda_path_pointing_at_nothing_warns_even_with_an_empty_cuda_home() -> None:
    snap = builders.h100_node(1)
    snap.system.env["CUDA_HOME"] = ""
    snap.system.env["CUDA_PATH"] = "/opt/cuda-12.4"
    snap.cuda.cuda_home = "/opt/cuda-12.4"  # what probes.libraries.cuda_homes records
    snap.cuda.cuda_home_source = "CUDA_PATH"
    snap.cuda.nvcc = None
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "CUDA_PATH" in f.title


def test_no_toolkit_is_info() -> None:
    f = the(builders.h100_node(1), "cuda.toolkit")
    assert f.status is Status.INFO
    assert "No CUDA toolkit" in f.title


def test_nvcc_without_a_version_warns() -> None:
    snap = builders.h100_node(1)
    snap.cuda.nvcc = NvccFacts("/usr/local/cuda/bin/nvcc", None, "exited with status 127")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert f.fix and "/usr/local/cuda/bin/nvcc --version" in f.fix.text


def test_kepler_gpu_with_nvcc_12_warns_about_architectures() -> None:
    gpu = builders.h100(0)
    gpu.name, gpu.compute_capability, gpu.architecture = "Tesla K80", "3.7", "Kepler"
    snap = with_nvcc(builders.node([gpu], driver="535.104.05", cuda=12020), "12.2.140")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "cannot build for 1 of the GPUs" in f.title
    # cuda.toml [[toolkit_arch]] cuda = "12.0" (in force for 12.2): min_cc 5.0, max_cc 9.0
    assert (
        "GPU 0 Tesla K80: compute capability 3.7, this toolkit builds for 5.0 to 9.0"
    ) in f.evidence
    assert f.fix and "compat/cuda.toml" in f.fix.text


def test_hopper_gpu_with_an_old_nvcc_warns_about_architectures() -> None:
    snap = with_nvcc(builders.h100_node(2), "11.7.99")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.WARN
    assert "cannot build for 2 of the GPUs" in f.title
    # cuda.toml [[toolkit_arch]] cuda = "11.4" (in force for 11.7): 3.5 to 8.7, no sm_90
    assert any("this toolkit builds for 3.5 to 8.7" in line for line in f.evidence), f.evidence


def test_toolkit_without_a_running_driver_is_info() -> None:
    snap = with_nvcc(mb.module_not_loaded(builders.h100_node(1)), "12.4.131")
    f = the(snap, "cuda.toolkit")
    assert f.status is Status.INFO
    assert "no driver to run it" in f.title
