"""conda's pytorch and tensorflow carry their CUDA variant in the build string, not in a local
version tag: where the framework's own build file (torch/version.py, TensorFlow's build_info)
was not read, the build string says whether it is a CUDA build, and which CUDA.

Every build string below is a literal from a public listing:
- pytorch channel: `pytorch 2.2.0 py3.10_cuda12.1_cudnn8.9.2_0 pytorch` and
  `pytorch-2.3.0-py3.10_cuda12.1_cudnn8.9.2_0.tar.bz2` (conda list / pixi.lock files on GitHub,
  https://conda.anaconda.org/pytorch/linux-64/pytorch-2.3.0-py3.10_cuda12.1_cudnn8.9.2_0.tar.bz2);
  `conda search pytorch -c pytorch`: `1.5.1 py3.7_cpu_0`, `1.5.1 py3.7_cuda10.1.243_cudnn7.6.3_0`,
  `1.5.1 py3.7_cuda10.2.89_cudnn7.6.5_0`; `pytorch 2.0.1 py3.10_cpu_0 pytorch` (conda list).
- conda-forge pytorch: `pytorch=2.3.1=cuda120_py311hf6aebf0_300` and
  `cuda118_py311h0047a46_300` (conda install specs on GitHub);
  `pytorch 2.1.0 cpu_generic_py311hf9c669c_2 conda-forge`
  (https://github.com/conda-forge/pytorch-cpu-feedstock/issues/212).
- conda-forge tensorflow: `tensorflow-base-2.17.0 | cuda120py311h013dac2_0 | conda-forge` and
  `tensorflow-base-2.19.1 | cpu_py311hf06be6a_55 | conda-forge` (conda install transactions on
  GitHub); `tensorflow-base-2.6.0-cuda111py39he6e9a3f_2.tar.bz2`
  (https://github.com/conda-forge/tensorflow-feedstock/pull/157);
  `tensorflow-base-2.10.0-cuda112py310hf679b68_0.tar.bz2` (conda search --info output);
  `tensorflow=2.6.0=cuda112py38hbe5352d_2` (MinwooPark96/ddpgRLRS README.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.compat.frameworks import conda_cpu, conda_cuda
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Status
from gpucheck.probes.scripts import conda_meta


@pytest.mark.parametrize(
    ("build", "cuda", "cpu"),
    [
        ("py3.10_cuda12.1_cudnn8.9.2_0", "12.1", False),  # pytorch channel
        ("py3.7_cuda10.1.243_cudnn7.6.3_0", "10.1", False),  # ... with the CUDA patch
        ("py3.7_cuda10.2.89_cudnn7.6.5_0", "10.2", False),
        ("py3.10_cpu_0", None, True),
        ("cuda120_py311hf6aebf0_300", "12.0", False),  # conda-forge pytorch
        ("cuda118_py311h0047a46_300", "11.8", False),
        ("cpu_generic_py311hf9c669c_2", None, True),
        ("cuda120py311h013dac2_0", "12.0", False),  # conda-forge tensorflow-base
        ("cuda111py39he6e9a3f_2", "11.1", False),
        ("cuda112py310hf679b68_0", "11.2", False),
        ("cpu_py311hf06be6a_55", None, True),
        ("cuda120py311h5a49573_202", "12.0", False),  # conda-forge jaxlib, as before
        ("py310_cu121", None, False),  # torchvision's: not this format
        ("py311h06a4308_0", None, False),  # a pure-Python package
        (None, None, False),  # pip's
    ],
)
def test_conda_build_strings_name_the_variant(
    build: str | None, cuda: str | None, cpu: bool
) -> None:
    assert conda_cuda(build) == cuda
    assert conda_cpu(build) is cpu


def test_the_probe_gives_conda_s_pytorch_and_tensorflow_base_their_build_strings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    for record in (
        "pytorch-2.3.0-py3.10_cuda12.1_cudnn8.9.2_0",
        "tensorflow-2.17.0-cuda120py311h51447cc_0",
        "tensorflow-base-2.17.0-cuda120py311h013dac2_0",
    ):
        (meta / f"{record}.json").write_text(json.dumps({"depends": []}))
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    dists: list[dict[str, object]] = [
        {"name": "torch", "version": "2.3.0"},
        {"name": "tensorflow", "version": "2.17.0"},
    ]
    errors: list[str] = []
    conda_meta.annotate(dists, frozenset(), errors)
    assert dists[0]["build"] == "py3.10_cuda12.1_cudnn8.9.2_0"
    assert dists[1]["build"] == "cuda120py311h013dac2_0"
    assert errors == []


def _conda_env(name: str, version: str, build: str) -> PythonEnvironment:
    """conda's framework without its build file read: the dist and its build string only."""
    env = fb.environment(prefix="/opt/conda/envs/ml", origin="conda", version="3.11.9")
    fb.add(env, name, version)
    dist = env.dist(name)
    assert dist is not None
    dist.build = build
    return env


def test_a_pytorch_channel_cuda_build_is_a_cuda_12_1_build() -> None:
    env = _conda_env("torch", "2.2.0", "py3.10_cuda12.1_cudnn8.9.2_0")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.cpu-build")
    assert f.status is Status.PASS and "CUDA 12.1" in f.title


def test_a_pytorch_channel_cuda_12_1_build_fails_on_a_cuda_11_4_driver() -> None:
    env = _conda_env("torch", "2.2.0", "py3.10_cuda12.1_cudnn8.9.2_0")
    snap = builders.node([builders.h100(0)], driver="470.82.01", cuda=11040)
    f = the(fb.on(snap, env), "frameworks.torch.cuda-driver")
    assert f.status is Status.FAIL and "CUDA 12.1" in f.title


def test_a_conda_forge_cpu_pytorch_is_a_cpu_build() -> None:
    env = _conda_env("torch", "2.1.0", "cpu_generic_py311hf9c669c_2")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.cpu-build")
    assert f.status is Status.FAIL
    assert "cpu_generic_py311hf9c669c_2" in " ".join([f.title, *f.evidence])


def test_a_conda_forge_cuda_tensorflow_is_a_cuda_12_0_build() -> None:
    env = _conda_env("tensorflow", "2.17.0", "cuda120py311h013dac2_0")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.cpu-build")
    assert f.status is Status.PASS and "CUDA 12.0" in f.title
    snap = builders.node([builders.h100(0)], driver="470.82.01", cuda=11040)
    f = the(fb.on(snap, env), "frameworks.tensorflow.cuda-driver")
    assert f.status is Status.FAIL
    assert "CUDA 12.0 from its conda build string" in " ".join(f.evidence)


def test_a_conda_forge_cpu_tensorflow_is_a_cpu_build() -> None:
    env = _conda_env("tensorflow", "2.19.1", "cpu_py311hf06be6a_55")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.cpu-build")
    assert f.status is Status.FAIL
    assert "cpu_py311hf06be6a_55" in " ".join([f.title, *f.evidence])
