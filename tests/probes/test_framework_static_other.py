"""The default (fast) framework pass on other frameworks, names and duplicate installs, and its
robustness against broken trees, odd interpreters and hostile files (the installed trees and
the probe run are in static_probe.py; the real files in wheel_files*.py)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import sys
from importlib import metadata as importlib_metadata
from pathlib import Path

from conftest import require_python38
from support.static_probe import (
    OPTIONS,
    SCRIPT,
    TORCH_1_13_1_CUDA_WHEELS,
    TRIPWIRE,
    TRIPWIRE_ENV,
    WHEEL_CP311,
    WHEEL_PURE,
    by_name,
    check_interpreter,
    clean_env,
    decode,
    dist,
    install,
    install_nvidia,
    install_plain,
    install_tensorflow,
    install_torch,
    make_venv,
    probe,
    requires_of,
    simple_metadata,
)
from support.wheel_files import (
    JAX_0_10_2_METADATA,
    JAXLIB_0_10_2_METADATA,
    NVIDIA_CUDNN_CU13_9_24_0_43_METADATA,
    TENSORFLOW_2_3_0_BUILD_INFO,
    TENSORFLOW_2_3_0_METADATA,
    TENSORFLOW_2_15_0_BUILD_INFO,
    TENSORFLOW_2_15_0_METADATA,
)
from support.wheel_files_torch import (
    TORCH_1_13_1_METADATA,
    TORCH_1_13_1_VERSION_PY,
    TORCH_2_5_1_METADATA,
    TORCH_2_5_1_VERSION_PY,
)

from gpucheck.child.run import run_script
from gpucheck.model.environments import PythonEnvironment

# --- other frameworks, names, duplicates ----------------------------------------------------------


def test_jax_cupy_and_the_names_that_matter(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install(
        venv.site,
        JAX_0_10_2_METADATA,
        {"jax/__init__.py": TRIPWIRE},
        top_level="jax\n",
        wheel=WHEEL_PURE,
    )
    install(
        venv.site, JAXLIB_0_10_2_METADATA, {"jaxlib/__init__.py": TRIPWIRE}, top_level="jaxlib\n"
    )
    # jax[cuda12] 0.4.35: the plugin and its PJRT runtime (their real Requires-Dist lines).
    plugin = simple_metadata(
        "jax-cuda12-plugin",
        "0.4.35",
        "jax-cuda12-pjrt==0.4.35",
        'nvidia-cublas-cu12>=12.1.3.1; extra == "with-cuda"',
        'nvidia-cudnn-cu12<10.0,>=9.1; extra == "with-cuda"',
    )
    install(
        venv.site,
        plugin.replace("jax-cuda12-plugin", "jax_cuda12_plugin", 1),
        {"jax_cuda12_plugin/__init__.py": TRIPWIRE},
        top_level="jax_cuda12_plugin\n",
    )
    install(
        venv.site,
        simple_metadata("jax-cuda12-pjrt", "0.4.35"),
        {"jax_plugins/xla_cuda12/__init__.py": TRIPWIRE},
        top_level="jax_plugins\n",
    )
    install(
        venv.site,
        simple_metadata("cupy-cuda12x", "13.3.0", "numpy<2.3,>=1.22", "fastrlock>=0.5"),
        {"cupy/__init__.py": TRIPWIRE},
        top_level="cupy\ncupy_backends\ncupyx\n",
    )
    install(
        venv.site,
        simple_metadata("tf_keras", "2.15.0", "tensorflow<2.16,>=2.15"),
        {"tf_keras/__init__.py": TRIPWIRE},
        top_level="tf_keras\n",
        wheel=WHEEL_PURE,
    )
    install(
        venv.site,
        NVIDIA_CUDNN_CU13_9_24_0_43_METADATA,
        {"nvidia/cu13/__init__.py": ""},
        top_level="nvidia\n",
    )
    install(
        venv.site,
        simple_metadata("nvidia-ml-py", "12.560.30"),
        {"pynvml.py": ""},
        top_level="pynvml\n",
        wheel=WHEEL_PURE,
    )
    for name, version in [
        ("numpy", "2.1.3"),
        ("scipy", "1.14.1"),
        ("ml_dtypes", "0.5.0"),
        ("opt_einsum", "3.4.0"),
        ("cuda-python", "12.6.0"),
        ("torchvision", "0.20.1"),
    ]:
        install_plain(venv.site, name, version)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert by_name(facts["distributions"]) == by_name(
        [
            dist("jax", "0.10.2", site, requires_of(JAX_0_10_2_METADATA)),
            dist("jaxlib", "0.10.2", site, requires_of(JAXLIB_0_10_2_METADATA)),
            dist("jax-cuda12-plugin", "0.4.35", site, requires_of(plugin)),
            dist("jax-cuda12-pjrt", "0.4.35", site),
            dist("cupy-cuda12x", "13.3.0", site, ["numpy<2.3,>=1.22", "fastrlock>=0.5"]),
            dist("tf-keras", "2.15.0", site),  # what it requires is not kept
            dist("nvidia-cudnn-cu13", "9.24.0.43", site),
            dist("nvidia-ml-py", "12.560.30", site),
            dist("numpy", "2.1.3", site),  # its C ABI (frameworks.numpy-abi)
            dist("torchvision", "0.20.1", site),  # an extension built against torch
        ]
    )
    assert facts["extensions"] == [
        {
            "name": "torchvision",
            "version": "0.20.1",
            "cuda": None,
            "torch": None,
            "cxx11_abi": None,
            "source": None,
        }
    ]
    assert facts["torch"] is None and facts["tensorflow"] is None
    assert facts["errors"] == []
    decode(facts)


def test_the_same_name_in_two_site_folders_is_listed_twice(tmp_path: Path) -> None:
    """An old torch in a folder on PYTHONPATH shadows the venv's: both listed, import order."""
    venv = make_venv(tmp_path / "venv")
    install_torch(venv.site, TORCH_2_5_1_METADATA, TORCH_2_5_1_VERSION_PY)
    # A leftover of an interrupted upgrade: the old dist-info beside the new one.
    install(
        venv.site,
        simple_metadata("torch", "2.4.0", "filelock"),
        top_level="functorch\ntorch\ntorchgen\n",
    )
    # pip's own stash of an uninstall it did not finish ("~orch"): pip ignores it, so do we.
    install(venv.site, simple_metadata("torch", "2.3.1"), folder="~orch-2.3.1.dist-info")
    other = (
        tmp_path
        / "home"
        / ".local"
        / "lib"
        / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        / "site-packages"
    )
    install_torch(other, TORCH_1_13_1_METADATA, TORCH_1_13_1_VERSION_PY)

    facts = probe(venv.python, tmp_path, PYTHONPATH=str(other))

    site, other_real = venv.site_real, os.path.realpath(other)
    assert facts["site_packages"] == [other_real, site]  # sys.path order
    dists = facts["distributions"]
    assert dists[0] == dist("torch", "1.13.1", other_real, requires_of(TORCH_1_13_1_METADATA))
    assert by_name(dists[1:]) == [
        dist("torch", "2.4.0", site, ["filelock"]),
        dist("torch", "2.5.1", site, requires_of(TORCH_2_5_1_METADATA)),
    ]
    # The build is the one `import torch` would load: the first on sys.path.
    assert facts["torch"]["version"] == "1.13.1+cu117"
    assert facts["torch"]["path"] == os.path.join(other_real, "torch", "version.py")
    assert facts["errors"] == []
    assert decode(facts).distributions[0].version == "1.13.1"


