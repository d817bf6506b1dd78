"""Driver branches (compat/driver_branches.toml): the legacy branch that last drives a GPU
architecture, which GPUs the open kernel module drives or needs, and each package family's
names for the two module flavours."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from msgspec import Struct

from gpucheck.compat.rows import CompatError, Rows


class LegacyBranch(Struct, frozen=True):
    name: str  # "580.xx", as NVIDIA and its NVRM lines name it
    gpus: str  # NVIDIA's wording
    architectures: tuple[str, ...]  # cuda.toml's names
    last_branch: int
    first_without: int | None
    latest_release: str
    source: str


class OpenModule(Struct, frozen=True):
    first_architecture: str  # the first the open module drives (it needs the GSP)
    required_from: str  # from this one on, only the open module drives it
    installer_option: str  # NVIDIA's .run option choosing the flavour
    source: str


class FlavourPackages(Struct, frozen=True):
    family: str  # ubuntu | rpm | arch
    proprietary: str  # with {branch} where the name carries it
    open: str
    install: str  # the command that installs a package
    source: str

    def package(self, flavour: str, branch: str) -> str:
        return (self.open if flavour == "open" else self.proprietary).replace("{branch}", branch)


class DriverBranchData(Struct):
    legacy: list[LegacyBranch]
    open_module: OpenModule | None
    packages: list[FlavourPackages]

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> DriverBranchData:
        rows = Rows(path, data)
        legacy = []
        for r in rows.table("legacy"):
            first = r.data.get("first_without")
            if first is not None and (not isinstance(first, int) or isinstance(first, bool)):
                raise CompatError(f"{r.where}: first_without must be an integer")
            legacy.append(
                LegacyBranch(
                    r.text("name"),
                    r.text("gpus"),
                    tuple(r.text_list("architectures")),
                    r.integer("last_branch"),
                    first,
                    r.text("latest_release"),
                    r.text("source"),
                )
            )
        open_rows = [r.struct(OpenModule) for r in rows.table("open_module")]
        packages = [r.struct(FlavourPackages) for r in rows.table("flavour_packages")]
        return cls(legacy, open_rows[0] if open_rows else None, packages)

    def by_name(self, name: str) -> LegacyBranch | None:
        """The row an NVRM line names: "580.xx" (or "580"), "470.xx", ..."""
        branch = name.split(".", 1)[0]
        return next((b for b in self.legacy if str(b.last_branch) == branch), None)

    def for_architecture(self, architecture: str | None) -> LegacyBranch | None:
        """The legacy branch that last drives `architecture`; None: current branches do."""
        if not architecture:
            return None
        return next((b for b in self.legacy if architecture in b.architectures), None)

    def flavour_packages(self, family: str) -> FlavourPackages | None:
        return next((p for p in self.packages if p.family == family), None)


def branch_of(version: str | None) -> int | None:
    """'595.71.05' -> 595; None where it is not a driver version."""
    match = re.match(r"([0-9]+)(?:\.|$)", version or "")
    return int(match.group(1)) if match else None
