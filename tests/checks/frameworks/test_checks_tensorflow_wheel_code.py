"""frameworks.tensorflow.arch-support judged by the code TensorFlow's Linux pip wheels carry:
compat/tensorflow.toml's [[gpu_code]] rows, read from each wheel's fat binaries with
scripts/tf_wheel_code.py. The literals are those rows: tensorflow 2.20.0's build_info prints
['sm_60', 'sm_70', 'sm_80', 'sm_89', 'compute_90'] and its libraries carry SASS 6.0, 7.0, 8.0,
8.9, 9.0 and PTX 9.0; tensorflow_gpu 1.5.0 and 1.6.0 (build_info without a list) SASS and PTX
3.5, 3.7, 5.2, 6.0, 6.1, 7.0 (1.12.0 too; 1.12.3 sm_37 and compute_37 only); 1.3 and 1.4 SASS and
PTX 3.0, 3.5, 3.7, 5.2, 6.0, 6.1."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot

ARCH = "frameworks.tensorflow.arch-support"
TF_220_BUILD_INFO = ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]


def _tf_220(archs: list[str] = TF_220_BUILD_INFO) -> PythonEnvironment:
    return fb.with_tensorflow(fb.environment(), "2.20.0", cuda="12.5.1", archs=archs)


def _tf_gpu_1x(version: str, python: str = "3.5.2") -> PythonEnvironment:
    """tensorflow-gpu 1.x from pip: its build_info names the CUDA but no architectures."""
    env = fb.environment(version=python)
    return fb.with_tensorflow(
        env, version, package="tensorflow-gpu", cuda="9.0", cudnn="7", archs=[], and_cuda=False
    )


def _on_cc(cc: str, env: PythonEnvironment) -> Snapshot:
    snap = fb.on(builders.workstation(), env)
    snap.nvml.gpus[0].compute_capability = cc
    return snap


def test_pip_2_20_on_an_h100_runs_the_sm_90_sass_its_build_info_calls_compute_90() -> None:
    f = the(fb.on(builders.h100_node(1), _tf_220()), ARCH)
    assert f.status is Status.PASS
    assert any("tensorflow-2.20.0-cp313-cp313-manylinux_2_17_x86_64" in e for e in f.evidence)


def test_a_build_info_unlike_the_wheels_is_judged_by_itself() -> None:
    """A build from source with its own list: compute_90 is all build_info says, PTX."""
    f = the(fb.on(builders.h100_node(1), _tf_220(["sm_80", "compute_90"])), ARCH)
    assert f.status is Status.INFO
    assert "JIT-compiling its PTX" in f.title


def test_a_conda_tensorflow_is_judged_by_its_build_info() -> None:
    env = _tf_220()
    env.distributions[0].build = "cuda120py312h4008524_201"
    f = the(fb.on(builders.h100_node(1), env), ARCH)
    assert f.status is Status.INFO


def test_tensorflow_gpu_1_6_has_no_code_for_compute_capability_3_0_and_1_4_is_named() -> None:
    f = the(_on_cc("3.0", _tf_gpu_1x("1.6.0")), ARCH)
    assert f.status is Status.FAIL
    assert any("older than this build supports" in e for e in f.evidence)
    assert f.fix is not None
    assert f.fix.text.startswith(
        "Install TensorFlow 1.4, CUDA 8, the newest whose builds carry code for compute "
        "capability 3.0: `pip uninstall -y tensorflow-gpu && pip install 'tensorflow-gpu==1.4.*'`"
    )
    assert "TF_CUDA_COMPUTE_CAPABILITIES=3.0" in f.fix.text


def test_tensorflow_gpu_1_4_runs_on_compute_capability_3_0_by_its_sass() -> None:
    f = the(_on_cc("3.0", _tf_gpu_1x("1.4.0")), ARCH)
    assert f.status is Status.PASS


def test_tensorflow_gpu_1_6_on_compute_capability_5_0_runs_through_ptx_3_7() -> None:
    """No sm_50 and sm_52 does not run on 5.0, but the wheel's compute_37 PTX JIT-compiles."""
    f = the(_on_cc("5.0", _tf_gpu_1x("1.6.0")), ARCH)
    assert f.status is Status.INFO
    assert "JIT-compiling its PTX" in f.title


def test_a_windows_tensorflow_gpu_is_not_judged_by_the_linux_wheels() -> None:
    env = _tf_gpu_1x("1.6.0")
    env.platform = "win32"
    f = the(_on_cc("3.0", env), ARCH)
    assert f.status is Status.SKIP
    assert "build_info lists no architectures" in f.evidence


def test_tensorflow_gpu_1_12_3_has_only_compute_37_and_runs_a_pascal_gpu_through_jit() -> None:
    """tensorflow_gpu 1.12.3's wheel carries sm_37 and compute_37 only (1.12.0's the line's
    six architectures): the exact patch installed is what is judged."""
    f = the(_on_cc("6.1", _tf_gpu_1x("1.12.3")), ARCH)
    assert f.status is Status.INFO
    assert the(_on_cc("6.1", _tf_gpu_1x("1.12.0")), ARCH).status is Status.PASS
