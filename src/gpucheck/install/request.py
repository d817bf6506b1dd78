"""What the user asked to install: `torch`, `torch==2.5.1`, `torch>=2.4,<2.6`,
`tensorflow[and-cuda]`; names read as packaging reads them, specifiers honoured."""

from __future__ import annotations

import re

from msgspec import Struct
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from gpucheck.install.machine import InstallError
from gpucheck.model.frameworks import CUPY, JAX, TENSORFLOW, TORCH, TORCH_EXTENSIONS

# torch and the extensions released in step with it (compat's pairing table): one index, one
# command. The other torch extensions (xformers, flash-attn, vllm, ...) have no builds in the
# compat data to choose from: named, never guessed. CuPy is asked for as `cupy` (the wheel is
# picked) or as one wheel, `cupy-cuda12x`; its ROCm wheels are not in the data.
TORCH_FAMILY = (TORCH.dist, *(e.dist for e in TORCH_EXTENSIONS if e.paired))
KNOWN = (*TORCH_FAMILY, TENSORFLOW.dist, JAX.dist, CUPY.dist)
UNRESOLVED = tuple(e.dist for e in TORCH_EXTENSIONS if not e.paired)


class Wanted(Struct, frozen=True):
    name: str  # canonical: "torch"
    spec: str  # "" or "==2.5.1", ">=2.4,<2.6"
    extras: tuple[str, ...] = ()

    @property
    def specifier(self) -> SpecifierSet:
        return SpecifierSet(self.spec)


def parse_wanted(texts: list[str]) -> list[Wanted]:
    """The PACKAGE arguments, in order, each once; a bad one is an InstallError (exit 2)."""
    if not texts:
        raise InstallError("name at least one package: gpucheck install torch")
    found: dict[str, Wanted] = {}
    for text in texts:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise InstallError(f"{text!r} is not a package requirement ({exc})") from None
        name = canonicalize_name(req.name)
        if req.url or req.marker:
            raise InstallError(f"{text!r}: give a name and version constraints only")
        if name.startswith("cupy-rocm"):
            raise InstallError(
                f"{name}: the compat data holds no CuPy ROCm builds (gpucheck judges NVIDIA GPUs)"
            )
        if name in UNRESOLVED:
            raise InstallError(
                f"{name}: the compat data holds no {name} builds to choose from; "
                f"gpucheck install resolves {', '.join(KNOWN)}"
            )
        if name not in KNOWN and not re.fullmatch(r"cupy-cuda\d+x?", name):
            raise InstallError(f"{name}: not one gpucheck install resolves ({', '.join(KNOWN)})")
        key = "cupy" if name.startswith("cupy") else name
        if key in found:
            raise InstallError(f"{name}: {'CuPy' if key == 'cupy' else name} is named twice")
        found[key] = Wanted(name, str(req.specifier), tuple(sorted(req.extras)))
    return list(found.values())


def pinned_requirement(name: str, line: str, spec: SpecifierSet) -> str:
    """`name==2.14.*`, or the user's own exact pin, or both constraints together."""
    exact = [s for s in spec if s.operator in ("==", "===") and "*" not in s.version]
    if exact:
        return f"{name}{exact[0].operator}{exact[0].version.split('+', 1)[0]}"
    star = SpecifierSet(f"=={line}.*")
    patches = [f"{line}.{n}" for n in range(20)]
    if all(spec.contains(p) for p in patches):
        return f"{name}{star}"  # the user's constraints hold for the whole line
    return f"{name}{','.join(sorted(str(s) for s in star & spec))}"
