"""The compatibility matrix: cited data in compat/*.toml, and the questions checks ask of it.

Checks never hard-code a version fact; they ask here. The data is read once, lazily (only the
checks that need it pay for it), validated as it is read, and every row keeps its source so a
finding can cite it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from packaging.version import Version

from gpucheck.compat.rows import CompatError, Rows, parse_version

__all__ = [
    "Compat",
    "CompatError",
    "cuda_from_int",
    "data_dir",
    "driver_text",
    "load",
    "parse_version",
]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]


@dataclass(frozen=True)
class ToolkitRelease:
    version: Version  # 12.4.1 = CUDA 12.4 Update 1
    label: str
    min_driver_linux: Version | None
    min_driver_windows: Version | None
    source: str


@dataclass(frozen=True)
class MinorCompat:
    cuda_major: int
    min_driver_linux: Version | None
    min_driver_windows: Version | None
    source: str


@dataclass(frozen=True)
class ToolkitArch:
    cuda: Version  # applies from this release until the next row
    min_cc: Version
    max_cc: Version
    source: str


@dataclass(frozen=True)
class Architecture:
    name: str
    compute_capabilities: tuple[str, ...]
    source: str


def data_dir() -> Path:
    """compat/ as shipped in the wheel, or at the top of a source checkout (editable installs)."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "compat_data"
    if packaged.is_dir():
        return packaged
    return package.parents[1] / "compat"


def driver_text(version: Version) -> str:
    """A driver version as NVIDIA prints it: 535.104.05, not packaging's 535.104.5."""
    major, *rest = version.release
    return ".".join([str(major), *(f"{part:02d}" for part in rest)])


def cuda_from_int(value: int | None) -> str | None:
    """CUDA's integer encoding (12020) -> '12.2'."""
    if value is None or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


class Compat:
    def __init__(
        self,
        toolkits: list[ToolkitRelease],
        minor: list[MinorCompat],
        arch_ranges: list[ToolkitArch],
        architectures: list[Architecture],
        data_as_of: str,
    ) -> None:
        self.toolkits = sorted(toolkits, key=lambda t: t.version)
        self.minor = {m.cuda_major: m for m in minor}
        self.arch_ranges = sorted(arch_ranges, key=lambda a: a.cuda)
        self.architectures = architectures
        self.data_as_of = data_as_of

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def from_dir(cls, directory: Path) -> Compat:
        path = directory / "cuda.toml"
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise CompatError(f"{path}: cannot be read ({exc.strerror})") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise CompatError(f"{path}: not valid TOML ({exc})") from None
        return cls.from_data(path, data)

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> Compat:
        """Build from parsed TOML; `path` names the file in error messages."""
        rows = Rows(path, data)
        return cls(
            toolkits=[
                ToolkitRelease(
                    version=r.version("version"),
                    label=r.text("label"),
                    # Where the notes print only a branch (R610), any driver of it qualifies.
                    min_driver_linux=r.opt_version("min_driver_linux")
                    or r.opt_version("driver_branch"),
                    min_driver_windows=r.opt_version("min_driver_windows"),
                    source=r.text("source"),
                )
                for r in rows.table("toolkit")
            ],
            minor=[
                MinorCompat(
                    cuda_major=r.integer("cuda_major"),
                    min_driver_linux=r.opt_version("min_driver_linux"),
                    min_driver_windows=r.opt_version("min_driver_windows"),
                    source=r.text("source"),
                )
                for r in rows.table("minor_compat")
            ],
            arch_ranges=[
                ToolkitArch(
                    cuda=r.version("cuda"),
                    min_cc=r.version("min_cc"),
                    max_cc=r.version("max_cc"),
                    source=r.text("source"),
                )
                for r in rows.table("toolkit_arch")
            ],
            architectures=[
                Architecture(
                    name=r.text("name"),
                    compute_capabilities=tuple(r.text_list("compute_capabilities")),
                    source=r.text("source"),
                )
                for r in rows.table("architecture")
            ],
            data_as_of=str(data.get("data_as_of", "")),
        )

    # -- questions -------------------------------------------------------------------------

    def release(self, cuda: str) -> ToolkitRelease | None:
        """The first release (GA) of a CUDA major.minor, or the exact update if one is named."""
        wanted = parse_version(cuda)
        if wanted is None:
            return None
        exact = [t for t in self.toolkits if t.version == wanted]
        if exact:
            return exact[0]
        same = [t for t in self.toolkits if t.version.release[:2] == wanted.release[:2]]
        return same[0] if same else None

    def min_driver(self, cuda: str, os: str = "linux") -> Version | None:
        rel = self.release(cuda)
        if rel is None:
            return None
        return rel.min_driver_windows if os == "windows" else rel.min_driver_linux

    def max_cuda_for_driver(self, driver: str, os: str = "linux") -> Version | None:
        """The newest CUDA release (major.minor) whose minimum driver this driver meets."""
        have = parse_version(driver)
        if have is None:
            return None
        best = None
        for t in self.toolkits:
            need = t.min_driver_windows if os == "windows" else t.min_driver_linux
            if need is not None and have >= need:
                best = t.version
        return Version(f"{best.major}.{best.minor}") if best else None

    def minor_compat_floor(self, cuda_major: int, os: str = "linux") -> Version | None:
        row = self.minor.get(cuda_major)
        if row is None:
            return None
        return row.min_driver_windows if os == "windows" else row.min_driver_linux

    def cc_range(self, cuda: str) -> ToolkitArch | None:
        wanted = parse_version(cuda)
        if wanted is None:
            return None
        current = None
        for row in self.arch_ranges:
            if row.cuda.release[:2] <= wanted.release[:2]:
                current = row
        return current

    def architecture(self, cc: str) -> str | None:
        for arch in self.architectures:
            if cc in arch.compute_capabilities:
                return arch.name
        return None

    def source_for_release(self, cuda: str) -> str | None:
        rel = self.release(cuda)
        return rel.source if rel else None


@cache
def load() -> Compat:
    return Compat.from_dir(data_dir())
