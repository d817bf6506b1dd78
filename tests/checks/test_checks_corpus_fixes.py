"""Checks corrected by the real cases' corpus (tests/cases), each against the thread that showed it:
TensorFlow's PTX on compute capability 12.x, a JAX plugin aligned to jaxlib's whole version,
error 802's fix naming the fabric manager the driver needs."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support.evaluate import the
from support.more_builders import CU_RESULTS

from gpucheck.model.finding import Finding, Status


def test_tensorflow_with_only_ptx_for_compute_capability_12_fails() -> None:
    # tensorflow/tensorflow#101746: TF 2.20.0 from pip on an RTX 5080 (12.0): INVALID_PTX.
    env = fb.with_tensorflow(
        fb.environment(),
        "2.20.0",
        cuda="12.5.1",
        archs=["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
    )
    f = the(fb.on(fb.blackwell_workstation(), env), "frameworks.tensorflow.arch-support")
    assert f.status is Status.FAIL and "CUDA_ERROR_INVALID_PTX" in f.title
    assert f.fix is not None and "nvcr.io/nvidia/tensorflow" in f.fix.text
    assert "TF_CUDA_COMPUTE_CAPABILITIES=12.0" in f.fix.text


def test_tensorflow_on_hopper_runs_the_sm_90_sass_of_the_pip_wheel() -> None:
    # The same build on an H100 (9.0): the 2.20.0 wheel's libraries carry sm_90 SASS beside the
    # compute_90 PTX its build_info names (compat/tensorflow.toml [[gpu_code]] 2.20): no JIT.
    env = fb.with_tensorflow(
        fb.environment(),
        "2.20.0",
        cuda="12.5.1",
        archs=["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
    )
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.arch-support")
    assert f.status is Status.PASS


def test_a_jax_plugin_is_aligned_to_a_four_part_jaxlib_version() -> None:
    # ma-gilles/recovar#64: jaxlib 0.9.0.1 with jax-cuda12-plugin/pjrt 0.9.2; the workaround
    # was pip install 'jax-cuda12-plugin==0.9.0.1' 'jax-cuda12-pjrt==0.9.0.1'.
    env = fb.with_jax(fb.environment(), "0.9.0.1")
    fb.add(env, "jax-cuda12-plugin", "0.9.2")
    fb.add(env, "jax-cuda12-pjrt", "0.9.2")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.jax.cpu-build")
    assert f.status is Status.FAIL
    assert f.fix is not None
    assert f.fix.commands == ["pip install jax-cuda12-pjrt==0.9.0.1 jax-cuda12-plugin==0.9.0.1"]


def test_a_plugin_one_post_release_apart_is_stale() -> None:
    # jaxlib/plugin_support.py check_plugin_version compares every dotted number of the two
    # versions: (0, 9, 0) != (0, 9, 0, 1), the plugin is not used.
    env = fb.with_jax(fb.environment(), "0.9.0.1")
    fb.add(env, "jax-cuda12-plugin", "0.9.0")
    fb.add(env, "jax-cuda12-pjrt", "0.9.0")
    assert the(fb.on(builders.h100_node(1), env), "frameworks.jax.cpu-build").status is Status.FAIL


def test_error_802_names_the_fabric_manager_of_the_drivers_version() -> None:
    # wilicc/gpu-burn#92: 8x H100 80GB HBM3 on driver 545.23.08, "system not yet initialized".
    snap = builders.node([builders.h100(i) for i in range(8)], driver="545.23.08", cuda=12030)
    snap.cuda.driver.init_result = CU_RESULTS["CUDA_ERROR_SYSTEM_NOT_READY"]
    snap.cuda.driver.init_error_name = "CUDA_ERROR_SYSTEM_NOT_READY"
    snap.cuda.driver.devices = []
    f = the(snap, "cuda.driver-api")
    assert f.status is Status.FAIL and f.fix is not None
    assert "fabric manager of driver 545.23.08 exactly" in f.fix.text
    first = f.fix.steps[0]
    assert first.command == (
        # Pinned as NVIDIA's repository names the release (DRIVER-1): a bare install of a
        # branch already installed at another release changes nothing.
        "sudo apt-get install -y --allow-downgrades 'nvidia-fabricmanager-545=545.23.08-*' && "
        "sudo systemctl enable --now nvidia-fabricmanager"
    )
    assert [(c.name, c.to_version) for c in first.changes] == [
        ("nvidia-fabricmanager-545", "545.23.08")
    ]


def _vllm_on(gpu_cc: str, vllm: str) -> Finding:
    snap = builders.workstation()
    snap.nvml.gpus[0].compute_capability = gpu_cc
    env = fb.with_torch(fb.environment(), "2.7.0+cu126", "12.6")
    fb.add(env, "vllm", vllm, ["torch==2.7.0"])
    return the(fb.on(snap, env), "frameworks.torch.extensions")


def test_vllm_on_a_gpu_below_its_wheels_floor_fails() -> None:
    # vllm-project/vllm#19542: vLLM 0.9.1 from pip on a GTX 1080 Ti (6.1); its wheel's _C
    # carries SASS for 7.0, 8.0, 9.0 and 10.0 (and their minors), the docs say 7.0.
    f = _vllm_on("6.1", "0.9.1")
    assert f.status is Status.FAIL
    assert "its build carries code for compute capability 7.0, 8.0, 9.0, 10.0 only" in f.title
    assert "no vllm release builds for it" in f.title
    assert _vllm_on("7.0", "0.9.1").status is Status.PASS


def test_vllm_beside_a_supported_gpu_only_warns() -> None:
    snap = builders.node([builders.h100(0), builders.h100(1)])
    snap.nvml.gpus[1].compute_capability = "6.1"
    env = fb.with_torch(fb.environment(), "2.7.0+cu126", "12.6")
    fb.add(env, "vllm", "0.9.1", ["torch==2.7.0"])
    f = the(fb.on(snap, env), "frameworks.torch.extensions")
    assert f.status is Status.WARN and f.fix is not None and "CUDA_VISIBLE_DEVICES" in f.fix.text
