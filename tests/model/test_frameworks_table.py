"""The framework table (model/frameworks.py) is the one place framework names live: the probe
scripts read it as gpucheck hands it to them, framework_deep.py probes the frameworks it marks,
and no other module keeps a list of its own."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.frameworks import (
    CUPY,
    FRAMEWORKS,
    JAX,
    TENSORFLOW,
    TENSORRT,
    TORCH,
    TORCH_EXTENSIONS,
    installed_extensions,
    installed_frameworks,
    static_probe_options,
)
from gpucheck.probes.scripts import framework_deep

SRC = Path(__file__).resolve().parents[2] / "src" / "gpucheck"
SCRIPT = SRC / "probes" / "scripts" / "framework_static.py"


def env_of(*names: str) -> PythonEnvironment:
    return PythonEnvironment(
        python="/usr/bin/python3",
        origin="gpucheck",
        distributions=[Distribution(name=n, version="1.0") for n in names],
    )


def test_names_and_variant_wheels() -> None:
    """Published wheel names: cupy-cuda12x and cupy-cuda102 install `cupy`
    (https://docs.cupy.dev/en/stable/install.html), tensorrt-cu12 installs `tensorrt`
    (https://pypi.org/project/tensorrt-cu12/), jax-cuda12-plugin is a plugin beside jax
    (https://docs.jax.dev/en/latest/installation.html)."""
    assert CUPY.owns("cupy-cuda12x") and CUPY.owns("cupy-cuda102") and CUPY.owns("cupy")
    assert CUPY.owns("cupy-rocm-5-0")
    assert not CUPY.owns("cupyx")
    assert TENSORRT.owns("tensorrt-cu12") and not TENSORRT.owns("tensorrt-cu12-libs")
    assert TENSORRT.related("tensorrt-cu12-libs") and TENSORRT.related("tensorrt-libs")
    assert not JAX.owns("jax-cuda12-plugin") and JAX.related("jax-cuda12-plugin")
    assert JAX.related("jax-cuda13-pjrt") and not JAX.related("jax-metal")
    assert TENSORFLOW.owns("tf-nightly-cpu") and TENSORFLOW.owns("tensorflow-intel")
    assert not TENSORFLOW.owns("tensorflow-estimator") and not TENSORFLOW.owns("tf-keras")
    assert set(TENSORFLOW.cpu_dists) <= set(TENSORFLOW.dists)
    assert (TORCH.dist, TENSORFLOW.dist, JAX.dist, CUPY.dist) == (
        "torch",
        "tensorflow",
        "jax",
        "cupy",
    )
    assert [fw.module for fw in FRAMEWORKS] == ["torch", "tensorflow", "jax", "cupy", "tensorrt"]


def test_what_the_deep_pass_imports() -> None:
    env = env_of("torch", "torchvision", "xformers", "triton", "cupy-cuda12x", "tensorrt-cu12")
    assert installed_frameworks(env) == ["torch", "cupy"]
    assert installed_extensions(env) == [
        ("torchvision", "torchvision"),
        ("xformers", "xformers.ops"),
        ("tensorrt", "tensorrt"),
    ]
    assert installed_frameworks(env_of("jax-cuda12-plugin", "numpy")) == []
    assert installed_frameworks(env_of("jaxlib")) == ["jax"]


def test_framework_deep_probes_the_frameworks_the_table_marks() -> None:
    assert set(framework_deep.PROBES) == {fw.key for fw in FRAMEWORKS if fw.deep == "probe"}
    assert set(framework_deep.PROBES) == {"torch", "tensorflow", "jax", "cupy"}


def _install(site: Path, name: str, requires: str = "") -> None:
    folder = site / f"{name.replace('-', '_')}-1.0.dist-info"
    folder.mkdir(parents=True)
    lines = [f"Name: {name}", "Version: 1.0"] + ([f"Requires-Dist: {requires}"] if requires else [])
    (folder / "METADATA").write_text("\n".join(lines) + "\n\n")


def test_the_static_probe_reads_what_the_table_names(tmp_path: Path) -> None:
    """The script's view is the table's: it keeps every distribution the table names (and the
    variant wheels its patterns match), their Requires-Dist where the table says so, and
    nothing else."""
    site = tmp_path / "site"
    names = sorted(
        {n for fw in FRAMEWORKS for n in fw.dists}
        | {e.dist for e in TORCH_EXTENSIONS}
        | {"numpy", "keras", "tf-keras", "pynvml", "py3nvml"}
        | {"cupy-cuda12x", "jax-cuda12-plugin", "tensorrt-cu12", "tensorrt-cu12-libs"}
        | {"nvidia-cudnn-cu12", "nvidia-ml-py"}
    )
    ignored = ["requests", "tensorflow-estimator", "cupyx", "jax-metal", "nvidia"]
    for name in names + ignored:
        _install(site, name, requires="nvidia-cublas-cu12==12.4.5.8")
    proc = subprocess.run(
        [sys.executable, "-S", str(SCRIPT), json.dumps(static_probe_options())],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site)},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)["facts"]
    assert facts["errors"] == [  # these torch and tensorflow have no build files
        f"torch: no torch/version.py in {site / 'torch'}",
        f"tensorflow: no tensorflow/python/platform/build_info.py in {site / 'tensorflow'}",
    ]
    found = {d["name"]: d["requires"] for d in facts["distributions"]}
    assert sorted(found) == names
    # Kept requirements: the frameworks and their variant wheels and plugins, the extensions
    # (the torch they pin) but apex and the tritons, pynvml (the nvidia-ml-py it wraps).
    no_requires = {
        "apex", "triton", "pytorch-triton", "numpy", "keras", "tf-keras", "py3nvml",
        "nvidia-cudnn-cu12", "nvidia-ml-py",
    }  # fmt: skip
    assert {n for n, r in found.items() if not r} == no_requires


def test_without_the_table_the_static_probe_says_so(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-S", str(SCRIPT)], capture_output=True, text=True, timeout=60, check=False
    )
    facts = json.loads(proc.stdout)["facts"]
    assert facts["distributions"] == []
    assert facts["errors"] == [
        "arguments: no distribution names to read (gpucheck passes its table)"
    ]


def _name_lists(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """Tuple, list and set literals of strings in a module: (line, strings)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            strings = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            found.append((node.lineno, [s for s in strings if isinstance(s, str)]))
    return found


def test_no_module_keeps_its_own_list_of_framework_names() -> None:
    """A literal naming three or more of the table's distributions is a copy of the table
    (the torch extension list once stood in three places, diverging)."""
    known = {n for fw in FRAMEWORKS for n in fw.dists} | {e.dist for e in TORCH_EXTENSIONS}
    copies = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "model" / "frameworks.py":
            continue
        for line, strings in _name_lists(ast.parse(path.read_text())):
            if len(known.intersection(strings)) >= 3:
                copies.append(f"{path.relative_to(SRC)}:{line}")
    assert copies == []
