"""The GPU code compiled into a build (SASS and PTX per architecture) and whether it covers
the GPUs present."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Protocol

from msgspec import Struct
from packaging.version import Version

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.driver_fit import Target, arch_name, targets
from gpucheck.checks.frameworks.per_environment import version_key
from gpucheck.compat import parse_version
from gpucheck.compat.frameworks import code_for, major_minor
from gpucheck.model.finding import Outcome

# --- compiled GPU architectures -------------------------------------------------------------------

# (Patterns as text: re compiles one on first use, not at every start-up.)
_ARCH = r"^(sm|compute)_([0-9]+)([0-9])([a-z]?)$"


class Compiled(Struct, frozen=True):
    """The GPU code in a build: SASS (runs on the same major at an equal or higher minor; an
    arch-specific 'a' build only on that exact GPU) and PTX (JIT-compiled for that compute
    capability and every newer one)."""

    sass: tuple[tuple[Version, bool], ...]  # (compute capability, arch-specific)
    ptx: tuple[Version, ...]
    source: str

    def covers(self, cc: str) -> str | None:
        """'sass', 'ptx' or None (no code for this GPU)."""
        return code_for(cc, self.sass, self.ptx)

    def where(self, cc: str) -> str:
        """Why a GPU has no code: newer than everything in the build, or dropped from it."""
        want = parse_version(cc)
        known = [v for v, _ in self.sass] + list(self.ptx)
        if want is None or not known:
            return "not compiled in"
        if want > max(known):
            return "newer than every architecture in this build"
        if want < min(known):
            return "older than this build supports (dropped)"
        return "not compiled in"

    def text(self) -> str:
        items = [f"sm_{v.major}{v.minor}{'a' if exact else ''}" for v, exact in self.sass]
        items += [f"compute_{v.major}{v.minor}" for v in self.ptx]
        return " ".join(items) or "nothing"


def parse_arch_list(items: Iterable[str], source: str) -> Compiled | None:
    """`sm_80`, `sm_90a`, `compute_90` entries (torch's arch flags, TensorFlow's build_info);
    None when there is none, or an entry in another form (not guessed at)."""
    sass: list[tuple[Version, bool]] = []
    ptx: list[Version] = []
    for item in items:
        match = re.match(_ARCH, item.strip())
        if match is None:
            return None
        kind, major, minor, suffix = match.groups()
        version = Version(f"{int(major)}.{minor}")
        if kind == "sm":
            sass.append((version, suffix == "a"))
        else:
            ptx.append(version)
    if not sass and not ptx:
        return None
    return Compiled(tuple(sass), tuple(ptx), source)


def compiled_from(sm: Iterable[str], ptx: Iterable[str], source: str) -> Compiled:
    """From the compat data's form ("8.0" lists)."""
    return Compiled(
        tuple((v, False) for v in map(parse_version, sm) if v is not None),
        tuple(v for v in map(parse_version, ptx) if v is not None),
        source,
    )


class Coverage(Struct):
    """How a build's compiled code meets the GPUs: per GPU without usable code, its compute
    capability and a line saying why; per GPU served only by PTX JIT, a line."""

    missing: list[tuple[str, str]]
    jit: list[str]

    @property
    def missing_ccs(self) -> list[str]:
        return sorted({cc for cc, _ in self.missing}, key=version_key)


def coverage(
    ctx: Context, compiled: Compiled, gpus: list[Target], build_cuda: str | None
) -> Coverage:
    """PTX counts only where the driver can JIT-compile it: a driver older than the build's
    CUDA cannot, so such a GPU has no usable code."""
    build, driver_cuda = major_minor(build_cuda), major_minor(ctx.driver_cuda)
    result = Coverage([], [])
    for gpu in gpus:
        how = compiled.covers(gpu.cc)
        name = f"{gpu.label}: {arch_name(ctx, gpu.cc)}"
        if how is None:
            result.missing.append((gpu.cc, f"{name}, {compiled.where(gpu.cc)}"))
        elif how == "ptx" and build and driver_cuda and build > driver_cuda:
            result.missing.append(
                (
                    gpu.cc,
                    f"{name}, only as PTX, which driver {ctx.driver_version} (CUDA "
                    f"{driver_cuda}) cannot JIT-compile for CUDA {build}",
                )
            )
        elif how == "ptx":
            result.jit.append(f"{name}, through PTX JIT compilation")
    return result


# --- the arch-support checks --------------------------------------------------------------------


class Build(Protocol):
    """What the arch-support checks read of a framework's build facts (TorchFacts, TfFacts)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str | None: ...
    @property
    def cuda(self) -> str | None: ...


class ArchReading(Struct):
    """What an arch-support check judges: the GPUs CUDA programs here would use, the build's
    compiled code, how that code meets them, and the evidence line saying where it was read."""

    found: list[Target]
    compiled: Compiled
    cover: Coverage
    evidence: list[str]


def read_arch(
    ctx: Context, build: Build, compiled_code: Callable[[], Compiled | None], *unknown: str
) -> ArchReading | Outcome | None:
    """The start every framework's arch-support check shares: nothing to judge (None) but a
    CUDA build with GPUs to target; a skip, with `unknown` saying why, where `compiled_code`
    (asked only then) does not know the build's architectures."""
    found = targets(ctx)
    if build.kind != "cuda" or not found:
        return None
    compiled = compiled_code()
    if compiled is None:
        return Outcome.skip(
            f"{build.name}: the GPU architectures compiled into it are not known", *unknown
        )
    evidence = [f"compiled for {compiled.text()} ({compiled.source})"]
    return ArchReading(found, compiled, coverage(ctx, compiled, found, build.cuda), evidence)
