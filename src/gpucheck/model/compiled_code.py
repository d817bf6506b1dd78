"""The GPU code a compiled library carries, as its own fat binary lists it: SASS for some compute
capabilities (a GPU runs SASS of its own major and an equal or lower minor; an arch-specific
build, sm_90a, runs on that one capability only) and PTX, which the driver compiles for any GPU
of that capability or newer (CUDA C++ Programming Guide, "Binary Compatibility" and "PTX
Compatibility")."""

# No `from __future__ import annotations`: msgspec evaluates string annotations on first decode.
import re

from msgspec import Struct

ARCH = re.compile(r"\d{1,3}\.\d[af]?")  # "8.0", "9.0a", "10.0f": what the fat binary reader writes


class CompiledCode(Struct, frozen=True):
    """The architectures of one library's fat binary: "8.0" SASS for sm_80, "9.0a" for the
    arch-specific sm_90a; `ptx` the virtual architectures it carries PTX for."""

    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()

    def empty(self) -> bool:
        return not self.sass and not self.ptx

    def well_formed(self) -> bool:
        """Whether every architecture reads as one (a snapshot is input: "", "9.0aa")."""
        return all(ARCH.fullmatch(a) for a in (*self.sass, *self.ptx))


def _cc(text: str) -> tuple[int, int] | None:
    major, _, minor = text.rstrip("af").partition(".")
    if not (major.isdigit() and minor.isdigit()):
        return None
    return int(major), int(minor)


def sass_runs_on(arch: str, cc: str) -> bool:
    """Whether SASS built for `arch` ("8.0", "9.0a") runs on a GPU of compute capability `cc`."""
    built, gpu = _cc(arch), _cc(cc)
    if built is None or gpu is None:
        return False
    if arch.endswith("a"):  # arch-conditional features: that capability alone
        return built == gpu
    return built[0] == gpu[0] and built[1] <= gpu[1]


def ptx_runs_on(arch: str, cc: str) -> bool:
    """Whether PTX for virtual architecture `arch` can be compiled by the driver for `cc`."""
    built, gpu = _cc(arch), _cc(cc)
    if built is None or gpu is None:
        return False
    return built == gpu if arch.endswith("a") else built <= gpu  # compute_90a: sm_90 alone


def runs_on(code: CompiledCode, cc: str) -> bool:
    """Whether a GPU of compute capability `cc` has code to run in `code` (SASS or PTX)."""
    return any(sass_runs_on(a, cc) for a in code.sass) or any(ptx_runs_on(a, cc) for a in code.ptx)
