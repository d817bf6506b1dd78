"""Which NVML functions NVIDIA's Python binding calls, from which of its releases, and the
driver branch that first has them (compat/nvml_bindings.toml): a binding newer than the driver
calls versioned functions (`..._v2`, `..._v3`) an older libnvidia-ml lacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec import Struct
from packaging.version import Version

from gpucheck.compat.rows import Rows


class BindingCall(Struct, frozen=True):
    """From binding release `since` on, its unversioned calls need `functions`, first in
    driver branch `driver_branch`."""

    binding: str
    since: Version
    functions: tuple[str, ...]
    driver_branch: int
    source: str


class NvmlBindingData(Struct):
    calls: list[BindingCall]

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> NvmlBindingData:
        rows = Rows(path, data)
        calls = [
            BindingCall(
                r.text("binding"),
                r.version("from"),
                tuple(r.text_list("functions")),
                r.integer("driver_branch"),
                r.text("source"),
            )
            for r in rows.table("call")
        ]
        return cls(sorted(calls, key=lambda c: (c.binding, c.since)))

    def missing(self, binding: str, version: Version, driver_branch: int) -> BindingCall | None:
        """The oldest call of this binding release that the driver's branch predates (its
        release is the first the driver cannot serve); None: the driver has every function
        the release calls."""
        needed = [c for c in self.calls if c.binding == binding and version >= c.since]
        lacking = [c for c in needed if driver_branch < c.driver_branch]
        return lacking[0] if lacking else None

    def first_unserved(self, binding: str, driver_branch: int) -> BindingCall | None:
        """The oldest call of `binding` the driver's branch predates: its release is the first
        of that binding the driver cannot serve (install one below it); None: every release
        known here works on the driver."""
        lacking = [
            c for c in self.calls if c.binding == binding and driver_branch < c.driver_branch
        ]
        return lacking[0] if lacking else None
