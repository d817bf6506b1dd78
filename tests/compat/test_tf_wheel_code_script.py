"""scripts/tf_wheel_code.py, which read compat/tensorflow.toml's [[gpu_code]] rows from the wheels:
its pure parts, and a wheel of fat-binary libraries built here read whole (no network)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO
from support import fatbin_files as ff

from gpucheck.model.compiled_code import CompiledCode

# The build_info.py line of the tensorflow 2.3.0 wheel (as tests/support/wheel_files.py has it).
BUILD_INFO_23 = (
    "build_info = {'cuda_version': '10.1', 'cudnn_version': '7', 'cuda_compute_capabilities': "
    "['sm_35', 'sm_37', 'sm_52', 'sm_60', 'sm_61', 'compute_70'], 'is_cuda_build': True}\n"
)


@pytest.fixture(scope="module")
def script() -> ModuleType:
    path = REPO / "scripts" / "tf_wheel_code.py"
    spec = importlib.util.spec_from_file_location("tf_wheel_code", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("member", "wanted"),
    [
        ("tensorflow/python/_pywrap_tensorflow_internal.so", True),
        ("tensorflow/libtensorflow_framework.so.2", True),
        ("tensorflow/libtensorflow_cc.so.2.15.0", True),
        ("tensorflow/include/external/some.so.h", False),
        ("tensorflow/python/ops/gen_nn_ops.py", False),
        ("tensorflow/.so", False),
        ("tensorflow/libx.so.2.a", False),
    ],
)
def test_which_members_are_shared_libraries(script: ModuleType, member: str, wanted: bool) -> None:
    assert script.is_shared_library(member) is wanted


@pytest.mark.parametrize(
    ("member", "tensorflows"),
    [
        ("tensorflow/contrib/nccl/python/ops/_nccl_ops.so", True),
        (
            "tensorflow_gpu-1.7.0.data/purelib/tensorflow/python/_pywrap_tensorflow_internal.so",
            True,
        ),
        # tensorflow_gpu 1.7.0 bundles TensorRT's library, built by NVIDIA for its own list
        (
            "tensorflow_gpu-1.7.0.data/purelib/external/local_config_tensorrt/tensorrt/lib/"
            "libnvinfer.so.4",
            False,
        ),
        ("tensorflow/libcudart.so.12", False),
    ],
)
def test_bundled_third_party_libraries_are_not_tensorflows(
    script: ModuleType, member: str, tensorflows: bool
) -> None:
    assert script.is_tensorflow_library(member) is tensorflows


def test_union_is_every_architecture_once_in_capability_order(script: ModuleType) -> None:
    union = script.union_of(
        [
            CompiledCode(sass=("7.0", "10.0", "9.0a"), ptx=("9.0",)),
            CompiledCode(sass=("6.0", "7.0"), ptx=("8.0",)),
            CompiledCode(),
        ]
    )
    assert union == CompiledCode(sass=("6.0", "7.0", "9.0a", "10.0"), ptx=("8.0", "9.0"))


def test_build_info_capabilities_are_read_from_the_dict(script: ModuleType) -> None:
    assert script.claimed_capabilities(BUILD_INFO_23) == [
        "sm_35",
        "sm_37",
        "sm_52",
        "sm_60",
        "sm_61",
        "compute_70",
    ]
    assert script.claimed_capabilities("is_cuda_build = True\ncuda_version_number = '9.0'\n") == []


def _wheel(folder: Path) -> Path:
    wheel = folder / "tensorflow-2.3.0-cp38-cp38-manylinux2010_x86_64.whl"
    gpu = ff.library(sass=["3.5", "7.0"], ptx=["7.0"])
    kernels = ff.library(sass=["5.2", "9.0a"])
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tensorflow/python/_pywrap_tensorflow_internal.so", gpu)
        archive.writestr("tensorflow/libtensorflow_framework.so.2", ff.cpu_library())
        archive.writestr("tensorflow/python/kernels/_ops.so", kernels)
        archive.writestr("tensorflow/python/platform/build_info.py", BUILD_INFO_23)
        archive.writestr("tensorflow/__init__.py", "")
    return wheel


def test_a_wheel_is_read_library_by_library(script: ModuleType, tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    read = script.read_wheel_code(wheel)
    assert read.wheel == "tensorflow-2.3.0-cp38-cp38-manylinux2010_x86_64.whl"
    assert read.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert sorted(read.libraries) == [
        "tensorflow/python/_pywrap_tensorflow_internal.so",
        "tensorflow/python/kernels/_ops.so",
    ]  # the framework library has no fat binary: not listed
    assert read.union() == CompiledCode(sass=("3.5", "5.2", "7.0", "9.0a"), ptx=("7.0",))
    assert read.build_info[-1] == "compute_70"
    assert read.unreadable == []


def test_the_row_printed_for_a_wheel(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _wheel(tmp_path)
    assert script.main(["--wheel", str(wheel)]) == 0
    out = capsys.readouterr().out
    assert (
        '[[gpu_code]]\nversion = "2.3"\nsm = ["3.5", "5.2", "7.0", "9.0a"]\nptx = ["7.0"]\n' in out
    )
    assert "tensorflow-2.3.0-cp38-cp38-manylinux2010_x86_64.whl sha256:" in out
    assert "build_info = [" in out


def test_a_library_that_is_not_elf_is_reported_and_fails(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = tmp_path / "tensorflow-2.3.0-cp38-cp38-manylinux2010_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tensorflow/libbroken.so", b"not an ELF file")
    assert script.main(["--wheel", str(wheel)]) == 1
    assert "could not read tensorflow/libbroken.so" in capsys.readouterr().err


def test_no_wheel_at_the_path_is_a_usage_error(script: ModuleType, tmp_path: Path) -> None:
    assert script.main(["--wheel", str(tmp_path / "missing.whl")]) == 2
