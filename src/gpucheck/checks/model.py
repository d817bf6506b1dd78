"""What a check is and what it produces."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpucheck.checks.context import Context


class Status(str, enum.Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"  # could not be judged: a prerequisite is missing or a fact is unknown
    INFO = "info"  # worth knowing, not a problem
    ERROR = "error"  # the check itself broke: a gpucheck bug


class Section(str, enum.Enum):
    SYSTEM = "system"
    DRIVER = "driver"
    GPUS = "gpus"
    CUDA = "cuda"
    CUDNN = "cudnn"
    FRAMEWORKS = "frameworks"
    REQUIREMENTS = "requirements"

    @property
    def label(self) -> str:
        return {"gpus": "GPUs", "cuda": "CUDA", "cudnn": "cuDNN"}.get(
            self.value, self.value.title()
        )


@dataclass
class Outcome:
    """What a check function returns; the runner adds the check's id and section."""

    status: Status
    title: str
    evidence: list[str] = field(default_factory=list)
    fix: str | None = None

    @classmethod
    def passed(cls, title: str, *evidence: str) -> Outcome:
        return cls(Status.PASS, title, list(evidence))

    @classmethod
    def info(cls, title: str, *evidence: str, fix: str | None = None) -> Outcome:
        return cls(Status.INFO, title, list(evidence), fix)

    @classmethod
    def skip(cls, title: str, *evidence: str) -> Outcome:
        return cls(Status.SKIP, title, list(evidence))

    @classmethod
    def warn(cls, title: str, *evidence: str, fix: str) -> Outcome:
        return cls(Status.WARN, title, list(evidence), fix)

    @classmethod
    def fail(cls, title: str, *evidence: str, fix: str) -> Outcome:
        return cls(Status.FAIL, title, list(evidence), fix)


@dataclass
class Finding:
    id: str
    section: Section
    status: Status
    title: str
    evidence: list[str] = field(default_factory=list)
    fix: str | None = None


CheckFunc = Callable[["Context"], "Outcome | None"]


@dataclass(frozen=True)
class Check:
    id: str
    section: Section
    summary: str  # what it looks at, for `--only`/`--skip` help and the README
    func: CheckFunc


REGISTRY: list[Check] = []


def check(id: str, section: Section, summary: str) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check. Order of registration is the order of the report within a section."""

    def register(func: CheckFunc) -> CheckFunc:
        if any(c.id == id for c in REGISTRY):
            raise ValueError(f"duplicate check id {id}")
        REGISTRY.append(Check(id, section, summary, func))
        return func

    return register
