"""The TensorFlow checks: CPU builds, the legacy tensorflow-gpu package, native Windows, the
driver, architectures, CUDA libraries, Python and Keras. Expected versions are literals read
off compat/tensorflow.toml and compat/cuda.toml."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support import more_builders as mb
from support.evaluate import finding, run_checks, the
from support.framework_checks import TF_214, TF_221, min_driver

from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Status

# --- frameworks.tensorflow.cpu-build --------------------------------------------------------------------------


def test_tensorflow_cpu_on_an_h100_fails_with_the_and_cuda_install() -> None:
    f = the(fb.on(builders.h100_node(2), fb.tensorflow_cpu()), "frameworks.tensorflow.cpu-build")
    assert f.status is Status.FAIL
    assert f.title.startswith("tensorflow-cpu 2.15.0 is a CPU-only build")
    # tensorflow.toml [[release]] 2.15: cuda = "12.2", which driver 590.48.01 runs
    assert f.fix and f.fix.commands[0].startswith(
        "pip uninstall -y tensorflow-cpu && pip install 'tensorflow[and-cuda]==2.15.*'"
    )
    assert "'tensorflow[and-cuda]==2.15.*'" in f.fix.text


def test_tensorflow_build_info_cpu_build_fails_and_cuda_build_passes() -> None:
    env = fb.with_tensorflow(fb.environment(), is_cuda_build=False, and_cuda=False)
    assert (
        the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.cpu-build").status
        is Status.FAIL
    )
    f = the(
        fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())),
        "frameworks.tensorflow.cpu-build",
    )
    assert f.status is Status.PASS and f.title == "tensorflow 2.15.0 is a CUDA 12.2 build, cuDNN 8"


def test_tensorflow_cpu_without_a_gpu_is_info() -> None:
    f = the(
        fb.on(builders.no_gpu_machine(), fb.tensorflow_cpu()), "frameworks.tensorflow.cpu-build"
    )
    assert f.status is Status.INFO


# --- frameworks.tensorflow.legacy-gpu-package -------------------------------------------------------------------


def test_tensorflow_gpu_alone_warns_with_the_compat_note_and_the_replacement() -> None:
    env = fb.with_tensorflow(
        fb.environment(), "2.11.0", package="tensorflow-gpu", cuda="11.2", and_cuda=False
    )
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.legacy-gpu-package")
    assert f.status is Status.WARN
    # tensorflow.toml [[package]] name = "tensorflow-gpu": its note, from its first words
    assert any(
        e.startswith("compat data: Removed. Its description: 'tensorflow-gpu has")
        for e in f.evidence
    ), f.evidence
    pick = {"version": "2.21", "install": TF_221}
    assert pick is not None
    assert f.fix and f.fix.commands[0].startswith(
        f"pip uninstall -y tensorflow-gpu && {pick['install']}"
    )


def test_tensorflow_gpu_beside_tensorflow_fails() -> None:
    env = fb.with_tensorflow(
        fb.environment(), "2.10.0", package="tensorflow-gpu", cuda="11.2", and_cuda=False
    )
    fb.with_tensorflow(env, "2.15.0")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.legacy-gpu-package")
    assert f.status is Status.FAIL
    assert "tensorflow-gpu 2.10.0 and tensorflow 2.15.0 are both installed" in f.title
    assert f.fix and f.fix.commands[0].startswith(
        "pip uninstall -y tensorflow tensorflow-gpu && pip install 'tensorflow[and-cuda]==2.15.*'"
    )


def test_no_tensorflow_gpu_no_finding() -> None:
    assert (
        finding(
            fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())),
            "frameworks.tensorflow.legacy-gpu-package",
        )
        is None
    )


# --- frameworks.tensorflow.windows-native -------------------------------------------------------------------------


def test_native_windows_tensorflow_2_15_fails_with_wsl2_or_the_last_windows_gpu_release() -> None:
    snap = fb.on(fb.windows_workstation(), fb.tensorflow_windows("2.15.0"))
    f = the(snap, "frameworks.tensorflow.windows-native")
    # tensorflow.toml: windows_native_gpu_last = "2.10"; [[windows_gpu]] 2.10: cuda 11.2, cudnn 8.1
    assert f.status is Status.FAIL
    assert (
        f.title
        == "tensorflow 2.15.0 cannot use the GPU on native Windows: GPU support there ended with 2.10"
    )
    assert f.fix and "Use WSL2" in f.fix.text
    assert "pip install 'tensorflow==2.10.*'" in f.fix.commands
    assert "conda install -c conda-forge cudatoolkit=11.2 cudnn=8.1" in f.fix.commands
    # The CPU-only build there is the same root cause, reported once.
    assert the(snap, "frameworks.tensorflow.cpu-build").status is Status.SKIP


def test_native_windows_tensorflow_2_10_passes_and_linux_says_nothing() -> None:
    snap = fb.on(fb.windows_workstation(), fb.tensorflow_windows("2.10.0"))
    assert the(snap, "frameworks.tensorflow.windows-native").status is Status.PASS
    assert (
        the(snap, "frameworks.tensorflow.cuda-driver").status is Status.PASS
    )  # build_info '64_112' = 11.2
    assert (
        the(snap, "frameworks.tensorflow.cpu-build").title
        == "tensorflow 2.10.0 is a CUDA 11.2 build, cuDNN 8"
    )
    assert (
        finding(
            fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())),
            "frameworks.tensorflow.windows-native",
        )
        is None
    )


# --- frameworks.tensorflow.cuda-driver --------------------------------------------------------------------------


def test_tensorflow_2_15_on_driver_515_fails_with_the_driver_or_a_release_for_it() -> None:
    f = the(
        fb.on(mb.t4_vm(), fb.with_tensorflow(fb.environment())), "frameworks.tensorflow.cuda-driver"
    )
    assert f.status is Status.FAIL
    assert f"Upgrade the NVIDIA driver to {min_driver('12.2')} or newer" in (
        f.fix.text if f.fix else ""
    )
    pick = {"version": "2.14", "install": TF_214}
    assert pick is not None
    assert f.fix and f.fix.steps[-1].option == 1
    assert f.fix.commands[-1] == f"pip uninstall -y tensorflow && {pick['install']}"


def test_tensorflow_cuda_from_the_compat_data_when_build_info_is_unread() -> None:
    env = fb.with_tensorflow(fb.environment())
    env.tensorflow = (
        None  # whether it is a CUDA build is not known: frameworks.tensorflow.cpu-build skips
    )
    assert finding(fb.on(mb.t4_vm(), env), "frameworks.tensorflow.cuda-driver") is None
    assert the(fb.on(mb.t4_vm(), env), "frameworks.tensorflow.cpu-build").status is Status.SKIP
    env = fb.with_tensorflow(fb.environment(), cuda=None)
    f = the(fb.on(mb.t4_vm(), env), "frameworks.tensorflow.cuda-driver")
    assert f.status is Status.FAIL
    assert "CUDA 12.2 from the tested configuration in the compat data" in f.evidence


# --- frameworks.tensorflow.arch-support ------------------------------------------------------------------------


def test_tensorflow_on_h100_runs_from_ptx_info_with_the_jit_cache_fix() -> None:
    f = the(
        fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())),
        "frameworks.tensorflow.arch-support",
    )
    assert f.status is Status.INFO
    assert "JIT-compiling its PTX" in f.title
    assert f.fix and "CUDA_CACHE_MAXSIZE" in f.fix.text


def test_tensorflow_ptx_only_with_a_driver_older_than_its_cuda_fails() -> None:
    # A build with compute_90 PTX alone (the 2.16.1 pip wheel also carries sm_90 SASS, which
    # needs no JIT: compat/tensorflow.toml [[gpu_code]] 2.16).
    env = fb.with_tensorflow(fb.environment(), "2.16.1", cuda="12.3", archs=["sm_80", "compute_90"])
    f = the(fb.on(mb.driver_535_node(1), env), "frameworks.tensorflow.arch-support")
    assert f.status is Status.FAIL
    assert any("cannot JIT-compile for CUDA 12.3" in e for e in f.evidence)


def test_tensorflow_with_sass_for_the_gpu_passes_and_a_dropped_gpu_fails() -> None:
    f = the(
        fb.on(builders.workstation(), fb.with_tensorflow(fb.environment())),
        "frameworks.tensorflow.arch-support",
    )
    assert f.status is Status.PASS  # RTX 3060 (8.6) runs sm_80
    env = fb.with_tensorflow(fb.environment(), "2.17.0", cuda="12.3", archs=fb.TF_217_ARCHS)
    snap = fb.on(builders.workstation(), env)
    snap.nvml.gpus[0].compute_capability = "5.2"  # a Maxwell card: dropped in 2.17
    f = the(snap, "frameworks.tensorflow.arch-support")
    assert f.status is Status.FAIL
    assert f.fix and "TF_CUDA_COMPUTE_CAPABILITIES=5.2" in f.fix.text


# --- frameworks.tensorflow.cuda-libraries ----------------------------------------------------------------------


def _without(env: PythonEnvironment, *names: str) -> PythonEnvironment:
    env.distributions = [d for d in env.distributions if d.name not in names]
    return env


def test_tensorflow_2_15_without_nvidia_cudnn_fails_with_the_and_cuda_install() -> None:
    env = _without(fb.with_tensorflow(fb.environment()), "nvidia-cudnn-cu12")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert "(nvidia-cudnn-cu12)" in f.title
    # tensorflow.toml [[and_cuda]] 2.15.0 requires "nvidia-cudnn-cu12==8.9.4.25"
    assert "missing: nvidia-cudnn-cu12==8.9.4.25" in f.evidence
    assert f.fix and f.fix.commands == ["pip install 'tensorflow[and-cuda]==2.15.0'"]


def test_tensorflow_with_its_wheels_passes_and_a_system_cudnn_of_its_major_stands_in() -> None:
    f = the(
        fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())),
        "frameworks.tensorflow.cuda-libraries",
    )
    assert f.status is Status.PASS
    snap = fb.on(
        builders.h100_node(1), _without(fb.with_tensorflow(fb.environment()), "nvidia-cudnn-cu12")
    )
    snap.cudnn.libraries = [
        builders.library("cudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "8.9.7")
    ]
    f = the(snap, "frameworks.tensorflow.cuda-libraries")
    assert f.status is Status.PASS
    assert any("a system copy is on the loader path: 8.9.7" in e for e in f.evidence)


def test_tensorflow_cudnn_of_another_major_counts_as_missing() -> None:
    env = fb.add(fb.with_tensorflow(fb.environment()), "nvidia-cudnn-cu12", "9.1.0.70")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert any("(9.1.0.70 installed: another major)" in e for e in f.evidence)


def test_tensorflow_missing_only_optional_wheels_warns() -> None:
    env = _without(fb.with_tensorflow(fb.environment()), "nvidia-cuda-nvcc-cu12")
    assert (
        the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.cuda-libraries").status
        is Status.WARN
    )


def test_tensorflow_before_2_14_needs_the_system_cuda_and_cudnn_it_was_built_with() -> None:
    # tensorflow.toml [[release]] 2.12: cuda = "11.8", cudnn = "8.6"
    env = fb.with_tensorflow(fb.environment(), "2.12.0", cuda="11.8", cudnn="8", and_cuda=False)
    snap = fb.on(builders.h100_node(1), env)
    f = the(snap, "frameworks.tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert f.fix and "cudatoolkit=11.8" in f.fix.text
    snap.cuda.runtimes = [
        builders.library("cudart", "/usr/local/cuda-11.8/lib64/libcudart.so.11.0", "11.8.89")
    ]
    snap.cudnn.libraries = [
        builders.library("cudnn", "/usr/local/cuda-11.8/lib64/libcudnn.so.8", "8.6.0")
    ]
    assert the(snap, "frameworks.tensorflow.cuda-libraries").status is Status.PASS


def test_tensorflow_loader_warnings_of_the_deep_pass_fail_even_when_the_wheels_are_there() -> None:
    env = fb.with_tensorflow(fb.environment())
    fb.imported(
        env,
        "tensorflow",
        0,
        warnings=[
            "W tensorflow/core/common_runtime/gpu/gpu_device.cc:2256] Cannot dlopen some GPU libraries.",
            "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file",
        ],
    )
    snap = fb.on(builders.h100_node(1), env, deep=True)
    f = the(snap, "frameworks.tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert "libcudnn.so.8" in f.title
    # The smoke test points here rather than reporting the same cause again.
    assert the(snap, "frameworks.smoke-test").status is Status.SKIP


def test_tensorflow_trt_warnings_are_not_missing_cuda_libraries() -> None:
    """TensorRT is optional for TensorFlow: the libnvinfer lines every pip TF prints without
    it fail nothing (hiyouga/LlamaFactory#3673: training runs with 'TF-TRT Warning: Could not
    find TensorRT'; tensorflow/tensorflow#64809)."""
    env = fb.with_tensorflow(fb.environment())
    fb.imported(
        env,
        "tensorflow",
        1,
        warnings=[
            "W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could "
            "not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open "
            "shared object file: No such file or directory",
            "W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not "
            "find TensorRT",
        ],
    )
    snap = fb.on(builders.h100_node(1), env, deep=True)
    assert the(snap, "frameworks.tensorflow.cuda-libraries").status is Status.PASS
    assert all(f.status is not Status.FAIL for f in run_checks(snap))


# --- frameworks.tensorflow.python and frameworks.tensorflow.keras ------------------------------------------------------------


def test_tensorflow_on_an_untested_python_fails_with_a_release_for_it() -> None:
    env = fb.with_tensorflow(fb.environment(version="3.12.3"))
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.python")
    assert f.status is Status.FAIL
    assert f.fix and TF_221 in f.fix.text
    assert (
        the(
            fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())),
            "frameworks.tensorflow.python",
        ).status
        is Status.PASS
    )


