"""The JAX and CuPy checks, and the cross-framework library checks: library shadowing, NVIDIA
package conflicts and device counts."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support import more_builders as mb
from support.evaluate import finding, the
from support.framework_checks import min_driver

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot

# --- frameworks.jax.cpu-build and frameworks.jax.cuda-driver -----------------------------------------------------------------


def test_jax_without_its_cuda_plugin_fails_choosing_the_cuda_major_for_the_driver() -> None:
    env = fb.with_jax(fb.environment(), plugin=None)
    f = the(fb.on(builders.h100_node(1), env), "frameworks.jax.cpu-build")
    assert f.status is Status.FAIL
    assert f.fix and f.fix.commands[0].startswith(
        'pip install -U "jax[cuda13]"'
    )  # driver 590: CUDA 13.1
    f = the(
        fb.on(mb.driver_535_node(1), fb.with_jax(fb.environment(), plugin=None)),
        "frameworks.jax.cpu-build",
    )
    # cuda.toml: 13.0.0 needs 580.65.06 and [[minor_compat]] 13 needs 580, so 535 cannot run it
    assert f.fix and f.fix.commands[0].startswith('pip install -U "jax[cuda12]"')


def test_jax_cuda13_is_not_offered_to_a_gpu_older_than_cuda_13_supports() -> None:
    f = the(
        fb.on(fb.pascal_workstation(), fb.with_jax(fb.environment(), plugin=None)),
        "frameworks.jax.cpu-build",
    )
    # cuda.toml [[toolkit_arch]] 13.0: min_cc = "7.5", above this Pascal's 6.1
    assert f.fix and '"jax[cuda12]"' in f.fix.text


def test_jax_with_its_plugin_passes_and_a_stale_plugin_fails_with_the_aligning_command() -> None:
    f = the(fb.on(builders.h100_node(1), fb.with_jax(fb.environment())), "frameworks.jax.cpu-build")
    assert f.status is Status.PASS
    env = fb.add(fb.with_jax(fb.environment(), "0.4.31"), "jax-cuda12-plugin", "0.4.30")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.jax.cpu-build")
    # JAX does not load it at all: no GPU, so a FAIL. jaxlib stays; the plugin moves to it.
    assert f.status is Status.FAIL and "does not match jaxlib 0.4.31" in f.title
    assert f.fix is not None
    assert f.fix.commands == ["pip install jax-cuda12-plugin==0.4.31"]
    (step,) = f.fix.steps
    assert [(c.name, c.from_version, c.to_version) for c in step.changes] == [
        ("jax-cuda12-plugin", "0.4.30", "0.4.31")
    ]


def test_jax_cuda13_plugin_on_driver_535_fails_with_the_cuda12_plugin_as_way_out() -> None:
    env = fb.with_jax(fb.environment(), "0.8.0", plugin=13)
    f = the(fb.on(mb.driver_535_node(1), env), "frameworks.jax.cuda-driver")
    assert f.status is Status.FAIL
    assert f"Upgrade the NVIDIA driver to {min_driver('13.0')} or newer" in (
        f.fix.text if f.fix else ""
    )
    assert 'pip uninstall -y jax-cuda13-plugin jax-cuda13-pjrt && pip install -U "jax[cuda12]"' in (
        f.fix.text if f.fix else ""
    )
    env = fb.add(
        fb.with_jax(fb.environment(), "0.8.0", plugin=12), "nvidia-cuda-runtime-cu12", "12.9.79"
    )
    f = the(fb.on(builders.h100_node(1), env), "frameworks.jax.cuda-driver")
    assert f.status is Status.PASS and "12.9" in f.title


# --- frameworks.cupy.cuda-driver ----------------------------------------------------------------------------------


def test_cupy_for_cuda_13_on_driver_535_fails_with_the_install_answer_s_cuda_12_wheel() -> None:
    # compat/cupy.toml: the 14.2 line is the newest, publishes cupy-cuda12x with the [ctk]
    # extra and supports Python 3.11; driver 535 runs CUDA 12 (minor-version compatibility),
    # not 13. The fix is `gpucheck install cupy`'s answer for that machine, pinned to the line.
    env = fb.add(fb.environment(), "cupy-cuda13x", "13.6.0")
    f = the(fb.on(mb.driver_535_node(1), env), "frameworks.cupy.cuda-driver")
    assert f.status is Status.FAIL
    assert f.fix and f.fix.steps[-1].option == 1
    assert f.fix.commands[-1] == (
        "pip uninstall -y cupy-cuda13x && pip install 'cupy-cuda12x[ctk]==14.2.*'"
    )
    moved = {c.name: c for c in f.fix.steps[-1].changes}
    assert moved["cupy-cuda13x"].remove and moved["cupy-cuda12x"].requirement == "==14.2.*"


def test_cupy_switch_names_no_wheel_for_a_python_cupy_does_not_publish() -> None:
    # compat/cupy.toml: no CuPy line lists Python 3.7 (12.0, the oldest held, starts at 3.8):
    # no switch is named, only the driver upgrade.
    env = fb.add(fb.environment(version="3.7.17"), "cupy-cuda13x", "13.6.0")
    f = the(fb.on(mb.driver_535_node(1), env), "frameworks.cupy.cuda-driver")
    assert f.status is Status.FAIL and f.fix
    assert not any("pip install" in c for c in f.fix.commands)


def test_cupy_wheels_that_fit_the_driver_pass() -> None:
    env = fb.add(fb.add(fb.environment(), "cupy-cuda12x", "13.6.0"), "cupy-cuda102", "9.6.0")
    f = the(fb.on(mb.driver_535_node(1), env), "frameworks.cupy.cuda-driver")
    assert f.status is Status.PASS


# --- frameworks.library-shadowing --------------------------------------------------------------------


def _ld_cudnn(snap: Snapshot, version: str, folder: str = "/usr/local/cuda-12.1/lib64") -> Snapshot:
    snap.system.env["LD_LIBRARY_PATH"] = f"{folder}:/opt/tools/lib"
    snap.cudnn.libraries = [fb.ld_library_path_copy("cudnn", folder, version)]
    return snap


def test_an_older_cudnn_on_ld_library_path_than_torch_s_wheel_fails_with_the_cleaned_path() -> None:
    # cuDNN 9.0.0 before the nvidia-cudnn-cu12 9.1.0.70 torch 2.5.1+cu124 pins: torch refuses
    # a runtime cuDNN minor older than the one it was built with.
    snap = _ld_cudnn(fb.on(builders.h100_node(1), fb.torch_cu124()), "9.0.0")
    f = the(snap, "frameworks.library-shadowing")
    assert f.status is Status.FAIL
    assert "RUNPATH" in f.title and "older than the 9.1.0.70" in f.title
    assert any(
        "/usr/local/cuda-12.1/lib64/libcudnn.so.9 (cudnn 9.0.0, from its version call) comes "
        "before nvidia-cudnn-cu12 9.1.0.70 (required by torch 2.5.1+cu124): older" in e
        for e in f.evidence
    )
    assert f.fix and "export LD_LIBRARY_PATH=/opt/tools/lib" in f.fix.commands
    assert f.subjects.paths == ["/usr/local/cuda-12.1/lib64"]


def test_a_newer_cudnn_on_ld_library_path_than_torch_s_wheel_warns() -> None:
    snap = _ld_cudnn(fb.on(builders.h100_node(1), fb.torch_cu124()), "9.3.0")
    f = the(snap, "frameworks.library-shadowing")
    assert f.status is Status.WARN
    assert "RUNPATH" in f.title
    assert f.fix and "export LD_LIBRARY_PATH=/opt/tools/lib" in f.fix.text


def test_shadowing_confirmed_or_cleared_by_what_the_deep_pass_saw_loaded() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, loaded_libraries=["/usr/local/cuda-12.1/lib64/libcudnn.so.9.0.0"])
    f = the(
        _ld_cudnn(fb.on(builders.h100_node(1), env, deep=True), "9.0.0"),
        "frameworks.library-shadowing",
    )
    assert f.status is Status.FAIL and "confirmed" in f.title
    assert "torch loaded /usr/local/cuda-12.1/lib64/libcudnn.so.9.0.0 (doctor --deep)" in f.evidence
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, loaded_libraries=[f"{fb.site()}/nvidia/cudnn/lib/libcudnn.so.9"])
    f = the(
        _ld_cudnn(fb.on(builders.h100_node(1), env, deep=True), "9.0.0"),
        "frameworks.library-shadowing",
    )
    assert f.status is Status.INFO


def test_shadowing_is_not_judged_without_the_library_facts() -> None:
    snap = mb.probe(
        _ld_cudnn(fb.on(builders.h100_node(1), fb.torch_cu124()), "9.0.0"), "libraries", "timeout"
    )
    assert the(snap, "frameworks.library-shadowing").status is Status.SKIP


def test_same_version_or_another_soname_on_ld_library_path_does_not_shadow() -> None:
    assert (
        the(
            _ld_cudnn(fb.on(builders.h100_node(1), fb.torch_cu124()), "9.1.0"),
            "frameworks.library-shadowing",
        ).status
        is Status.PASS
    )
    assert (
        the(
            _ld_cudnn(fb.on(builders.h100_node(1), fb.torch_cu124()), "8.9.2"),
            "frameworks.library-shadowing",
        ).status
        is Status.PASS
    )


# --- frameworks.nvidia-conflicts --------------------------------------------------------------------------


def test_torch_and_tensorflow_pinning_different_cudnn_warn_naming_who_needs_what() -> None:
    env = fb.with_tensorflow(fb.environment())
    fb.with_torch(env, pins=fb.TORCH_251_CU124_PINS)  # pip installed torch last: its pins won
    f = the(fb.on(builders.h100_node(1), env), "frameworks.nvidia-conflicts")
    assert f.status is Status.WARN
    line = next(e for e in f.evidence if e.startswith("nvidia-cudnn-cu12 "))
    assert line == (
        "nvidia-cudnn-cu12 9.1.0.70 is installed: tensorflow 2.15.0 requires ==8.9.4.25 (not met); "
        "torch 2.5.1+cu124 requires ==9.1.0.70"
    )
    assert f.fix and "python3 -m venv ~/venvs/tensorflow" in f.fix.text
    assert "'tensorflow[and-cuda]==2.15.0'" in f.fix.text


def test_conflicts_fix_names_a_tensorflow_whose_pins_accept_torch_s() -> None:
    env = fb.with_tensorflow(fb.environment())
    fb.with_torch(env, "2.7.1+cu128", "12.8", pins=fb.TORCH_271_CU128_PINS)
    f = the(fb.on(builders.h100_node(1), env), "frameworks.nvidia-conflicts")
    assert f.status is Status.WARN
    assert (
        f.fix
        and "or install a TensorFlow whose pins agree: `pip install 'tensorflow[and-cuda]==2.20.0'`"
        in f.fix.text
    )
    # ... and with that TensorFlow, they agree.
    env = fb.with_tensorflow(fb.environment(), "2.20.0", cuda="12.5", cudnn="9")
    fb.with_torch(env, "2.7.1+cu128", "12.8", pins=fb.TORCH_271_CU128_PINS)
    f = the(fb.on(builders.h100_node(1), env), "frameworks.nvidia-conflicts")
    assert f.status is Status.PASS


def test_one_framework_alone_has_no_conflict_finding() -> None:
    assert (
        finding(fb.on(builders.h100_node(1), fb.torch_cu124()), "frameworks.nvidia-conflicts")
        is None
    )


# --- frameworks.device-count ----------------------------------------------------------------------------


def test_frameworks_seeing_every_gpu_pass_and_fewer_warn() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 8, version="2.5.1+cu124")
    f = the(fb.on(builders.h100_node(8), env, deep=True), "frameworks.device-count")
    assert f.status is Status.PASS and f.title == "torch 2.5.1+cu124 see(s) all 8 GPU(s)"
    env = fb.torch_cu124()
    fb.imported(env, "torch", 4, version="2.5.1+cu124")
    f = the(fb.on(builders.h100_node(8), env, deep=True), "frameworks.device-count")
    assert f.status is Status.WARN
    assert "torch 2.5.1+cu124 see(s) fewer GPUs than the 8" in f.title


def test_device_count_under_mig_is_not_compared_and_without_deep_says_nothing() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1)
    f = the(
        fb.on(builders.node([builders.a100_mig(0), builders.a100_mig(1)]), env, deep=True),
        "frameworks.device-count",
    )
    assert f.status is Status.PASS and "MIG" in f.title
    assert (
        finding(fb.on(builders.h100_node(8), fb.torch_cu124()), "frameworks.device-count") is None
    )
