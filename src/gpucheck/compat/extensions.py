"""Extensions built against torch (compat/extensions.toml): which torchvision / torchaudio go
with which torch, which framework releases are built against NumPy 2, and which GPUs the kernel
packages' builds carry code for.

The TensorRT releases (compat/tensorrt.toml) are read here too: a TensorRT wheel is another
layer built against a CUDA major and a range of GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from msgspec import Struct
from packaging.version import Version

from gpucheck.compat.rows import CompatError, Releases, Rows, parse_version
from gpucheck.model.compiled_code import ptx_runs_on, sass_runs_on


def matches(version: str, prefix: str) -> bool:
    """'0.20.1' matches '0.20' and '0.20.1', not '0.2'; local tags (+cu124) are ignored."""
    base = version.split("+", 1)[0]
    return base == prefix or base.startswith(prefix + ".")


class Pairing(Struct, frozen=True):
    package: str  # torchvision | torchaudio
    torch: str  # a release line ("2.5") or an exact release ("2.4.1")
    versions: tuple[str, ...]  # the extension versions built for it (prefixes)
    and_later: bool  # also works with every later torch (a stable-ABI build)
    source: str

    def covers_torch(self, torch: str) -> bool:
        if matches(torch, self.torch):
            return True
        have, low = parse_version(torch.split("+", 1)[0]), parse_version(self.torch)
        return self.and_later and have is not None and low is not None and have >= low


class NumpyAbi(Struct, frozen=True):
    package: str  # torch | tensorflow
    numpy2_from: Version  # the first release built against NumPy 2
    platform: str | None  # None: every platform; "windows": that one (overrides)
    numpy1_builds: tuple[str, ...]  # later releases built against NumPy 1 on that platform
    source: str


class KernelArchs(Struct, frozen=True):
    """The GPU code a kernel package's CUDA build carries, from a release: SASS per compute
    capability ("8.0"; "9.0a" an arch-specific build) and PTX the driver compiles for newer GPUs."""

    package: str
    start: Version  # the TOML's `from`: holds until the package's next row
    # SASS: "8.0" runs on 8.x from 8.0 up, never on another major; "9.0a" on 9.0 alone.
    archs: tuple[str, ...]
    cuda_for: dict[str, str]  # arch -> the lowest build CUDA that adds it
    wheel_cuda: str | None  # the CUDA the release's prebuilt wheels are built with
    instead: str  # what to use on a GPU no release covers
    source: str
    # The source states a lowest compute capability, not a list (vLLM's installation docs):
    # the build runs on archs[0] and every newer GPU.
    and_newer: bool = False
    # PTX for these virtual archs: the driver compiles it for a GPU of that capability or newer.
    ptx: tuple[str, ...] = ()

    def runs_on(self, cc: str) -> str | None:
        """The arch whose SASS, or else whose PTX, runs on compute capability `cc`, or None."""
        sass = next((a for a in self.archs if sass_runs_on(a, cc)), None)
        if sass is not None:
            return sass
        jit = next((a for a in reversed(self.ptx) if ptx_runs_on(a, cc)), None)
        if jit is not None:
            return jit
        have, lowest = parse_version(cc), parse_version(self.archs[0])
        if self.and_newer and have and lowest and have >= lowest:
            return self.archs[0]
        return None

    def carried(self) -> str:
        """The GPUs this build has code for, in words."""
        if self.and_newer:
            return f"compute capability {self.archs[0]} and newer"
        listed = f"compute capability {', '.join(self.archs)}"
        if self.ptx:
            # The lowest PTX reaches every newer GPU; SASS below it stays a list.
            return f"{listed} and, through PTX, {min(self.ptx, key=_cc_order)} and newer"
        return f"{listed} only"


def _cc_order(arch: str) -> tuple[int, int]:
    version = parse_version(arch.rstrip("af"))
    return (version.major, version.minor) if version else (0, 0)


def _is_arch(text: str) -> bool:
    """ "8.0", or an arch-specific "9.0a" / family "10.0f" build."""
    base = text[:-1] if text.endswith(("a", "f")) else text
    major, dot, minor = base.partition(".")
    return bool(dot) and major.isdigit() and minor.isdigit()


class KernelLibrary(Struct, frozen=True):
    """The compiled library a kernel package cannot run without (vLLM's _C): its own fat binary,
    read from the install, says which GPUs the package runs on (optional kernels never decide)."""

    package: str
    files: tuple[str, ...]  # globs on the distribution's RECORD paths ("vllm/_C.*.so")
    # "any": each match is a library the package may load (one covers a GPU that any runs on);
    # "torch-cuda": it loads the one named for torch's CUDA build (libbitsandbytes_cuda124.so);
    # "by-gpu": it loads the one `by_gpu` names for the GPU's compute capability.
    pick: str
    instead: str  # what to use on a GPU no build of it carries code for
    source: str
    # "by-gpu": compute capability ("9.0", or "other": every one not named) -> the glob of the
    # library loaded there; where none is installed, the `files` globs it does not name.
    by_gpu: dict[str, str] = {}
    # "torch-cuda": the first release that loads the nearest library of torch's CUDA major
    # where none is named for torch's CUDA (before it: that one library, or no GPU code).
    fallback_from: Version | None = None

    def matcher(self, globs: Iterable[str] | None = None) -> re.Pattern[str]:
        """One pattern for `globs` (default: `files`), whose `*` stays inside one folder
        (fnmatch's crosses `/`: "vllm/_C.*.so" would match "vllm/_C./../../outside.so")."""
        words = [
            "".join("[^/]*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", g))
            for g in (self.files if globs is None else globs)
        ]
        return re.compile("(?:" + "|".join(words) + r")\Z")


LIBRARY_PICKS = ("any", "torch-cuda", "by-gpu")


class CudaCheck(Struct, frozen=True):
    """What an extension's own import-time check refuses: a torch built for another CUDA
    "minor" (major.minor) or "major" only, from release `start` until the package's next row."""

    package: str
    start: Version
    refuses: str  # minor | major
    source: str


class ExtensionData(Struct):
    pairings: list[Pairing]
    numpy: list[NumpyAbi]
    kernels: list[KernelArchs] = []
    libraries: list[KernelLibrary] = []
    cuda_checks: list[CudaCheck] = []

    def library(self, package: str) -> KernelLibrary | None:
        """The row naming the library that decides whether `package` runs on a GPU."""
        return next((k for k in self.libraries if k.package == package), None)

    def cuda_check(self, package: str, version: str) -> CudaCheck | None:
        """The row that holds for this release of `package` (local tags ignored)."""
        have = parse_version(version.split("+", 1)[0])
        rows = [c for c in self.cuda_checks if c.package == package and have and c.start <= have]
        return max(rows, key=lambda c: c.start) if rows else None

    def kernel_archs(self, package: str, version: str) -> KernelArchs | None:
        """The row that holds for this release of `package` (local tags ignored)."""
        have = parse_version(version.split("+", 1)[0])
        rows = [k for k in self.kernels if k.package == package and have and k.start <= have]
        return max(rows, key=lambda k: k.start) if rows else None

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> ExtensionData:
        rows = Rows(path, data)
        pairings = []
        for r in rows.table("pairing"):
            r.version("torch")  # validates it
            pairings.append(r.struct(Pairing))
        numpy = [r.struct(NumpyAbi, optional=("numpy1_builds",)) for r in rows.table("numpy_abi")]
        kernels = []
        for r in rows.table("kernel_archs"):
            row = r.struct(KernelArchs, optional=("ptx",), start=r.version("from"))
            if not row.archs or not all(_is_arch(a) for a in row.archs):
                raise CompatError(f'{r.where}: archs must be compute capabilities ("8.0", "9.0a")')
            if not all(_is_arch(a) and not a.endswith(("a", "f")) for a in row.ptx):
                raise CompatError(f'{r.where}: ptx must be compute capabilities ("8.0")')
            if row.and_newer and (len(row.archs) != 1 or row.ptx):
                raise CompatError(f"{r.where}: and_newer rows name one arch, the lowest")
            if not set(row.cuda_for) <= set(row.archs) | set(row.ptx):
                raise CompatError(f"{r.where}: cuda_for names an arch that archs does not list")
            kernels.append(row)
        libraries = []
        for r in rows.table("kernel_library"):
            library = r.struct(KernelLibrary, pick=r.opt_text("pick") or "any")
            if library.pick not in LIBRARY_PICKS or not library.files:
                raise CompatError(f"{r.where}: pick must be one of {LIBRARY_PICKS}, files globs")
            if (library.pick == "by-gpu") != bool(library.by_gpu) or not set(
                library.by_gpu.values()
            ) <= set(library.files):
                raise CompatError(f"{r.where}: by_gpu (pick by-gpu only) names globs of files")
            if library.fallback_from and library.pick != "torch-cuda":
                raise CompatError(f"{r.where}: fallback_from is for pick torch-cuda")
            libraries.append(library)
        checks = []
        for r in rows.table("cuda_check"):
            check = r.struct(CudaCheck, start=r.version("from"))
            if check.refuses not in ("minor", "major"):
                raise CompatError(f'{r.where}: refuses must be "minor" or "major"')
            checks.append(check)
        return cls(pairings, numpy, kernels, libraries, checks)

    def pairing(self, package: str, torch: str) -> Pairing | None:
        """The row naming the `package` versions built for this torch (exact rows first)."""
        rows = [p for p in self.pairings if p.package == package and p.covers_torch(torch)]
        rows.sort(key=lambda p: (p.and_later, -len(p.torch.split("."))))
        return rows[0] if rows else None

    def torch_for(self, package: str, version: str) -> Pairing | None:
        """The row whose torch this `package` version was built for."""
        return next(
            (
                p
                for p in self.pairings
                if p.package == package and any(matches(version, v) for v in p.versions)
            ),
            None,
        )

    def numpy_abi(self, package: str, platform: str) -> NumpyAbi | None:
        rows = [n for n in self.numpy if n.package == package]
        own = [n for n in rows if n.platform == platform]
        general = [n for n in rows if n.platform is None]
        found = own or general
        return found[0] if found else None


class TensorrtRelease(Struct, frozen=True):
    version: Version
    cuda_majors: tuple[int, ...]
    cuda: tuple[str, ...]
    cudnn: str | None
    min_cc: Version | None
    max_cc: Version | None
    source: str


class TensorrtData(Releases[TensorrtRelease]):
    def __init__(self, releases: list[TensorrtRelease], tf_trt_until: Version | None, src: str):
        super().__init__(releases)
        self.tf_without_trt = tf_trt_until  # the first TensorFlow without TF-TRT
        self.tf_trt_source = src

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> TensorrtData:
        rows = Rows(path, data)
        releases = []
        for r in rows.table("release"):
            majors = r.text_list("cuda_majors")
            if not all(m.isascii() and m.isdigit() for m in majors):
                raise CompatError(f"{r.where}: cuda_majors must be CUDA majors as text")
            cuda_majors = tuple(int(m) for m in majors)
            releases.append(r.struct(TensorrtRelease, ("cuda",), cuda_majors=cuda_majors))
        tf = rows.table("tf_trt")
        until = tf[0].version("tensorflow_without") if tf else None
        return cls(releases, until, tf[0].text("source") if tf else "")

    def release(self, version: str) -> TensorrtRelease | None:
        """The row that holds for this version (the last row at or below it)."""
        have = parse_version(version.split("+", 1)[0])
        if have is None:
            return None
        found = [r for r in self.releases if r.version.release[:3] <= have.release[:3]]
        return found[-1] if found else None

    def newest_for_cc(self, cc: str) -> tuple[Version | None, Version | None]:
        """(the first release that no longer supports `cc`, the first that supports it)."""
        have = parse_version(cc)
        if have is None:
            return None, None
        dropped = next((r.version for r in self.releases if r.min_cc and have < r.min_cc), None)
        added = next((r.version for r in self.releases if r.max_cc and have <= r.max_cc), None)
        return dropped, added
