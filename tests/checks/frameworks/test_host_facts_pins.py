"""A PyTorch fix that respects what pins torch: the Requires-Dist of
xformers 0.0.28.post3 and vLLM 0.6.4.post1 (PyPI metadata: both `torch==2.5.1`). The same
version's CUDA build keeps their pins; a newer torch names them: xformers in the same command
(download.pytorch.org carries it), vLLM (PyPI only) in the step's text; every step names the
distributions it changes."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Status

PINNERS = {"xformers": "0.0.28.post3", "vllm": "0.6.4.post1"}


def _with_pinners(env: PythonEnvironment) -> PythonEnvironment:
    for name, version in PINNERS.items():
        fb.add(env, name, version, ["torch==2.5.1"])
    return env


def test_the_same_torch_s_cuda_build_keeps_what_pins_it() -> None:
    env = _with_pinners(fb.torch_cpu(version="2.5.1+cpu"))
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.cpu-build")
    assert f.fix is not None
    step = f.fix.steps[0]
    assert step.command is not None and " torch==2.5.1+cu124 " in step.command
    assert "xformers 0.0.28.post3 (torch==2.5.1)" in step.text
    assert "vllm 0.6.4.post1 (torch==2.5.1)" in step.text
    assert [c.name for c in step.changes] == ["torch"]


def test_a_newer_torch_from_pypi_moves_every_pinner_in_the_same_command() -> None:
    # torch 2.5.1 has no sm_120 code; on driver 590 the newest fit is PyPI's own wheel.
    env = _with_pinners(fb.with_torch(fb.environment(), pins=fb.TORCH_251_CU124_PINS))
    f = the(fb.on(fb.blackwell_workstation(), env), "frameworks.torch.arch-support")
    assert f.status is Status.FAIL and f.fix is not None
    step = next(s for s in f.fix.steps if s.command and "pip install" in s.command)
    assert step.command is not None and step.command.endswith("'torch==2.15.*' xformers vllm")
    assert {c.name for c in step.changes} >= {"torch", "xformers", "vllm"}


def test_a_newer_torch_from_its_index_names_what_the_index_lacks() -> None:
    # Driver 570 (CUDA 12.8): the fit is a cu128 build from download.pytorch.org, which
    # carries xformers but not vLLM.
    env = _with_pinners(fb.with_torch(fb.environment(), pins=fb.TORCH_251_CU124_PINS))
    snap = builders.node([fb.rtx_5090()], driver="570.124.06", cuda=12080)
    snap.system.nvidia_module_version = "570.124.06"
    f = the(fb.on(snap, env), "frameworks.torch.arch-support")
    assert f.status is Status.FAIL and f.fix is not None
    step = next(s for s in f.fix.steps if s.command and "pip install" in s.command)
    assert step.command is not None and " xformers --index-url " in step.command
    assert "vllm" not in step.command
    assert "vllm 0.6.4.post1 (torch==2.5.1) pin the old torch" in step.text
    assert {c.name for c in step.changes} >= {"torch", "xformers", "vllm"}


# tf-keras 2.15.0 and tensorflow-text 2.12.1 pin their TensorFlow line (PyPI metadata:
# "tensorflow<2.16,>=2.15" and "tensorflow<2.13,>=2.12.0").
def test_tensorflow_s_same_line_keeps_tf_keras_and_a_newer_line_moves_tensorflow_text() -> None:
    env = fb.tensorflow_cpu(version="2.15.0")
    fb.add(env, "tf-keras", "2.15.0", ["tensorflow<2.16,>=2.15"])
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.cpu-build")
    step = next(s for s in f.fix.steps if s.command) if f.fix else None
    assert step is not None and step.command is not None
    assert "tensorflow[and-cuda]==2.15" in step.command and "tf-keras" not in step.command
    env = fb.tensorflow_cpu(version="2.12.0")
    fb.add(env, "tensorflow-text", "2.12.1", ["tensorflow<2.13,>=2.12.0"])
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.cpu-build")
    step = next(s for s in f.fix.steps if s.command) if f.fix else None
    assert step is not None and step.command is not None
    assert step.command.endswith(" tensorflow-text")
    assert "tensorflow-text 2.12.1 (tensorflow<2.13,>=2.12.0) move with it" in step.text
    assert "tensorflow-text" in [c.name for c in step.changes]
