"""The one result model: what a check returns (Outcome) and what a report holds (Finding).

A finding names what it concerns as data (`subjects`: GPU indices and UUIDs, the Python
environment, library paths) so a fleet script can join it to its inventory, and its fix is a
record of ordered steps (model/fix.py): a sentence for a person, and for a script each
step's command, the tool it is for, and the packages and GPUs it changes.
"""

from __future__ import annotations

import enum
from typing import TypeVar

from msgspec import Struct, field

from gpucheck.model.fix import Fix, FixV2
from gpucheck.model.layers import Layer
from gpucheck.model.types import GpuRef

T = TypeVar("T")

__all__ = [
    "PROBLEM",
    "SEVERITY",
    "CheckCrash",
    "Finding",
    "FindingV2",
    "Fix",
    "GpuRef",
    "Outcome",
    "Status",
    "Subjects",
    "severity",
]


class Status(str, enum.Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"  # could not be judged: a prerequisite is missing or a fact is unknown
    INFO = "info"  # worth knowing, not a problem
    ERROR = "error"  # the check itself broke: a gpucheck bug


# The one order of statuses, best first: every ranking of findings (one verdict out of many
# environments, the fleet's problem list, the exit status) reads it from here.
SEVERITY: tuple[Status, ...] = (
    Status.PASS,
    Status.INFO,
    Status.SKIP,
    Status.WARN,
    Status.FAIL,
    Status.ERROR,
)
# The statuses a report counts as problems (each carries a fix).
PROBLEM: tuple[Status, ...] = SEVERITY[SEVERITY.index(Status.WARN) :]


def severity(status: Status) -> int:
    """The status's rank in SEVERITY: higher is worse."""
    return SEVERITY.index(status)


class Subjects(Struct):
    """What a finding concerns. Empty lists: the machine as a whole."""

    gpus: list[GpuRef] = field(default_factory=list)
    environments: list[str] = field(default_factory=list)  # Python interpreters (their paths)
    paths: list[str] = field(default_factory=list)  # files and folders: libraries, toolkits

    def __bool__(self) -> bool:
        return bool(self.gpus or self.environments or self.paths)

    def merged(self, other: Subjects) -> Subjects:
        return Subjects(
            _union(self.gpus, other.gpus),
            _union(self.environments, other.environments),
            _union(self.paths, other.paths),
        )


def _union(a: list[T], b: list[T]) -> list[T]:
    """a, then the items of b not seen yet (b's own repeats included)."""
    out = list(a)
    for x in b:
        if x not in out:
            out.append(x)
    return out


class Outcome(Struct):
    """What a check function returns; the runner adds the check's id and section."""

    status: Status
    title: str
    evidence: list[str] = field(default_factory=list)
    fix: Fix | None = None
    subjects: Subjects = field(default_factory=Subjects)

    @classmethod
    def make(
        cls,
        status: Status,
        title: str,
        evidence: tuple[str, ...],
        fix: Fix | None = None,
        subjects: Subjects | None = None,
    ) -> Outcome:
        return cls(status, title, list(evidence), fix, subjects or Subjects())

    @classmethod
    def passed(cls, title: str, *evidence: str, subjects: Subjects | None = None) -> Outcome:
        return cls.make(Status.PASS, title, evidence, None, subjects)

    @classmethod
    def info(
        cls, title: str, *evidence: str, fix: Fix | None = None, subjects: Subjects | None = None
    ) -> Outcome:
        return cls.make(Status.INFO, title, evidence, fix, subjects)

    @classmethod
    def skip(cls, title: str, *evidence: str, subjects: Subjects | None = None) -> Outcome:
        return cls.make(Status.SKIP, title, evidence, None, subjects)

    @classmethod
    def warn(
        cls, title: str, *evidence: str, fix: Fix | None, subjects: Subjects | None = None
    ) -> Outcome:
        return cls.make(Status.WARN, title, evidence, fix, subjects)

    @classmethod
    def fail(
        cls, title: str, *evidence: str, fix: Fix | None, subjects: Subjects | None = None
    ) -> Outcome:
        return cls.make(Status.FAIL, title, evidence, fix, subjects)


class Frame(Struct):
    """One frame of a crashed check's traceback, innermost last."""

    file: str  # gpucheck's own files relative to the package ("gpucheck/checks/gpus/health.py")
    line: int
    function: str
    code: str | None = None  # the source line, where Python had it


class CheckCrash(Struct):
    """What a check that raised raised (an `error` finding): the report keeps it for the bug
    report, the text output names the check and how to report it."""

    type: str  # "ZeroDivisionError"
    message: str
    frames: list[Frame] = field(default_factory=list)


class _Verdict(Struct):
    """What every report schema's finding holds, whatever its fix is."""

    id: str
    section: Layer
    status: Status
    title: str
    evidence: list[str] = field(default_factory=list)


class Finding(_Verdict):
    fix: Fix | None = None
    subjects: Subjects = field(default_factory=Subjects)
    error: CheckCrash | None = None  # status "error" only: the check's own exception


class FindingV2(_Verdict):
    """A finding as report schema 2.x wrote it (its fix a sentence and the commands in it), read
    so that older reports keep their findings (`fleet`)."""

    fix: FixV2 | None = None
    subjects: Subjects = field(default_factory=Subjects)

    def upgraded(self) -> Finding:
        fix = self.fix.upgraded() if self.fix is not None else None
        return Finding(
            self.id, self.section, self.status, self.title, self.evidence, fix, self.subjects
        )