def test_keras_2_with_tensorflow_2_16_warns_with_both_ways_out() -> None:
    env = fb.add(fb.with_tensorflow(fb.environment(), "2.16.1", cuda="12.3"), "keras", "2.15.0")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.keras")
    assert f.status is Status.WARN
    assert f.fix and "pip install -U 'keras>=3'" in f.fix.text and "tf-keras~=2.16.0" in f.fix.text
    assert "TF_USE_LEGACY_KERAS=1" in f.fix.text
    assert any(
        e.startswith("compat data: Keras 3 is the default Keras from TensorFlow 2.16")
        for e in f.evidence
    )


def test_keras_3_with_tensorflow_2_15_and_a_mismatched_tf_keras_warn() -> None:
    env = fb.add(fb.with_tensorflow(fb.environment()), "keras", "3.3.3")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.keras")
    assert f.status is Status.WARN and f.fix and f.fix.commands == ["pip install 'keras~=2.15.0'"]
    env = fb.add(
        fb.add(fb.with_tensorflow(fb.environment(), "2.16.1", cuda="12.3"), "keras", "3.3.3"),
        "tf-keras",
        "2.15.1",
    )
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.keras")
    assert (
        f.status is Status.WARN and f.fix and f.fix.commands == ["pip install 'tf-keras~=2.16.0'"]
    )


def test_matching_keras_passes() -> None:
    env = fb.add(fb.with_tensorflow(fb.environment()), "keras", "2.15.0")
    assert (
        the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.keras").status is Status.PASS
    )
