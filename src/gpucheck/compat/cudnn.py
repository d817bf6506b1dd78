"""cuDNN releases (compat/cudnn.toml): the CUDA versions, drivers and GPUs each supports.

A row covers only the releases its support-matrix section names (`covers`); a release with no
row is unknown to the data, not assumed to behave like its neighbour.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec import Struct
from packaging.version import Version

from gpucheck.compat.rows import Releases, Rows, parse_version


class CudnnRelease(Struct, frozen=True):
    version: Version
    covers: tuple[str, ...]
    cuda: tuple[str, ...]  # as the matrix writes them: "11.8", "12.0-12.6"
    cuda_majors: tuple[int, ...]
    min_driver_linux: dict[str, str]  # CUDA major -> minimum driver
    min_driver_windows: dict[str, str]
    compute_capabilities: tuple[str, ...]
    min_cc: Version | None
    max_cc: Version | None
    source: str


class CudnnData(Releases[CudnnRelease]):
    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> CudnnData:
        lists = ("covers", "cuda", "compute_capabilities")  # may be absent
        return cls([r.struct(CudnnRelease, lists) for r in Rows(path, data).table("release")])

    def release(self, version: str) -> CudnnRelease | None:
        """The row whose matrix names this release (9.1.0, or 9.1.0.70 as pip prints it)."""
        wanted = parse_version(version)
        if wanted is None:
            return None
        three = ".".join(str(p) for p in (*wanted.release, 0, 0)[:3])
        for rel in self.releases:
            if three in rel.covers or str(rel.version) == three:
                return rel
        return None
