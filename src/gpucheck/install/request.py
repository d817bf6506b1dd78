"""What the user asked to install: `torch`, `torch==2.5.1`, `torch>=2.4,<2.6`,
`tensorflow[and-cuda]`; names read as packaging reads them, specifiers honoured."""

from __future__ import annotations

from msgspec import Struct
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from gpucheck.install.machine import InstallError

TORCH_FAMILY = ("torch", "torchvision", "torchaudio")  # one index, one command
KNOWN = (*TORCH_FAMILY, "tensorflow", "jax")
# Extensions whose pins on torch the compat data does not hold: named, never guessed.
UNRESOLVED = ("xformers", "flash-attn", "vllm", "cupy")


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
        if name in UNRESOLVED:
            raise InstallError(
                f"{name}: the compat data holds no {name} builds to choose from; "
                f"gpucheck install resolves {', '.join(KNOWN)}"
            )
        if name not in KNOWN:
            raise InstallError(f"{name}: not one gpucheck install resolves ({', '.join(KNOWN)})")
        if name in found:
            raise InstallError(f"{name} is named twice")
        found[name] = Wanted(name, str(req.specifier), tuple(sorted(req.extras)))
    return list(found.values())
