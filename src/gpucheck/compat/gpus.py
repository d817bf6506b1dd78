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
from pathlib import Path
from typing import Any

from msgspec import Struct

from gpucheck.compat.rows import CompatError, Row, Rows

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


# The figures a `[[gpu.spec]]` table may carry (see the header of compat/gpus.toml).
_SPEC_FIGURES = (
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "bf16_tflops",
    "fp8_tflops",
    "memory_bandwidth_gbs",
)
_SPEC_KEYS = {
    *_SPEC_FIGURES,
    "memory_mib",
    "variant",
    "match",
    "pcie",
    "fp16_accumulate",
    "source",
}
_PCIE = re.compile(r"([1-6])x(1|2|4|8|16)")


class GpuSpec(Struct, frozen=True):
    """Peak figures of one GPU model (or one variant of it) from its datasheet: dense, no
    sparsity, at boost clock. A figure the data could not source is None."""

    source: str
    variant: str | None = None
    match: tuple[str, ...] = ()
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    fp16_tflops: float | None = None
    bf16_tflops: float | None = None
    fp8_tflops: float | None = None
    memory_bandwidth_gbs: float | None = None
    pcie_generation: int | None = None
    pcie_width: int | None = None
    fp16_accumulate: str | None = None  # "fp32" | "fp16"; None where the source does not say
    memory_mib: float | None = None  # FB memory total as NVML reports it (a real capture)

    @property
    def pcie(self) -> str | None:
        """ "5x16" style, as written in the data."""
        if self.pcie_generation is None:
            return None
        return f"{self.pcie_generation}x{self.pcie_width}"

    def tflops(self, dtype: str) -> float | None:
        """Peak for "fp32", "tf32", "fp16", "bf16" or "fp8"; None where not known."""
        if f"{dtype}_tflops" not in _SPEC_FIGURES:
            raise KeyError(dtype)
        value: float | None = getattr(self, f"{dtype}_tflops")
        return value

    def matches(self, nvml_name: str) -> bool:
        key = normalise(nvml_name)
        return any(re.search(pattern, key) for pattern in self.match)

    @classmethod
    def from_row(cls, r: Row) -> GpuSpec:
        unknown = sorted(set(r.data) - _SPEC_KEYS)
        if unknown:
            raise CompatError(f"{r.where}: unknown key(s) {', '.join(unknown)}")
        figures = {k: r.opt_positive(k) for k in _SPEC_FIGURES}
        memory = r.opt_positive("memory_mib")
        pcie = r.opt_text("pcie")
        gen = width = None
        if pcie is not None:
            m = _PCIE.fullmatch(pcie)
            if m is None:
                raise CompatError(f'{r.where}: pcie = {pcie!r} is not GENxWIDTH, e.g. "5x16"')
            gen, width = int(m.group(1)), int(m.group(2))
        if all(v is None for v in figures.values()) and pcie is None and memory is None:
            raise CompatError(f"{r.where}: a spec needs at least one figure")
        accumulate = r.opt_text("fp16_accumulate")
        if accumulate not in (None, "fp32", "fp16"):
            raise CompatError(f'{r.where}: fp16_accumulate must be "fp32" or "fp16"')
        patterns = tuple(r.text_list("match", required=False))
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise CompatError(f"{r.where}: match {pattern!r} is not a regex: {exc}") from None
        return cls(
            source=r.text("source"),
            variant=r.opt_text("variant"),
            match=patterns,
            pcie_generation=gen,
            pcie_width=width,
            fp16_accumulate=accumulate,
            memory_mib=memory,
            **figures,
        )


class GpuModel(Struct, frozen=True):
    name: str
    compute_capability: str
    architecture: str
    segment: str
    aliases: tuple[str, ...]
    source: str
    specs: tuple[GpuSpec, ...] = ()

    @property
    def spec(self) -> GpuSpec | None:
        """The spec when the row has exactly one that applies to every name of the row."""
        if len(self.specs) == 1 and not self.specs[0].match:
            return self.specs[0]
        return None

    def spec_for(self, nvml_name: str) -> GpuSpec | None:
        """The spec of the variant this NVML name denotes; None when none or several match."""
        if self.spec is not None:
            return self.spec
        hits = [s for s in self.specs if s.matches(nvml_name)]
        return hits[0] if len(hits) == 1 else None


def _specs(r: Row) -> tuple[GpuSpec, ...]:
    specs = tuple(GpuSpec.from_row(s) for s in r.subrows("spec"))
    if len(specs) > 1:
        for spec in specs:
            if not spec.match or not spec.variant:
                raise CompatError(
                    f"{r.where}: with several [[gpu.spec]] tables each needs variant and match"
                )
    return specs


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
                    specs=_specs(r),
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

    def spec(self, name: str) -> GpuSpec | None:
        """The datasheet figures for an NVML product name (the variant it names), or None."""
        model = self.lookup(name)
        return model.spec_for(name) if model is not None else None

    def find(self, query: str) -> tuple[GpuModel | None, list[str]]:
        """What a person typed (`compat gpu`): lookup's match; else the one known name holding
        every word of the query ("RTX 4090": GeForce RTX 4090), where a name adding only brand
        words wins over longer ones ("GeForce RTX 4090 D"); else no model and the names of the
        several that hold the words, fewest extra words first (none: [])."""
        model = self.lookup(query)
        words = _words(query)
        if model is not None or not words:
            return model, []
        extra: dict[str, tuple[int, GpuModel]] = {}
        for m in self.models:
            for name in (m.name, *m.aliases):
                have = _words(name)
                if words <= have:
                    n = len(have - words - _BRANDS)
                    extra[m.name] = min(extra.get(m.name, (n, m)), (n, m), key=lambda e: e[0])
        exact = [m for n, m in extra.values() if n == 0]
        if len(extra) == 1 or len(exact) == 1:
            return (exact or [m for _, m in extra.values()])[0], []
        return None, sorted(extra, key=lambda k: (extra[k][0], k))

    def suggestions(self, name: str, n: int = 3) -> list[str]:
        """The closest known names, always some: those sharing most product words with it,
        then by spelling (brand words aside: "RTX 4090 D" is closest to GeForce RTX 4090)."""
        said = _words(name)
        words = said - _BRANDS
        bare = " ".join(sorted(words))

        def closeness(key: str) -> tuple[int, int, float]:
            have = _words(key) - _BRANDS
            spelling = difflib.SequenceMatcher(None, bare, " ".join(sorted(have))).ratio()
            return len(words & have), len(said & _BRANDS & _words(key)), spelling

        ranked = sorted(self._exact, key=closeness, reverse=True)
        return list(dict.fromkeys(self._exact[k][0].name for k in ranked))[:n]


# Words that name a brand, not a product: "RTX 4090" is the GeForce RTX 4090.
_BRANDS = frozenset({"nvidia", "tesla", "geforce", "quadro"})


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.split(r"[\s_-]+", normalise(text)) if w)
