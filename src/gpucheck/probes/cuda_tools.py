"""The CUDA tools XLA compiles with (ptxas, nvlink) and system TensorRT (libnvinfer) copies.

XLA (TensorFlow, JAX) compiles its kernels to PTX and hands them to `ptxas`: the one in the
pip `nvidia-cuda-nvcc-cu*` wheel beside it, else the first on PATH, else the CUDA toolkit's.
A ptxas newer than the driver writes code the driver cannot load ("the provided PTX was
compiled with an unsupported toolchain"). Each tool's `--version` is run with a time bound.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from gpucheck.model.snapshot import LibraryCopy, ToolVersion
from gpucheck.probes.libraries import SearchScope, find_copies

TOOLS = ("ptxas", "nvlink")


def _candidates(name: str, env: Mapping[str, str], scope: SearchScope) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for site in scope.site_dirs:
        # nvidia-cuda-nvcc-cu12: nvidia/cuda_nvcc/bin/ptxas; CUDA 13's wheel: nvidia/cu13/bin
        for tool in sorted(site.glob(f"nvidia/*/bin/{name}")):
            found.append((str(tool), "pip"))
    on_path = shutil.which(name, path=env.get("PATH", os.defpath))
    if on_path:
        found.append((on_path, "path"))
    for home in scope.cuda_homes:
        candidate = home / "bin" / name
        if os.access(candidate, os.X_OK):
            found.append((str(candidate), "cuda_home"))
    seen: set[str] = set()
    unique = []
    for path, origin in found:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            unique.append((path, origin))
    return unique


def tool_version(name: str, path: str, origin: str, timeout: float) -> ToolVersion:
    version, error = tool_version_of(path, timeout)
    return ToolVersion(name=name, path=path, origin=origin, version=version, error=error)


def probe_cuda_tools(scope: SearchScope, timeout: float = 10) -> list[ToolVersion]:
    """Every ptxas and nvlink XLA may use, each asked its version, side by side."""
    from concurrent.futures import ThreadPoolExecutor

    found = [
        (name, path, origin)
        for name in TOOLS
        for path, origin in _candidates(name, scope.env, scope)
    ]
    if not found:
        return []
    with ThreadPoolExecutor(max_workers=len(found)) as pool:
        return list(pool.map(lambda f: tool_version(f[0], f[1], f[2], timeout), found))


def probe_tensorrt_libraries(scope: SearchScope) -> list[LibraryCopy]:
    """System libnvinfer copies (the pip wheels are judged from their metadata); the version
    comes from the file name (libnvinfer.so.10.3.0)."""
    copies = find_copies("nvinfer", scope)
    return [c for c in copies if c.origin != "pip" and "tensorrt_libs" not in Path(c.path).parts]


def tool_version_of(path: str, timeout: float) -> tuple[str | None, str | None]:
    """(version, why not) of a CUDA tool that answers `--version` as nvcc does (nvcc, ptxas,
    nvlink), bounded in time."""
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    version = parse_nvcc_version(out.stdout)
    if version is None:
        return None, f"unrecognised output: {(out.stdout or out.stderr).strip()[:200]!r}"
    return version, None


def parse_nvcc_version(text: str) -> str | None:
    """'Cuda compilation tools, release 12.4, V12.4.131' -> '12.4.131'."""
    match = re.search(r"release ([0-9]+\.[0-9]+), V([0-9]+\.[0-9]+(?:\.[0-9]+)*)", text)
    if match:
        return match.group(2)
    match = re.search(r"release ([0-9]+\.[0-9]+)", text)
    return match.group(1) if match else None
