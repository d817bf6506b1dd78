"""GPU product names -> compute capability and architecture (compat/gpus.toml), matched
robustly against the names NVML really reports.

NVML says "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB", "NVIDIA H100 80GB HBM3"; NVIDIA's
list says "NVIDIA A100", "NVIDIA V100", "NVIDIA H100". Matching tries, in order: the exact
name or a recorded alias; the name without vendor prefixes; the name without form-factor and
memory suffixes. A name that still matches nothing, or matches two rows, is unknown: never
guessed from a near neighbour.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucheck.compat.rows import Rows

# Prefixes NVML adds or drops across driver generations.
_PREFIXES = ("nvidia ", "tesla ")
# Trailing form-factor / memory / board tokens: "-SXM4-80GB", " 80GB HBM3", " PCIe", " NVL".
_SUFFIX = re.compile(
    r"[\s-]+(?:sxm[0-9]*|pcie|nvl|hbm[0-9]*e?|[0-9]+\s*gb|[0-9]+g|dgxs?|mxm|smx[0-9]*|sxm[0-9]-[0-9]+gb|lhr)$"
)


def normalise(name: str) -> str:
    text = re.sub(r"\s+", " ", name.strip().lower())
    changed = True
    while changed:
        changed = False
        for prefix in _PREFIXES:
            if text.startswith(prefix):
                text, changed = text[len(prefix) :], True
    return text


def strip_suffixes(text: str) -> str:
    previous = None
    while previous != text:
        previous, text = text, _SUFFIX.sub("", text)
    return text


@dataclass(frozen=True)
class GpuModel:
    name: str
    compute_capability: str
    architecture: str
    segment: str
    aliases: tuple[str, ...]
    source: str


class GpuIndex:
    def __init__(self, models: list[GpuModel]) -> None:
        self.models = models
        self._exact: dict[str, list[GpuModel]] = {}
        for model in models:
            for key in {normalise(model.name), *(normalise(a) for a in model.aliases)}:
                self._exact.setdefault(key, []).append(model)

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> GpuIndex:
        return cls(
            [
                GpuModel(
                    name=r.text("name"),
                    compute_capability=str(r.version("compute_capability")),
                    architecture=r.text("architecture"),
                    segment=r.text("segment"),
                    aliases=tuple(r.text_list("aliases", required=False)),
                    source=r.text("source"),
                )
                for r in Rows(path, data).table("gpu")
            ]
        )

    def _unique(self, key: str) -> GpuModel | None:
        hits = self._exact.get(key, [])
        return hits[0] if len({h.name for h in hits}) == 1 else None

    def lookup(self, name: str) -> GpuModel | None:
        """The model an NVML product name denotes, or None when the data cannot say."""
        key = normalise(name)
        if not key:
            return None
        found = self._unique(key)
        if found is None and key not in self._exact:
            found = self._unique(strip_suffixes(key))
        return found

    def suggestions(self, name: str, n: int = 3) -> list[str]:
        keys = difflib.get_close_matches(normalise(name), list(self._exact), n=n, cutoff=0.6)
        return list(dict.fromkeys(self._exact[k][0].name for k in keys))
