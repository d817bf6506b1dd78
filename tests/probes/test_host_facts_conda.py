"""conda-forge builds carry their CUDA variant in the build string, not in a local version tag:
read from conda-meta, a CUDA jaxlib is not taken for a CPU one, and the cuDNN
floor of its depends is judged. conda-forge/jaxlib-feedstock#285: `mamba install
jaxlib=*=*cuda120* jax=0.4.34 cuda-nvcc -c conda-forge -c nvidia` (0.4.31 worked), with
conda-forge's cudnn 9.3.0.75 in the environment. The build hashes below are stand-ins; the
cuda120py310 part is what conda-forge's build strings carry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Status
from gpucheck.probes.scripts import conda_meta

JAXLIB_BUILD = "cuda120py310h5d3c1a7_200"
DEPENDS = ["cudnn >=9.3.0.75,<10.0a0", "cuda-version >=12.0,<13", "python >=3.10,<3.11.0a0"]


def test_build_strings_and_library_depends_are_read_from_conda_meta(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    (meta / f"jaxlib-0.4.31-{JAXLIB_BUILD}.json").write_text(
        json.dumps({"name": "jaxlib", "depends": DEPENDS, "files": ["lib/x.so"]})
    )
    (meta / "cudnn-9.3.0.75-h93bb076_0.json").write_text("{}")
    (meta / "cuda-version-12.6-h7480c83_3.json").write_text("{}")
    (meta / "numpy-2.0.2-py310hd6e36ab_1.json").write_text("{}")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    dists: list[dict[str, object]] = [
        {"name": "jaxlib", "version": "0.4.31"},
        {"name": "numpy", "version": "1.26.4"},
    ]
    errors: list[str] = []
    libraries = conda_meta.annotate(dists, frozenset({"cudnn", "cuda-version"}), errors)
    assert libraries == {"cudnn": "9.3.0.75", "cuda-version": "12.6"}
    assert dists[0]["build"] == JAXLIB_BUILD
    assert dists[0]["conda_depends"] == ["cudnn >=9.3.0.75,<10.0a0", "cuda-version >=12.0,<13"]
    assert "build" not in dists[1]  # a pip numpy over conda's 2.0.2 is pip's
    assert errors == []


def _conda_jax(cudnn: str) -> PythonEnvironment:
    env = fb.environment(prefix="/opt/conda/envs/jax", origin="conda", version="3.10.15")
    fb.add(env, "jax", "0.4.31")
    fb.add(env, "jaxlib", "0.4.31")
    jaxlib = env.dist("jaxlib")
    assert jaxlib is not None
    jaxlib.build, jaxlib.conda_depends = JAXLIB_BUILD, DEPENDS[:2]
    env.conda_libraries = {"cudnn": cudnn, "cuda-version": "12.6"}
    return env


def test_a_conda_forge_cuda_jaxlib_is_a_cuda_build() -> None:
    f = the(fb.on(builders.h100_node(1), _conda_jax("9.3.0.75")), "frameworks.jax.cpu-build")
    assert f.status is Status.PASS
    assert "a CUDA jaxlib for CUDA 12" in f.title


def test_a_cudnn_below_the_conda_jaxlib_s_floor_fails_with_the_conda_install() -> None:
    f = the(fb.on(builders.h100_node(1), _conda_jax("9.1.1.17")), "frameworks.jax.cpu-build")
    assert f.status is Status.FAIL
    assert "needs cuDNN >=9.3.0.75,<10.0a0; conda's cudnn here is 9.1.1.17" in f.title
    assert f.fix and f.fix.commands == ["conda install -c conda-forge 'cudnn>=9.3.0.75,<10.0a0'"]
    assert [c.name for c in f.fix.steps[0].changes] == ["cudnn"]
