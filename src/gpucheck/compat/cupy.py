"""CuPy's release lines (compat/cupy.toml): the wheel packages each publishes, the CUDA
versions and Pythons it supports, and whether its wheels can bring their own CUDA ([ctk])."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from msgspec import Struct
from packaging.version import Version

from gpucheck.compat.rows import CompatError, Releases, Rows, parse_version

# cupy-cuda12x: every listed CUDA 12.x not named by a package of its own; cupy-cuda102: CUDA 10.2.
_WHEEL = re.compile(r"cupy-cuda(\d+?)(x|\d)$")


class CupyRelease(Struct, frozen=True):
    version: Version  # the release line, "14.2": its X.Y.0 tag and patch releases
    released: str
    cuda: tuple[str, ...]  # the CUDA Toolkit versions supported, "12.8"
    python: tuple[str, ...]  # the Python versions supported, "3.12"
    packages: tuple[str, ...]  # the wheels on PyPI, "cupy-cuda12x"
    min_cc: Version  # CuPy's own compute-capability floor
    ctk_extra: bool  # `cupy-cudaNNx[ctk]` installs NVIDIA's CUDA wheels
    note: str | None
    source: str

    def wheel_cuda(self, package: str) -> list[str]:
        """The CUDA versions of this line that `package` is the wheel for, oldest first."""
        found = wheel_major(package)
        if found is None:
            return []
        major, exact = found
        if exact is not None:
            return [exact] if exact in self.cuda else []
        own = {w[1] for p in self.packages if (w := wheel_major(p)) and w[1] is not None}
        return [c for c in self.cuda if c.split(".")[0] == major and c not in own]


def wheel_major(package: str) -> tuple[str, str | None] | None:
    """cupy-cuda12x -> ("12", None: any 12.x); cupy-cuda102 -> ("10", "10.2"); else None."""
    match = _WHEEL.match(package)
    if match is None:
        return None
    major, rest = match.groups()
    return (major, None) if rest == "x" else (major, f"{major}.{rest}")


class CupyData(Releases[CupyRelease]):
    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> CupyData:
        rows = [r.struct(CupyRelease) for r in Rows(path, data).table("release")]
        for row in rows:
            for package in row.packages:
                if wheel_major(package) is None:
                    raise CompatError(f"{path.name}: {package!r} is not a cupy-cudaNN wheel name")
            for text in (*row.cuda, *row.python):
                if parse_version(text) is None:
                    raise CompatError(f"{path.name}: {row.version}: {text!r} is not a version")
        return cls(rows)

    @property
    def wheels(self) -> tuple[str, ...]:
        """Every wheel package name the data knows, newest CUDA first."""
        names = {p for r in self.releases for p in r.packages}
        return tuple(sorted(names, key=_wheel_order, reverse=True))


def _wheel_order(package: str) -> tuple[int, int]:
    found = wheel_major(package)
    if found is None:
        return (0, 0)
    major, exact = found
    return (int(major), int(exact.split(".")[1]) if exact else 99)
