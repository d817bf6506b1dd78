"""cuDNN releases (compat/cudnn.toml): the CUDA versions, drivers and GPUs each supports.

A row covers only the releases its support-matrix section names (`covers`); a release with no
row is unknown to the data, not assumed to behave like its neighbour.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import Version

from gpucheck.compat.rows import CompatError, Rows, parse_version


@dataclass(frozen=True)
class CudnnRelease:
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

    def supports_cuda(self, cuda: str) -> bool:
        want = parse_version(cuda)
        if want is None:
            return False
        mm = Version(f"{want.major}.{want.minor}")
        for item in self.cuda:
            low, _, high = item.partition("-")
            lo, hi = parse_version(low), parse_version(high or low)
            if lo is not None and hi is not None and lo <= mm <= hi:
                return True
        return False

    def supports_cc(self, cc: str) -> bool | None:
        """True/False where the matrix says; None where it does not list GPUs."""
        if self.compute_capabilities:
            return cc in self.compute_capabilities
        wanted = parse_version(cc)
        if wanted is None or self.min_cc is None:
            return None
        return wanted >= self.min_cc and (self.max_cc is None or wanted <= self.max_cc)


class CudnnData:
    def __init__(self, releases: list[CudnnRelease]) -> None:
        self.releases = sorted(releases, key=lambda r: r.version)

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> CudnnData:
        releases = []
        for r in Rows(path, data).table("release"):
            majors = r.data.get("cuda_majors", [])
            if not isinstance(majors, list) or not all(
                isinstance(m, int) and not isinstance(m, bool) for m in majors
            ):
                raise CompatError(f"{r.where}: cuda_majors must be a list of integers")
            releases.append(
                CudnnRelease(
                    version=r.version("version"),
                    covers=tuple(r.text_list("covers", required=False)),
                    cuda=tuple(r.text_list("cuda", required=False)),
                    cuda_majors=tuple(majors),
                    min_driver_linux=r.text_map("min_driver_linux"),
                    min_driver_windows=r.text_map("min_driver_windows"),
                    compute_capabilities=tuple(r.text_list("compute_capabilities", required=False)),
                    min_cc=r.opt_version("min_cc"),
                    max_cc=r.opt_version("max_cc"),
                    source=r.text("source"),
                )
            )
        return cls(releases)

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
