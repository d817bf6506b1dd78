"""The default (fast) framework pass, probes/scripts/framework_static.py run by a target
interpreter, on torch and tensorflow installs. Each test lays out an installed tree the way pip
installs real wheels (the package files, then NAME-VERSION.dist-info with METADATA, WHEEL,
INSTALLER, top_level.txt and RECORD) inside a real virtual environment, and runs the script
with that environment's own Python (static_probe.py). Unless a comment says otherwise, metadata
headers, torch/version.py and build_info.py are byte for byte those of the real wheels their
names give (wheel_files*.py)."""

from __future__ import annotations

import email.parser
import os
import zipfile
from pathlib import Path

import pytest
from support.static_probe import (
    TENSORFLOW_2_15_0_CUDA_WHEELS,
    TORCH_1_13_1_CUDA_WHEELS,
    TORCH_2_5_1_CUDA_WHEELS,
    TORCH_CPU_WHEEL,
    TRIPWIRE,
    WHEEL_PURE,
    by_name,
    check_interpreter,
    decode,
    dist,
    install,
    install_nvidia,
    install_plain,
    install_tensorflow,
    install_torch,
    install_torch_2_5_1_stack,
    make_venv,
    probe,
    requires_of,
    simple_metadata,
)
from support.wheel_files import (
    KERAS_3_15_1_METADATA,
    TENSORFLOW_2_3_0_BUILD_INFO,
    TENSORFLOW_2_3_0_METADATA,
    TENSORFLOW_2_15_0_BUILD_INFO,
    TENSORFLOW_2_15_0_METADATA,
    TENSORFLOW_CPU_2_21_0_BUILD_INFO,
    TENSORFLOW_CPU_2_21_0_METADATA,
    TENSORFLOW_GPU_2_2_0_BUILD_INFO,
    TENSORFLOW_GPU_2_2_0_METADATA,
    TENSORFLOW_WINDOWS_BUILD_INFO,
)
from support.wheel_files_torch import (
    TORCH_1_13_1_METADATA,
    TORCH_1_13_1_VERSION_PY,
    TORCH_2_5_1_METADATA,
    TORCH_2_5_1_ROCM_METADATA,
    TORCH_2_5_1_ROCM_VERSION_PY,
    TORCH_2_13_0_CPU_METADATA,
    TORCH_2_13_0_CPU_VERSION_PY,
)

from gpucheck.model.environments import Distribution, TensorflowBuild, TorchBuild

# --- torch ------------------------------------------------------------------------------------


