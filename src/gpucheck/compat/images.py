"""Container base images (compat/images.toml): which CUDA an image's repository and tag say
it carries, and where forward compatibility may run a newer CUDA on an older driver."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from msgspec import Struct

from gpucheck.compat.rows import CompatError, Rows


class TagRule(Struct, frozen=True):
    repository: str
    pattern: str  # matched against the tag alone
    needs: str | None
    source: str


class NgcRelease(Struct, frozen=True):
    repository: str
    release: str  # YY.MM
    cuda: str
    source: str


class ForwardCompat(Struct, frozen=True):
    gpu_brands: tuple[str, ...]
    packages: tuple[str, ...]
    source: str


class ImageCuda(Struct, frozen=True):
    """What an image's name says about its CUDA."""

    cuda: str | None = None  # the CUDA version it carries
    tensorflow: str | None = None  # a TensorFlow line: its CUDA is tensorflow.toml's
    cpu_only: bool = False  # a repository we know whose tag says no CUDA
    source: str | None = None  # the row that said so


class ImageData(Struct):
    rules: list[TagRule]
    ngc: list[NgcRelease]
    forward: ForwardCompat | None

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> ImageData:
        rows = Rows(path, data)
        rules = []
        for r in rows.table("tag_rule"):
            try:
                re.compile(r.text("pattern"))
            except re.error as exc:
                raise CompatError(
                    f"{r.where}: pattern is not a regular expression: {exc}"
                ) from None
            rules.append(r.struct(TagRule, needs=r.opt_text("needs")))
        forward = [
            ForwardCompat(
                tuple(r.text_list("gpu_brands")), tuple(r.text_list("packages")), r.text("source")
            )
            for r in rows.table("forward_compat")
        ]
        return cls(
            rules,
            [r.struct(NgcRelease) for r in rows.table("ngc")],
            forward[0] if forward else None,
        )

    def cuda_of(self, repository: str, tag: str) -> ImageCuda:
        """What the data says of repository:tag (an empty ImageCuda: nothing)."""
        for rule in self.rules:
            if rule.repository != repository:
                continue
            if rule.needs is not None and rule.needs not in tag:
                return ImageCuda(cpu_only=True, source=rule.source)
            match = re.search(rule.pattern, tag)
            if match is None:
                continue
            found = match.groupdict()
            return ImageCuda(found.get("cuda"), found.get("tensorflow"), source=rule.source)
        release = tag.split("-", 1)[0]
        for row in self.ngc:
            if row.repository == repository and row.release == release:
                return ImageCuda(row.cuda, source=row.source)
        return ImageCuda()
