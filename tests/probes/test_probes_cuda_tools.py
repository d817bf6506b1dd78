"""The CUDA tools XLA compiles with and system TensorRT copies, found on disk: a pip
nvidia-cuda-nvcc layout, a toolkit, LD_LIBRARY_PATH. The tools are stand-in scripts printing
what the real ones print to --version (ptxas of CUDA 12.6.85, nvlink of 12.4.131)."""

from __future__ import annotations

import os
from pathlib import Path

from gpucheck.probes.cuda_tools import probe_cuda_tools, probe_tensorrt_libraries
from gpucheck.probes.libraries import SearchScope

PTXAS_12_6 = """ptxas: NVIDIA (R) Ptx optimizing assembler
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Fri_Dec__6_19:33:48_PST_2024
Cuda compilation tools, release 12.6, V12.6.85
Build cuda_12.6.r12.6/compiler.35059454_0
"""
NVLINK_12_4 = """nvlink: NVIDIA (R) Cuda linker
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Thu_Mar_28_02:14:54_PDT_2024
Cuda compilation tools, release 12.4, V12.4.131
Build cuda_12.4.r12.4/compiler.34097967_0
"""


def tool(path: Path, output: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}EOF\n")
    path.chmod(0o755)
    return path


def test_the_pip_ptxas_comes_first_then_path_and_the_toolkit(tmp_path: Path) -> None:
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    pip_ptxas = tool(site / "nvidia" / "cuda_nvcc" / "bin" / "ptxas", PTXAS_12_6)
    home = tmp_path / "cuda-12.4"
    tool(home / "bin" / "nvlink", NVLINK_12_4)
    toolkit_ptxas = tool(home / "bin" / "ptxas", PTXAS_12_6.replace("12.6", "12.4"))
    scope = SearchScope(env={"PATH": "/nonexistent"}, site_dirs=[site], cuda_homes=[home])

    found = probe_cuda_tools(scope, timeout=10)

    assert [(t.name, t.path, t.origin, t.version) for t in found] == [
        ("ptxas", str(pip_ptxas), "pip", "12.6.85"),
        ("ptxas", str(toolkit_ptxas), "cuda_home", "12.4.85"),
        ("nvlink", str(home / "bin" / "nvlink"), "cuda_home", "12.4.131"),
    ]


def test_a_tool_printing_nonsense_is_recorded_not_trusted(tmp_path: Path) -> None:
    home = tmp_path / "cuda"
    tool(home / "bin" / "ptxas", "segfault\n")
    scope = SearchScope(env={"PATH": "/nonexistent"}, cuda_homes=[home])
    (found,) = probe_cuda_tools(scope, timeout=10)
    assert found.version is None and found.error == "unrecognised output: 'segfault'"


def test_system_libnvinfer_copies_with_their_versions(tmp_path: Path) -> None:
    lib = tmp_path / "TensorRT-10.3.0.26" / "lib"
    lib.mkdir(parents=True)
    real = lib / "libnvinfer.so.10.3.0"
    real.write_bytes(b"\x7fELF")
    os.symlink(real.name, lib / "libnvinfer.so.10")
    (lib / "libnvinfer_plugin.so.10.3.0").write_bytes(b"\x7fELF")  # not the main library
    scope = SearchScope(env={"LD_LIBRARY_PATH": str(lib)}, use_ldconfig=False, system_dirs=())

    (copy,) = probe_tensorrt_libraries(scope)

    assert copy.path == str(lib / "libnvinfer.so.10")
    assert copy.realpath == str(real)
    assert (copy.version, copy.version_source, copy.on_loader_path) == ("10.3.0", "filename", True)
