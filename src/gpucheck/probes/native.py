"""CUDA driver API, CUDA runtime and cuDNN facts: discovery in-process, every library call in
a child process of its own (a libcuda that hangs in cuInit, a cuDNN that aborts the process
when a sub-library is missing), all children in parallel under one time bound."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpucheck.child.run import ChildResult, run_script, script
from gpucheck.model.decoding import DecodeError, from_dict
from gpucheck.model.snapshot import (
    LIBRARY_FAMILIES,
    CudaDriverFacts,
    CudaFacts,
    CudnnFacts,
    LibraryCopy,
    NvccFacts,
    ProbeRun,
)
from gpucheck.model.types import RunStatus
from gpucheck.probes.cuda_tools import probe_cuda_tools, probe_tensorrt_libraries, tool_version_of
from gpucheck.probes.libraries import SearchScope, cuda_homes, find_copies, ldconfig_cache

SCRIPT = script("gpucheck.probes", "native.py")


def _run_task(task: dict[str, object], timeout: float, env: Mapping[str, str]) -> ChildResult:
    return run_script(SCRIPT, [json.dumps([task])], timeout, env=dict(env), stdlib_only=True)


def _task_result(result: ChildResult) -> dict[str, object] | None:
    for record in result.records:
        value = record.get("result")
        if isinstance(value, dict):
            return value
    return None


def probe_cuda_driver(
    timeout: float, env: Mapping[str, str], init: bool = True, why_not: str | None = None
) -> tuple[CudaDriverFacts, ProbeRun]:
    task = {"id": "cuda_driver", "kind": "cuda_driver", "init": init}
    result = _run_task(task, timeout, env)
    data = _task_result(result)
    facts = CudaDriverFacts()
    if data is not None:
        try:
            facts = from_dict(CudaDriverFacts, data)
        except DecodeError as exc:
            return facts, ProbeRun("cuda_driver", "error", result.duration_ms, str(exc))
    if why_not and facts.init_skipped_reason:
        facts.init_skipped_reason = f"cuInit not called: {why_not}"
    problem = result.describe(timeout)
    if problem is None and data is not None and "error" in data:
        problem = str(data["error"])
    status: RunStatus = (
        "ok" if problem is None else (result.status if result.status != "ok" else "error")
    )
    return facts, ProbeRun("cuda_driver", status, result.duration_ms, problem, result.failure)


def ask_versions(
    copies: list[LibraryCopy], timeout: float, env: Mapping[str, str]
) -> dict[str, ChildResult]:
    """Each library asked its own version, each in its own child: results by real path."""
    if not copies:
        return {}
    child_env = dict(env)
    # All side by side, so that many hung copies cost one time bound, not one each.
    with ThreadPoolExecutor(max_workers=min(32, len(copies))) as pool:
        results = pool.map(
            lambda c: _run_task(
                {"id": c.realpath, "kind": c.name, "path": c.realpath}, timeout, child_env
            ),
            copies,
        )
        return {c.realpath: r for c, r in zip(copies, results, strict=True)}


def probe_library_versions(
    copies: list[LibraryCopy], timeout: float, env: Mapping[str, str]
) -> None:
    """Ask each library its own version, each in its own child; failures become load_error."""
    apply_versions(copies, ask_versions(copies, timeout, env), timeout)


def apply_versions(
    copies: list[LibraryCopy], results: Mapping[str, ChildResult], timeout: float
) -> None:
    """What each copy said of its version; a copy that could not be asked gets load_error."""
    for copy in copies:
        result = results.get(copy.realpath)
        if result is None:
            continue
        data = _task_result(result)
        problem = result.describe(timeout)
        if data is not None and "error" in data:
            problem = str(data["error"])
        if problem:
            copy.load_error = problem
            continue
        if data is None:
            continue
        version = data.get("version")
        if isinstance(version, str):
            # The call says major.minor for cudart; a file name or wheel with the full version
            # that agrees says more, so it is kept and the source notes both.
            agrees = copy.version is not None and (
                copy.version == version or copy.version.startswith(version + ".")
            )
            if agrees and copy.version_source not in (None, "call"):
                copy.version_source = f"{copy.version_source}+call"
            elif not agrees:
                copy.version, copy.version_source = version, "call"
        cuda_version = data.get("cuda_version")
        if isinstance(cuda_version, str):
            copy.cuda_version = cuda_version


def probe_nvcc(env: Mapping[str, str], homes: list[Path], timeout: float = 10) -> NvccFacts | None:
    path = shutil.which("nvcc", path=env.get("PATH", os.defpath))
    for home in homes:
        if path:
            break
        candidate = home / "bin" / "nvcc"
        if os.access(candidate, os.X_OK):
            path = str(candidate)
    if not path:
        return None
    # The toolkit the nvcc on PATH belongs to (/usr/local/bin/nvcc is often a link into one).
    root = os.path.dirname(os.path.dirname(os.path.realpath(path)))
    is_toolkit = os.path.isfile(os.path.join(root, "include", "cuda.h"))  # not a bare wrapper
    version, error = tool_version_of(path, timeout)
    return NvccFacts(path=path, version=version, toolkit=root if is_toolkit else None, error=error)


def probe_cuda_and_cudnn(
    scope: SearchScope,
    timeout: float,
    xla: Callable[[], bool] = lambda: True,
    site_dirs: Callable[[], list[Path]] | None = None,
) -> tuple[CudaFacts, CudnnFacts, list[ProbeRun]]:
    """Runtime, cuDNN and nvcc facts, the tools XLA uses and system TensorRT copies (the
    driver API is probed separately, in parallel). `site_dirs`, where given, says the site
    folders once they are known (--python's come from the frameworks probe): nvcc and the
    loader cache do not wait for them."""
    start = time.monotonic()
    homes, home, source = cuda_homes(scope.env)
    if not scope.cuda_homes:
        scope.cuda_homes = homes
    with ThreadPoolExecutor(max_workers=4) as pool:
        nvcc = pool.submit(probe_nvcc, scope.env, scope.cuda_homes, timeout)
        cache = pool.submit(ldconfig_cache) if scope.use_ldconfig else None
        if cache is not None:
            cache.result()  # (find_copies reads it: one `ldconfig -p`, not two at once)
        early = None
        if site_dirs is not None:
            # The copies outside the site folders to come are asked their versions now (the
            # frameworks probe takes tens of milliseconds to name --python's folders).
            known = find_copies("cudart", scope) + find_copies("cudnn", scope)
            early = pool.submit(ask_versions, known, timeout, scope.env)
            scope.site_dirs = site_dirs()
        runtimes = find_copies("cudart", scope)
        cudnn = find_copies("cudnn", scope)
        asked = early.result() if early is not None else {}
        late = [c for c in runtimes + cudnn if c.realpath not in asked]
        versions = pool.submit(ask_versions, late, timeout, scope.env)
        # The other libraries' versions come from their file names or wheels' metadata: none
        # is loaded (a version call each would cost a child per copy, for little more).
        others = [c for family in LIBRARY_FAMILIES for c in find_copies(family, scope)]
        # ptxas and nvlink matter only to XLA (TensorFlow, JAX): not run where neither is.
        tools = pool.submit(lambda: probe_cuda_tools(scope, timeout) if xla() else [])
        cuda = CudaFacts(
            runtimes=runtimes, libraries=others, cuda_home=home, cuda_home_source=source
        )
        if cache is not None and (entries := cache.result()):
            cuda.libcuda_cache = {n: entries.get(n, []) for n in ("libcuda.so.1", "libcuda.so")}
        if home is not None:
            cuda.cuda_home_nvcc = os.access(os.path.join(home, "bin", "nvcc"), os.X_OK)
        cuda.tensorrt = probe_tensorrt_libraries(scope)
        apply_versions(runtimes + cudnn, {**asked, **versions.result()}, timeout)
        cuda.ptxas = tools.result()
        cuda.nvcc = nvcc.result()
    duration = round((time.monotonic() - start) * 1000, 1)
    # A copy that cannot be loaded is a fact about that copy (its load_error, judged by the
    # library checks), not a failure of the probe: the scan itself completed.
    return cuda, CudnnFacts(libraries=cudnn), [ProbeRun("libraries", "ok", duration)]