def test_a_source_checkout_installed_in_develop_mode(tmp_path: Path) -> None:
    """`python setup.py develop` in a PyTorch checkout: an egg-link and torch.egg-info there."""
    venv = make_venv(tmp_path / "venv")
    checkout = tmp_path / "pytorch"
    (checkout / "torch").mkdir(parents=True)
    (checkout / "torch" / "__init__.py").write_text(TRIPWIRE)
    # As tools/generate_torch_version.py writes it for a local CUDA build.
    (checkout / "torch" / "version.py").write_text(
        "from typing import Optional\n\n"
        "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
        "__version__ = '2.6.0a0+git1eba9b3'\n"
        "debug = False\n"
        "cuda: Optional[str] = '12.4'\n"
        "git_version = '1eba9b3aa3c43f86f4a2c807ac8e12c4a7767340'\n"
        "hip: Optional[str] = None\n"
    )
    egg_info = checkout / "torch.egg-info"
    egg_info.mkdir()
    (egg_info / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.6.0a0+git1eba9b3\nSummary: Tensors and Dynamic neural networks in Python with strong GPU acceleration\n"
    )
    (egg_info / "requires.txt").write_text(
        'filelock\ntyping-extensions>=4.8.0\nnetworkx\njinja2\nfsspec\n\n[:python_version >= "3.12"]\nsetuptools\n\n[opt-einsum]\nopt-einsum>=3.3\n'
    )
    (egg_info / "top_level.txt").write_text("functorch\ntorch\ntorchgen\n")
    (venv.site / "torch.egg-link").write_text(f"{checkout}\n.")
    (venv.site / "easy-install.pth").write_text(f"{checkout}\n")

    facts = probe(venv.python, tmp_path)

    where = os.path.realpath(checkout)
    assert facts["distributions"] == [
        dist(
            "torch",
            "2.6.0a0+git1eba9b3",
            where,
            [
                "filelock",
                "typing-extensions>=4.8.0",
                "networkx",
                "jinja2",
                "fsspec",
                'setuptools; python_version >= "3.12"',
                'opt-einsum>=3.3; extra == "opt-einsum"',
            ],
        )
    ]
    assert facts["torch"] == {
        "version": "2.6.0a0+git1eba9b3",
        "cuda": "12.4",
        "hip": None,
        "git_version": "1eba9b3aa3c43f86f4a2c807ac8e12c4a7767340",
        "path": os.path.join(where, "torch", "version.py"),
    }
    assert facts["errors"] == []


