"""JAX's and CuPy's installed builds as facts the checks share: jaxlib and its CUDA plugins,
the CUDA and cuDNN a monolithic jaxlib's local tag names, CuPy's wheel names."""

from __future__ import annotations

import re

from msgspec import Struct

from gpucheck.compat.frameworks import JaxData, JaxRelease, conda_cuda
from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.frameworks import JAX

# (Patterns as text: re compiles one on first use, not at every start-up.)
_JAX_PLUGIN = r"^jax-cuda([0-9]+)-(plugin|pjrt)$"
_JAXLIB_CUDA = r"\+cuda([0-9]+)"


class JaxFacts(Struct, frozen=True):
    jaxlib: str | None
    plugins: tuple[Distribution, ...]  # jax-cudaNN-plugin / -pjrt
    monolithic: int | None  # CUDA major of a jaxlib+cudaNN.cudnnMM wheel
    monolithic_cuda: str | None = None  # its CUDA as the tag says it: "11.2" (+cuda112), "11"

    @property
    def majors(self) -> list[int]:
        found = {int(m.group(1)) for d in self.plugins if (m := re.match(_JAX_PLUGIN, d.name))}
        if self.monolithic is not None:
            found.add(self.monolithic)
        return sorted(found)

    @property
    def name(self) -> str:
        return f"jaxlib {self.jaxlib}" if self.jaxlib else "jax (no jaxlib)"


def jax_facts(env: PythonEnvironment) -> JaxFacts | None:
    jax, jaxlib = (env.dist(name) for name in JAX.dists)
    plugins = tuple(d for d in env.distributions if re.match(_JAX_PLUGIN, d.name))
    if jax is None and jaxlib is None and not plugins:
        return None
    version = jaxlib.version if jaxlib else None
    cuda = jaxlib_cuda(version) or conda_cuda(jaxlib.build if jaxlib else None)
    return JaxFacts(version, plugins, int(cuda.split(".")[0]) if cuda else None, cuda)


def jaxlib_cuda(version: str | None) -> str | None:
    """The CUDA a monolithic jaxlib's local tag names. The 0.1.x wheels wrote MAJOR and MINOR
    run together (+cuda112: CUDA 11.2, +cuda102: 10.2, +cuda92: 9.2); later ones the major
    alone (+cuda11.cudnn82: CUDA 11, +cuda12.cudnn89: 12). Never "CUDA 112"."""
    match = re.search(_JAXLIB_CUDA, version or "")
    if match is None:
        return None
    digits = match.group(1)
    if len(digits) == 3:
        return f"{int(digits[:2])}.{digits[2]}"
    if len(digits) == 2 and int(digits) >= 90:
        return f"{digits[0]}.{digits[1]}"
    return str(int(digits))


_JAXLIB_WHEEL = r"\+cuda[0-9]+\.(cudnn[0-9]+)$"


def jaxlib_built(jax: JaxData, version: str | None) -> tuple[str, JaxRelease] | None:
    """The CUDA toolkit a monolithic jaxlib whose tag names the CUDA major only (+cuda11.cudnn82)
    was built with, from the compat data, with the row saying so: 0.1.74+cuda11.cudnn82 -> 11.4.
    None where the tag is not of that kind or the data does not know the wheel."""
    match = re.search(_JAXLIB_WHEEL, version or "")
    row = jax.release(version) if match and version else None
    built = row.cuda_built.get(match.group(1)) if row and match else None
    return (built, row) if built and row else None


_JAXLIB_CUDNN = r"\+cuda[0-9]+\.cudnn([0-9])([0-9]+)$"


def jaxlib_cudnn(version: str | None) -> str | None:
    """The cuDNN a monolithic jaxlib was built for, the least it loads: 0.4.14+cuda11.cudnn86
    -> 8.6; the 0.1.x tag cudnn805 -> 8.0.5."""
    match = re.search(_JAXLIB_CUDNN, version or "")
    if match is None:
        return None
    major, rest = match.groups()
    if len(rest) == 2 and rest.startswith("0"):
        return f"{major}.0.{rest[1]}"
    return f"{major}.{int(rest)}"


_CUPY = r"^cupy-cuda([0-9]+?)(x|[0-9])$"


def cupy_cuda(name: str) -> tuple[str, bool] | None:
    """cupy-cuda12x -> ('12.0', True: any 12.x); cupy-cuda102 -> ('10.2', False)."""
    match = re.match(_CUPY, name)
    if match is None:
        return None
    major, rest = match.groups()
    return (f"{int(major)}.0", True) if rest == "x" else (f"{int(major)}.{rest}", False)
