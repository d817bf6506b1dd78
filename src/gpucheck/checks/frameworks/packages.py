"""pip metadata: Requires-Dist evaluated for an environment, and which NVIDIA pip package
holds which library."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.requirements import Requirement

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.per_environment import env_os
from gpucheck.compat import parse_version
from gpucheck.compat.frameworks import major_minor
from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.frameworks import FRAMEWORKS

# --- pip requirements ----------------------------------------------------------------------------

# Extras whose NVIDIA libraries a framework's GPU install brings (the rest are ignored).
GPU_EXTRAS = {dist: (extra,) for fw in FRAMEWORKS for dist, extra in fw.gpu_extras}


def parse_requirement(line: str) -> Requirement | None:
    """A Requires-Dist line, or None where it is not valid. packaging's parser is imported
    here, so that only runs with requirements to read pay for it: the start-up benchmark's
    `doctor --from --json` row (benchmarks/startup.py) has no room for it."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(line)
    except InvalidRequirement:
        return None


def load_parser() -> None:
    """Import packaging's requirement and marker parsers now rather than at the first
    requirement (a caller with time to spare, such as the doctor while its probes run)."""
    import packaging.markers
    import packaging.requirements  # noqa: F401


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503): lower case, runs of -_. as -."""
    return re.sub(r"[-_.]+", "-", name).lower()


def marker_environment(ctx: Context, env: PythonEnvironment) -> dict[str, str]:
    """PEP 508 marker values of the environment (Linux x86_64 where not known)."""
    from packaging.markers import default_environment

    values = {key: str(value) for key, value in default_environment().items()}
    os = env_os(ctx, env)
    system = {"linux": "Linux", "windows": "Windows", "darwin": "Darwin"}.get(os, "Linux")
    values.update(
        platform_system=system,
        sys_platform=env.platform or ("win32" if os == "windows" else os),
        os_name="nt" if os == "windows" else "posix",
        platform_machine=ctx.snapshot.system.arch or "x86_64",
    )
    if env.version and parse_version(env.version):
        py = major_minor(env.version)
        values.update(python_version=str(py), python_full_version=env.version)
    return values


def requirements_of(ctx: Context, env: PythonEnvironment, dist: Distribution) -> list[Requirement]:
    """The Requires-Dist lines that apply here: markers evaluated for this environment, extras
    ignored except the ones that bring the GPU libraries (tensorflow[and-cuda], ...)."""
    values = marker_environment(ctx, env)
    extras = GPU_EXTRAS.get(dist.name, ())
    found = []
    for line in dist.requires:
        req = parse_requirement(line)
        if req is None:
            continue
        if req.marker is None or any(
            _evaluates(req, {**values, "extra": extra}) for extra in ("", *extras)
        ):
            found.append(req)
    return found


def _evaluates(req: Requirement, values: dict[str, str]) -> bool:
    try:
        return req.marker is not None and bool(req.marker.evaluate(values))
    except Exception:  # a marker the environment cannot answer: not applied
        return False


def satisfies(req: Requirement, version: str) -> bool | None:
    parsed = parse_version(version)
    return None if parsed is None else req.specifier.contains(parsed, prereleases=True)


# Shared-library stems and the part of NVIDIA's pip package name that ships them.
LIBRARY_PACKAGES = {
    "libcudnn": "cudnn",
    "libcublasLt": "cublas",
    "libcublas": "cublas",
    "libcudart": "cuda-runtime",
    "libcufft": "cufft",
    "libcurand": "curand",
    "libcusolver": "cusolver",
    "libcusparseLt": "cusparselt",
    "libcusparse": "cusparse",
    "libnccl": "nccl",
    "libnvJitLink": "nvjitlink",
    "libnvrtc": "cuda-nvrtc",
    "libcupti": "cuda-cupti",
    "libnvToolsExt": "nvtx",
    "libcufile": "cufile",
}


def package_key(soname: str) -> str | None:
    """libcudnn.so.9 -> 'cudnn'; libcuda.so.1 (the driver's) -> None."""
    stem = soname.split(".so", 1)[0]
    return LIBRARY_PACKAGES.get(stem)


def is_package_for(name: str, key: str) -> bool:
    """nvidia-cudnn-cu12 (and CUDA 13's nvidia-cudnn-cu13, nvidia-cuda-runtime) for 'cudnn'..."""
    return re.fullmatch(rf"nvidia-{re.escape(key)}(-cu[0-9]+)?", name) is not None


def soname_major(path: str) -> str | None:
    match = re.search(r"\.so\.([0-9]+)", path)
    return match.group(1) if match else None


def same_version(a: str, b: str) -> bool:
    """Equal as far as both are precise: 9.1.0 == 9.1.0.70; 12.4 == 12.4.127; 8.9 != 9.1."""
    va, vb = parse_version(a), parse_version(b)
    if va is None or vb is None:
        return a == b
    n = min(len(va.release), len(vb.release), 3)
    return va.release[:n] == vb.release[:n]