# --- robustness -----------------------------------------------------------------------------------


def test_build_files_are_parsed_never_run(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    run_me = (
        f"\nopen(__import__('os').environ[{TRIPWIRE_ENV!r}], 'a').write('executed ' + __file__)\n"
    )
    install_torch(venv.site, TORCH_2_5_1_METADATA, TORCH_2_5_1_VERSION_PY + run_me)
    install_tensorflow(venv.site, TENSORFLOW_2_15_0_METADATA, TENSORFLOW_2_15_0_BUILD_INFO + run_me)

    facts = probe(venv.python, tmp_path)  # checks that the tripwire file was never written

    assert facts["torch"]["cuda"] == "12.4"
    assert facts["tensorflow"]["cuda_version"] == "12.2"
    assert facts["errors"] == []


def test_broken_files_are_errors_not_a_crash(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    # A disk that filled up half-way through version.py.
    truncated = TORCH_2_5_1_VERSION_PY[: TORCH_2_5_1_VERSION_PY.index("'12.4'") + 3]
    install_torch(venv.site, TORCH_2_5_1_METADATA, truncated)
    # tensorflow's metadata, but its package folder removed by hand.
    install_tensorflow(venv.site, TENSORFLOW_2_15_0_METADATA, TENSORFLOW_2_15_0_BUILD_INFO)
    shutil.rmtree(venv.site / "tensorflow")
    # An interrupted install: an empty dist-info folder.
    (venv.site / "nvidia_cudnn_cu12-9.1.0.70.dist-info").mkdir()

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert by_name(facts["distributions"]) == [
        dist("tensorflow", "2.15.0", site, requires_of(TENSORFLOW_2_15_0_METADATA)),
        dist("torch", "2.5.1", site, requires_of(TORCH_2_5_1_METADATA)),
    ]
    assert facts["torch"] is None
    assert facts["tensorflow"] is None
    version_py = os.path.join(site, "torch", "version.py")
    errors = sorted(facts["errors"])
    assert len(errors) == 3, errors
    assert errors[0].startswith(
        f"distribution {os.path.join(venv.site, 'nvidia_cudnn_cu12-9.1.0.70.dist-info')}: no Name"
    ), errors
    assert (
        errors[1]
        == f"tensorflow: no tensorflow/python/platform/build_info.py in {os.path.join(site, 'tensorflow')}"
    )
    assert errors[2].startswith(f"torch: {version_py}: SyntaxError: "), errors
    env = decode(facts)
    assert env.torch is None and env.tensorflow is None


def test_an_environment_without_frameworks(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_plain(venv.site, "scipy", "1.14.1")

    facts = probe(venv.python, tmp_path)

    check_interpreter(facts, venv)
    assert facts["distributions"] == []
    assert facts["torch"] is None and facts["tensorflow"] is None
    assert facts["errors"] == []
    assert decode(facts) == PythonEnvironment(
        "x",
        "gpucheck",
        platform.python_version(),
        facts["prefix"],
        sys.platform,
        site_packages=[venv.site_real],
    )


def test_this_interpreter(tmp_path: Path) -> None:
    """gpucheck's own environment: nvidia-ml-py (a dependency) is there."""
    facts = probe(sys.executable, tmp_path)

    assert facts["version"] == platform.python_version()
    assert facts["prefix"] == sys.prefix
    assert facts["platform"] == sys.platform
    nvml = importlib_metadata.distribution("nvidia-ml-py")
    location = os.path.realpath(str(nvml.locate_file("")))
    assert dist("nvidia-ml-py", nvml.version, location) in facts["distributions"]
    assert location in facts["site_packages"]
    assert not any(p == str(SCRIPT.parent) for p in facts["site_packages"])
    decode(facts)


def test_the_child_protocol_reads_it(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_torch(venv.site, TORCH_2_5_1_METADATA, TORCH_2_5_1_VERSION_PY)

    env = clean_env(tmp_path)
    result = run_script(SCRIPT, [OPTIONS], timeout=60, python=str(venv.python), env=env)

    assert result.ok and result.status == "ok", result.describe(60)
    assert result.last_step == "extensions" and result.message == ""
    assert len(result.records) == 1 and result.records[0]["kind"] == "environment"
    facts = result.records[0]["facts"]
    assert isinstance(facts, dict) and facts["torch"]["cuda"] == "12.4"


def test_python_3_8(tmp_path: Path) -> None:
    """The oldest interpreter supported: torch 1.13.1 and tensorflow 2.3.0, both cp38 wheels."""
    venv = make_venv(tmp_path / "venv38", base=require_python38())
    install_torch(
        venv.site,
        TORCH_1_13_1_METADATA,
        TORCH_1_13_1_VERSION_PY,
        wheel=WHEEL_CP311.replace("cp311", "cp38"),
    )
    for name, version in TORCH_1_13_1_CUDA_WHEELS:
        install_nvidia(venv.site, name, version)
    install_tensorflow(venv.site, TENSORFLOW_2_3_0_METADATA, TENSORFLOW_2_3_0_BUILD_INFO)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert re.fullmatch(r"3\.8\.\d+", facts["version"])
    check_interpreter(facts, venv, version=facts["version"])
    assert site.endswith(os.path.join("lib", "python3.8", "site-packages"))
    assert by_name(facts["distributions"]) == by_name(
        [
            dist("torch", "1.13.1", site, requires_of(TORCH_1_13_1_METADATA)),
            dist("tensorflow", "2.3.0", site, requires_of(TENSORFLOW_2_3_0_METADATA)),
        ]
        + [dist(name, version, site) for name, version in TORCH_1_13_1_CUDA_WHEELS]
    )
    assert facts["torch"] == {
        "version": "1.13.1+cu117",
        "cuda": "11.7",
        "hip": None,
        "git_version": "49444c3e546bf240bed24a101e747422d1f8a0ee",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["tensorflow"] == {
        "is_cuda_build": True,
        "is_rocm_build": False,
        "cuda_version": "10.1",
        "cudnn_version": "7",
        "cuda_compute_capabilities": ["sm_35", "sm_37", "sm_52", "sm_60", "sm_61", "compute_70"],
        "path": os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    }
    assert facts["errors"] == []
    decode(facts)
