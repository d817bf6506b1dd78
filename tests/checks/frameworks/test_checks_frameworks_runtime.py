"""The framework smoke test, several frameworks in one environment, forward compatibility against
the libcuda that is loaded, and old jaxlib local versions."""

from __future__ import annotations

import pytest
from support import builders
from support import framework_builders as fb
from support import more_builders as mb
from support.evaluate import finding, run_checks, the
from support.framework_checks import min_driver

from gpucheck.checks.frameworks.jax_builds import jaxlib_cuda
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot
from gpucheck.model.types import ChildFailure

# --- frameworks.smoke-test ------------------------------------------------------------------------------


def test_smoke_test_without_deep_is_skipped_pointing_at_deep() -> None:
    f = the(fb.on(builders.h100_node(1), fb.torch_cu124()), "frameworks.smoke-test")
    assert f.status is Status.SKIP and "--deep" in f.title


def test_smoke_test_passing_on_every_gpu_passes() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 8, version="2.5.1+cu124")
    f = the(fb.on(builders.h100_node(8), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.PASS
    assert f.title == "torch 2.5.1+cu124: the smoke test passed on 8 device(s)"


def test_a_missing_library_at_import_is_installed_at_the_framework_s_own_pin() -> None:
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        0,
        status="import_error",
        version="2.5.1+cu124",
        error="ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert f.title == "import torch fails: libcudnn.so.9 is missing"
    assert f.fix and f.fix.commands == ["pip install 'nvidia-cudnn-cu12==9.1.0.70'"]
    assert "what torch 2.5.1+cu124 requires" in f.fix.text


def test_out_of_memory_names_the_processes_holding_the_gpu() -> None:
    snap = builders.h100_node(2)
    builders.with_process(snap.nvml.gpus[0], 4242, "python3", 80000)
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        2,
        failures={0: "OutOfMemoryError: CUDA out of memory. Tried to allocate 16.00 KiB"},
    )
    f = the(fb.on(snap, env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert "PID 4242 python3" in f.title
    assert f.fix and "kill 4242" in f.fix.text


def test_busy_or_unavailable_names_the_exclusive_compute_mode() -> None:
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].compute_mode = "exclusive_process"
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        1,
        failures={0: "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"},
    )
    f = the(fb.on(snap, env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and "exclusive_process" in f.title
    assert f.fix and "sudo nvidia-smi -i 0 -c DEFAULT" in f.fix.text


def test_no_kernel_image_points_to_the_same_version_built_with_the_gpu() -> None:
    env = fb.with_torch(fb.environment(), "2.7.1+cu128", "12.8")
    fb.imported(
        env,
        "torch",
        1,
        failures={
            0: "RuntimeError: CUDA error: no kernel image is available for execution on the device"
        },
    )
    f = the(fb.on(fb.pascal_workstation(), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and "no kernel image for compute capability 6.1" in f.title
    # torch.toml, release 2.7: the cu126 variant still carries sm_61
    assert f.fix and (
        "pip install torch==2.7.1+cu126 --index-url https://download.pytorch.org/whl/cu126"
        in f.fix.text
    )


@pytest.mark.parametrize(
    ("error", "fix_part"),
    [
        ("RuntimeError: CUDA error: system not yet initialized", "nvidia-fabricmanager"),
        (
            "RuntimeError: CUDA error: forward compatibility was attempted on non supported HW",
            "cuda-compat",
        ),
    ],
)
def test_cuda_errors_with_a_known_cause_get_its_fix(error: str, fix_part: str) -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, failures={0: error})
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and fix_part in (f.fix.text if f.fix else "")


def test_a_crash_names_the_step_it_died_in() -> None:
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        1,
        status="crashed",
        error="crashed with SIGSEGV in torch.backends.cudnn.version: Segmentation fault",
        failure=ChildFailure(
            "crashed", "torch.backends.cudnn.version", signal="SIGSEGV", stderr_tail="Segfault"
        ),
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert f.title == "torch crashed in torch.backends.cudnn.version"
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        1,
        status="timeout",
        error="timed out after 60 s in smoke cuda:0",
        failure=ChildFailure("timeout", "smoke cuda:0"),
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and f.title == "torch timed out in smoke cuda:0"
    assert f.fix and "persistence mode" in f.fix.text


def test_no_gpu_for_torch_while_the_driver_has_some_fails_unless_another_check_names_why() -> None:
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        0,
        available=False,
        warnings=["UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount()"],
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and "sees no GPU" in f.title
    assert any("cudaGetDeviceCount" in e for e in f.evidence)
    env = fb.torch_cpu()
    fb.imported(env, "torch", 0, available=False)
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.SKIP and "frameworks.torch.cpu-build" in f.title


def test_no_gpu_machine_deep_pass_is_info() -> None:
    env = fb.torch_cpu()
    fb.imported(env, "torch", 0, available=False)
    f = the(fb.on(builders.no_gpu_machine(), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.INFO


def test_an_import_error_without_a_missing_library_reinstalls_from_the_right_index() -> None:
    snap = fb.on(builders.h100_node(1), fb.torch_cu124(), deep=True)
    snap.system.env["LD_LIBRARY_PATH"] = "/usr/local/cuda-12.1/lib64"
    env = snap.environments[0]
    fb.imported(
        env,
        "torch",
        0,
        status="import_error",
        error="ImportError: libtorch_cuda.so: undefined symbol: ncclCommRegister",
    )
    f = the(snap, "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert any("LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64" in e for e in f.evidence)
    assert f.fix and f.fix.text == (
        "Reinstall it: `pip install --force-reinstall torch==2.5.1 "
        "--index-url https://download.pytorch.org/whl/cu124`"
    )


def test_jax_falling_back_to_the_cpu_names_jax_s_own_warning() -> None:
    env = fb.with_jax(fb.environment())
    fb.imported(
        env,
        "jax",
        1,
        version="0.4.30",
        backend="cpu",
        warnings=[
            "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu."
        ],
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and "sees no GPU" in f.title
    assert any("Falling back to cpu" in e for e in f.evidence)
    assert finding(fb.on(builders.h100_node(1), env, deep=True), "frameworks.device-count") is None


def test_cupy_runtime_too_new_for_the_driver_is_reported_once_by_cupy_cuda_driver() -> None:
    env = fb.add(fb.environment(), "cupy-cuda12x", "13.6.0")
    fb.imported(
        env,
        "cupy",
        0,
        status="error",
        cuda="12.8",
        available=False,
        error="cupy.cuda.runtime.getDeviceCount: CUDARuntimeError: cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version",
    )
    snap = fb.on(mb.t4_vm(), env, deep=True)
    f = the(snap, "frameworks.cupy.cuda-driver")
    assert f.status is Status.FAIL and "cupy-cuda12x 13.6.0 (CUDA 12.8)" in f.title
    assert f"Upgrade the NVIDIA driver to {min_driver('12.8')} or newer" in (
        f.fix.text if f.fix else ""
    )
    smoke = the(snap, "frameworks.smoke-test")
    assert smoke.status is Status.SKIP and "frameworks.cupy.cuda-driver" in smoke.title


def test_tensorflow_skipping_a_gpu_it_has_no_code_for_is_named_as_the_cause() -> None:
    snap = builders.node(
        [builders.rtx_3060(0), builders.rtx_3060(1)], driver="570.124.04", cuda=12080
    )
    snap.nvml.gpus[1].compute_capability = "5.2"
    env = fb.with_tensorflow(fb.environment(), "2.17.0", cuda="12.3", archs=fb.TF_217_ARCHS)
    fb.imported(env, "tensorflow", 1, version="2.17.0")
    f = the(fb.on(snap, env, deep=True), "frameworks.device-count")
    assert f.status is Status.WARN
    assert any(
        e.startswith("TensorFlow ignores GPUs it has no code for: GPU 1") for e in f.evidence
    )
    assert f.fix and "frameworks.tensorflow.arch-support" in f.fix.text


# --- several frameworks in one environment: FAIL only when the job cannot run ------------------


def test_an_incidental_cpu_jaxlib_beside_a_cuda_torch_warns_on_jax_only() -> None:
    # A CUDA torch (the framework the user runs) and a CPU-only jaxlib another package pulled in.
    env = fb.with_jax(fb.with_torch(fb.environment()), plugin=None)
    snap = fb.on(builders.h100_node(1), env)
    f = the(snap, "frameworks.jax.cpu-build")
    assert f.status is Status.WARN
    assert f.title.endswith("(code using torch 2.5.1+cu124 here can)")
    assert f.fix is not None and "jax[cuda" in f.fix.text
    assert all(x.status is not Status.FAIL for x in run_checks(snap))


def test_a_cpu_jaxlib_alone_still_fails() -> None:
    snap = fb.on(builders.h100_node(1), fb.with_jax(fb.environment(), plugin=None))
    assert the(snap, "frameworks.jax.cpu-build").status is Status.FAIL


def test_a_cpu_torch_beside_a_cuda_torch_that_saw_no_gpu_still_fails() -> None:
    # --deep imported the CUDA TensorFlow and it saw no GPU: it does not count as working.
    env = fb.with_tensorflow(fb.with_torch(fb.environment(), version="2.5.1+cpu", cuda=None))
    fb.imported(env, "tensorflow", 0)
    snap = fb.on(builders.h100_node(1), env, deep=True)
    assert the(snap, "frameworks.torch.cpu-build").status is Status.FAIL


# --- forward compatibility: judge against the libcuda that is loaded -----------------------------


def _forward_compat_node() -> Snapshot:
    """An H100 on an R570 driver (CUDA 12.8) whose loaded libcuda is the cuda-compat package's
    CUDA 13.0 one, as NGC images set it up: cuInit succeeds with it."""
    snap = builders.node([builders.h100(0)], driver="570.172.08", cuda=12080)
    snap.system.nvidia_module_version = "570.172.08"
    snap.cuda.driver.driver_version = 13000
    snap.cuda.driver.library_path = "/usr/local/cuda-13.0/compat/libcuda.so.1"
    return snap


def test_a_cuda_13_torch_runs_on_r570_through_a_forward_compatible_libcuda() -> None:
    env = fb.with_torch(fb.environment(), version="2.9.0+cu130", cuda="13.0")
    f = the(fb.on(_forward_compat_node(), env), "frameworks.torch.cuda-driver")
    assert f.status is Status.PASS
    assert "/usr/local/cuda-13.0/compat/libcuda.so.1" in " ".join([f.title, *f.evidence])


def test_without_the_compat_libcuda_the_same_torch_fails_on_r570() -> None:
    snap = _forward_compat_node()
    snap.cuda.driver.driver_version = 12080  # the driver's own libcuda
    env = fb.with_torch(fb.environment(), version="2.9.0+cu130", cuda="13.0")
    assert the(fb.on(snap, env), "frameworks.torch.cuda-driver").status is Status.FAIL


# --- old jaxlib local versions -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "cuda"),
    [
        ("0.1.65+cuda112", "11.2"),  # the 0.1.x wheels: major and minor run together
        ("0.1.57+cuda102", "10.2"),
        ("0.1.55+cuda92", "9.2"),
        ("0.1.74+cuda11.cudnn82", "11"),  # later: the major alone, then cuDNN 8.2
        ("0.4.14+cuda12.cudnn89", "12"),
        ("0.4.30", None),
    ],
)
def test_jaxlib_local_tags_name_their_cuda(version: str, cuda: str | None) -> None:
    assert jaxlib_cuda(version) == cuda


def test_a_cuda112_jaxlib_is_judged_as_cuda_11_2_not_112() -> None:
    env = fb.environment()
    fb.add(env, "jax", "0.2.10")
    fb.add(env, "jaxlib", "0.1.65+cuda112")
    # Driver 450.80.02: CUDA 11.0's; CUDA 11.2 runs there through minor version compatibility.
    snap = builders.node([builders.h100(0)], driver="450.80.02", cuda=11000)
    f = the(fb.on(snap, env), "frameworks.jax.cuda-driver")
    text = " ".join([f.title, *f.evidence])
    assert "CUDA 11.2" in text and "112" not in text.replace("0.1.65+cuda112", "")
