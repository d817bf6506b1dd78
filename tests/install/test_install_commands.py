"""The commands `gpucheck install` prints: aimed at the environment it judged (`PY -m pip`,
`uv pip --python PY`), companions of a torch that stays installed from that torch's own index
(pip, uv pip, uv add, conda), conda's jaxlib and tensorflow pinned to their CUDA builds, and
the text with a snapshot's control characters escaped."""

from __future__ import annotations

import io

from support import framework_builders as fb

import gpucheck
from gpucheck.compat import load
from gpucheck.install.flow import answer_for
from gpucheck.install.machine import from_snapshot
from gpucheck.install.render import render_text
from gpucheck.install.request import parse_wanted
from gpucheck.model.snapshot import Snapshot

CU118 = "https://download.pytorch.org/whl/cu118"
VENV_PYTHON = "/home/user/.venv/bin/python"


def cu118_torch_and_an_old_torchvision() -> Snapshot:
    """torch 2.5.1+cu118 (PyTorch's cu118 index) with torchvision 0.19.1, built for 2.4.1."""
    env = fb.with_torch(fb.environment(), version="2.5.1+cu118", cuda="11.8")
    fb.add(env, "torchvision", "0.19.1", ["torch==2.4.1"])
    return fb.on(fb.pascal_workstation(), env)


def test_a_companion_moved_beside_a_kept_cu118_torch_comes_from_its_index_with_pip() -> None:
    answer = gpucheck.install_plan(["torchaudio"], cu118_torch_and_an_old_torchvision())
    assert answer.commands == [
        f"{VENV_PYTHON} -m pip install 'torchaudio==2.5.*' 'torchvision==0.20.*' "
        f"--index-url {CU118}"
    ]


def test_uv_pip_names_the_environment_and_the_kept_torchs_index() -> None:
    snap = cu118_torch_and_an_old_torchvision()
    answer = gpucheck.install_plan(["torchaudio"], snap, installer="uv-pip")
    assert answer.commands == [
        f"uv pip install --python {VENV_PYTHON} 'torchaudio==2.5.*' 'torchvision==0.20.*' "
        f"--index-url {CU118}"
    ]


def test_uv_add_sources_a_moved_companion_from_the_kept_torchs_index() -> None:
    snap = cu118_torch_and_an_old_torchvision()
    answer = gpucheck.install_plan(["torchaudio"], snap, installer="uv-add")
    assert answer.commands == ["uv add 'torchaudio==2.5.*' 'torchvision==0.20.*'"]
    assert answer.pyproject == (
        '[[tool.uv.index]]\nname = "pytorch-cu118"\nurl = "https://download.pytorch.org/whl/cu118"\n'
        "explicit = true\n\n[tool.uv.sources]\n"
        'torchaudio = [{ index = "pytorch-cu118" }]\ntorchvision = [{ index = "pytorch-cu118" }]\n'
    )


def test_conda_keeps_the_kept_torchs_channel_and_cuda() -> None:
    # torch 2.5 is the pytorch channel's last (pytorch/pytorch#138506): its CUDA 11.8 build.
    snap = cu118_torch_and_an_old_torchvision()
    answer = gpucheck.install_plan(["torchaudio"], snap, installer="conda")
    assert answer.commands == [
        "conda install torchaudio=2.5 torchvision=0.20 pytorch-cuda=11.8 -c pytorch -c nvidia"
    ]


def test_a_windows_environment_is_called_by_its_own_interpreter() -> None:
    env = fb.environment(prefix="C:\\Users\\me\\venv", platform="win32")
    answer = gpucheck.install_plan(["torch"], fb.on(fb.windows_workstation(), env))
    assert answer.commands[0].startswith("C:\\Users\\me\\venv\\Scripts\\python.exe -m pip install ")


def test_a_described_machine_keeps_a_bare_pip() -> None:
    answer = gpucheck.install_plan(["torch"], gpus=["RTX 5090"], driver="570.124.06", python="3.12")
    assert answer.commands == [
        "pip install 'torch==2.11.*' --index-url https://download.pytorch.org/whl/cu128"
    ]


def test_conda_pins_jaxlib_and_tensorflow_to_a_cuda_build() -> None:
    # conda-forge publishes CPU and CUDA builds of both; a solver may take the CPU one
    # (pangeo-data/pangeo-docker-images#549 pins `cuda120*` builds for that reason).
    jax = gpucheck.install_plan(
        ["jax"], gpus=["RTX 4090"], driver="580.95.05", python="3.12", installer="conda"
    )
    assert jax.commands == [
        "conda install -c conda-forge jax=0.12 'jaxlib=*=*cuda*' cuda-version=13"
    ]
    tf = gpucheck.install_plan(
        ["tensorflow"], gpus=["RTX 4090"], driver="580.95.05", python="3.12", installer="conda"
    )
    assert tf.commands == ["conda install -c conda-forge 'tensorflow=2.21=*cuda*' cuda-version=12"]
    cpu = gpucheck.install_plan(["tensorflow"], python="3.12", installer="conda")
    assert cpu.commands == ["conda install -c conda-forge tensorflow=2.21"]


def test_the_text_escapes_control_characters_from_a_snapshot() -> None:
    snap = fb.on(fb.pascal_workstation(), fb.torch_cu124())
    snap.nvml.gpus[0].name = "GTX\x1b]0;owned\x07 1080\nfake line"
    snap.environments[0].python = "/tmp/\x1b[2Jpy"
    compat = load()
    answer = answer_for(compat, from_snapshot(snap, compat), parse_wanted(["torch"]))
    out = io.StringIO()
    render_text(answer, out)
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    assert "GPUs: GTX\\x1b]0;owned\\x07 1080\\x0afake line (6.1); driver 580.95.05\n" in text
    assert "  Python 3.11 (/tmp/\\x1b[2Jpy), linux\n" in text