def test_torch_cuda_build_and_its_cuda_wheels(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_torch_2_5_1_stack(venv.site)

    facts = probe(venv.python, tmp_path)

    check_interpreter(facts, venv)
    site = venv.site_real
    # Only what matters is listed; requirements only for the framework, verbatim.
    assert by_name(facts["distributions"]) == by_name(
        [dist("torch", "2.5.1", site, requires_of(TORCH_2_5_1_METADATA))]
        + [dist(name, version, site) for name, version in TORCH_2_5_1_CUDA_WHEELS]
        + [dist("triton", "3.1.0", site)]
    )
    torch_dist = next(d for d in facts["distributions"] if d["name"] == "torch")
    assert (
        'nvidia-cudnn-cu12 (==9.1.0.70) ; platform_system == "Linux" and platform_machine == "x86_64"'
        in torch_dist["requires"]
    )
    assert "opt-einsum (>=3.3) ; extra == 'opt-einsum'" in torch_dist["requires"]
    assert len(TORCH_2_5_1_CUDA_WHEELS) == 12
    # The dist says 2.5.1; the build says which CUDA.
    assert facts["torch"] == {
        "version": "2.5.1+cu124",
        "cuda": "12.4",
        "hip": None,
        "git_version": "a8d6afb511a69687bbb2b7e88a3cf67917e1697e",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["tensorflow"] is None
    assert facts["errors"] == []

    env = decode(facts)
    assert env.torch == TorchBuild(
        "2.5.1+cu124",
        "12.4",
        None,
        "a8d6afb511a69687bbb2b7e88a3cf67917e1697e",
        os.path.join(site, "torch", "version.py"),
    )
    assert env.dist("nvidia-cudnn-cu12") == Distribution("nvidia-cudnn-cu12", "9.1.0.70", site, [])
    torch = env.dist("torch")
    assert torch is not None and torch.requires == requires_of(TORCH_2_5_1_METADATA)
    assert env.site_packages == [site] and env.tensorflow is None


def test_torch_1_13_plain_assignments(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_torch(venv.site, TORCH_1_13_1_METADATA, TORCH_1_13_1_VERSION_PY)
    for name, version in TORCH_1_13_1_CUDA_WHEELS:
        install_nvidia(venv.site, name, version)
    install_plain(venv.site, "typing_extensions", "4.7.1")

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert by_name(facts["distributions"]) == by_name(
        [dist("torch", "1.13.1", site, requires_of(TORCH_1_13_1_METADATA))]
        + [dist(name, version, site) for name, version in TORCH_1_13_1_CUDA_WHEELS]
    )
    assert {n for n, _ in TORCH_1_13_1_CUDA_WHEELS} == {
        "nvidia-cuda-runtime-cu11",
        "nvidia-cudnn-cu11",
        "nvidia-cublas-cu11",
        "nvidia-cuda-nvrtc-cu11",
    }
    assert facts["torch"] == {
        "version": "1.13.1+cu117",
        "cuda": "11.7",
        "hip": None,
        "git_version": "49444c3e546bf240bed24a101e747422d1f8a0ee",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["errors"] == []
    assert decode(facts).torch == TorchBuild(
        "1.13.1+cu117",
        "11.7",
        None,
        "49444c3e546bf240bed24a101e747422d1f8a0ee",
        os.path.join(site, "torch", "version.py"),
    )


def test_torch_cpu_build(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_torch(venv.site, TORCH_2_13_0_CPU_METADATA, TORCH_2_13_0_CPU_VERSION_PY)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert (venv.site / "torch-2.13.0+cpu.dist-info").is_dir()  # the local version in the name
    assert facts["distributions"] == [
        dist("torch", "2.13.0+cpu", site, requires_of(TORCH_2_13_0_CPU_METADATA))
    ]
    assert facts["torch"] == {
        "version": "2.13.0+cpu",
        "cuda": None,
        "hip": None,
        "git_version": "cf30153c4c131c8164ee7798e5022d810682e2cb",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["errors"] == []
    assert decode(facts).torch == TorchBuild(
        "2.13.0+cpu",
        None,
        None,
        "cf30153c4c131c8164ee7798e5022d810682e2cb",
        os.path.join(site, "torch", "version.py"),
    )


def test_torch_rocm_build(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_torch(venv.site, TORCH_2_5_1_ROCM_METADATA, TORCH_2_5_1_ROCM_VERSION_PY)
    install(
        venv.site,
        simple_metadata("pytorch-triton-rocm", "3.1.0", "filelock"),
        {"triton/__init__.py": TRIPWIRE},
        top_level="triton\n",
    )

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    # ROCm's Triton is not NVIDIA's business: not listed.
    assert facts["distributions"] == [
        dist("torch", "2.5.1+rocm6.2", site, requires_of(TORCH_2_5_1_ROCM_METADATA))
    ]
    assert facts["torch"] == {
        "version": "2.5.1+rocm6.2",
        "cuda": None,
        "hip": "6.2.41133-dd7f95766",
        "git_version": "a8d6afb511a69687bbb2b7e88a3cf67917e1697e",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["errors"] == []
    build = decode(facts).torch
    assert build is not None and build.hip == "6.2.41133-dd7f95766"


@pytest.mark.skipif(
    not TORCH_CPU_WHEEL.is_file(), reason=f"{TORCH_CPU_WHEEL} is not on this machine"
)
def test_the_real_cpu_wheels_own_files(tmp_path: Path) -> None:
    """version.py and the whole dist-info folder taken out of the real wheel, unchanged."""
    venv = make_venv(tmp_path / "venv")
    with zipfile.ZipFile(TORCH_CPU_WHEEL) as wheel:
        members = [
            n
            for n in wheel.namelist()
            if n == "torch/version.py" or n.startswith("torch-2.13.0+cpu.dist-info/")
        ]
        wheel.extractall(venv.site, members)
        real_metadata = wheel.read("torch-2.13.0+cpu.dist-info/METADATA").decode()
    (venv.site / "torch" / "__init__.py").write_text(TRIPWIRE)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    requires = email.parser.HeaderParser().parsestr(real_metadata).get_all("Requires-Dist")
    assert facts["distributions"] == [dist("torch", "2.13.0+cpu", site, requires)]
    assert requires and 'pyyaml; extra == "pyyaml"' in requires
    assert facts["torch"] == {
        "version": "2.13.0+cpu",
        "cuda": None,
        "hip": None,
        "git_version": "cf30153c4c131c8164ee7798e5022d810682e2cb",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["errors"] == []
    assert decode(facts).dist("torch") == Distribution("torch", "2.13.0+cpu", site, requires)


# --- tensorflow ---------------------------------------------------------------------------------


def test_tensorflow_2_15_dict_with_compute_capabilities(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    # `pip install tensorflow[and-cuda]==2.15.0`
    install_tensorflow(venv.site, TENSORFLOW_2_15_0_METADATA, TENSORFLOW_2_15_0_BUILD_INFO)
    for name, version in TENSORFLOW_2_15_0_CUDA_WHEELS:
        install_nvidia(venv.site, name, version)
    install(
        venv.site,
        simple_metadata("keras", "2.15.0", summary="Deep learning for humans."),
        {"keras/__init__.py": TRIPWIRE},
        top_level="keras\n",
        wheel=WHEEL_PURE,
    )
    install_plain(venv.site, "tensorboard", "2.15.2", "absl-py>=0.4")
    install_plain(venv.site, "tensorflow-estimator", "2.15.0")
    install_plain(venv.site, "tensorflow-io-gcs-filesystem", "0.37.1")
    install_plain(venv.site, "tensorrt", "8.6.1.post1")

    facts = probe(venv.python, tmp_path)

    check_interpreter(facts, venv)
    site = venv.site_real
    assert by_name(facts["distributions"]) == by_name(
        [
            dist("tensorflow", "2.15.0", site, requires_of(TENSORFLOW_2_15_0_METADATA)),
            dist("keras", "2.15.0", site),
            dist("tensorrt", "8.6.1.post1", site),  # read for the TensorRT checks
        ]
        + [dist(name, version, site) for name, version in TENSORFLOW_2_15_0_CUDA_WHEELS]
    )
    tf_requires = next(d for d in facts["distributions"] if d["name"] == "tensorflow")["requires"]
    assert "nvidia-cudnn-cu12 (==8.9.4.25) ; extra == 'and-cuda'" in tf_requires
    assert facts["tensorflow"] == {
        "is_cuda_build": True,
        "is_rocm_build": False,
        "cuda_version": "12.2",
        "cudnn_version": "8",
        "cuda_compute_capabilities": ["sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "path": os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    }
    assert facts["torch"] is None
    assert facts["errors"] == []
    assert decode(facts).tensorflow == TensorflowBuild(
        True,
        False,
        "12.2",
        "8",
        ["sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    )


def test_tensorflow_2_3_plain_dict(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_tensorflow(venv.site, TENSORFLOW_2_3_0_METADATA, TENSORFLOW_2_3_0_BUILD_INFO)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert facts["distributions"] == [
        dist("tensorflow", "2.3.0", site, requires_of(TENSORFLOW_2_3_0_METADATA))
    ]
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


def test_tensorflow_gpu_2_2_module_level_variables(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_tensorflow(venv.site, TENSORFLOW_GPU_2_2_0_METADATA, TENSORFLOW_GPU_2_2_0_BUILD_INFO)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert (venv.site / "tensorflow_gpu-2.2.0.dist-info").is_dir()
    assert facts["distributions"] == [
        dist("tensorflow-gpu", "2.2.0", site, requires_of(TENSORFLOW_GPU_2_2_0_METADATA))
    ]
    assert (
        'backports.weakref (>=1.0rc1) ; python_version < "3.4"'
        in facts["distributions"][0]["requires"]
    )
    assert facts["tensorflow"] == {
        "is_cuda_build": True,
        "is_rocm_build": False,
        "cuda_version": "10",
        "cudnn_version": "7",
        "cuda_compute_capabilities": [],
        "path": os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    }
    assert facts["errors"] == []
    assert decode(facts).tensorflow == TensorflowBuild(
        True,
        False,
        "10",
        "7",
        [],
        os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    )


def test_tensorflow_cpu_build(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_tensorflow(venv.site, TENSORFLOW_CPU_2_21_0_METADATA, TENSORFLOW_CPU_2_21_0_BUILD_INFO)
    install(
        venv.site,
        KERAS_3_15_1_METADATA,
        {"keras/__init__.py": TRIPWIRE},
        top_level="keras\n",
        wheel=WHEEL_PURE,
    )

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    # "tensorflow_cpu" in its metadata, normalised; it installs the same tensorflow/ folder.
    assert by_name(facts["distributions"]) == [
        dist("keras", "3.15.1", site),
        dist("tensorflow-cpu", "2.21.0", site, requires_of(TENSORFLOW_CPU_2_21_0_METADATA)),
    ]
    assert facts["tensorflow"] == {
        "is_cuda_build": False,
        "is_rocm_build": False,
        "cuda_version": None,
        "cudnn_version": None,
        "cuda_compute_capabilities": [],
        "path": os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    }
    assert facts["errors"] == []
    assert decode(facts).tensorflow == TensorflowBuild(
        False,
        False,
        None,
        None,
        [],
        os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    )


def test_windows_build_info_dll_suffixes_are_read_as_versions(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_tensorflow(
        venv.site,
        simple_metadata("tensorflow-gpu", "2.10.0", "numpy>=1.20"),
        TENSORFLOW_WINDOWS_BUILD_INFO,
    )

    facts = probe(venv.python, tmp_path)

    assert facts["tensorflow"]["cuda_version"] == "11.2"
    assert facts["tensorflow"]["cudnn_version"] == "8"
    assert facts["tensorflow"]["is_cuda_build"] is True
    assert facts["tensorflow"]["cuda_compute_capabilities"] == [
        "sm_35",
        "sm_50",
        "sm_60",
        "sm_70",
        "sm_75",
        "compute_80",
    ]
    assert facts["errors"] == []
