"""The check registry: every check's id, section and function, selection by id/prefix/section
(`--only`, `--skip`), and the runner that turns outcomes into findings."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpucheck.model.finding import Finding, Fix, Outcome, Section, Status

if TYPE_CHECKING:
    from gpucheck.checks.context import Context

CheckFunc = Callable[["Context"], "Outcome | None"]


@dataclass(frozen=True)
class Check:
    id: str
    section: Section
    summary: str  # what it looks at, for `gpucheck checks` and the README
    func: CheckFunc


REGISTRY: list[Check] = []
SECTION_ORDER = list(Section)


def check(id: str, section: Section, summary: str) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check. Order of registration is the order of the report within a section."""

    def register(func: CheckFunc) -> CheckFunc:
        if any(c.id == id for c in REGISTRY):
            raise ValueError(f"duplicate check id {id}")
        REGISTRY.append(Check(id, section, summary, func))
        return func

    return register


def all_checks() -> list[Check]:
    return sorted(REGISTRY, key=lambda c: SECTION_ORDER.index(c.section))


class SelectionError(ValueError):
    pass


def _matches(pattern: str, check: Check) -> bool:
    # An id, an id prefix ("gpu", "gpu.", "gpu.*"), or a section name ("gpus", "cudnn").
    p = pattern.rstrip("*")
    if p == check.section.value:
        return True
    return check.id == p or check.id.startswith(p if p.endswith(".") else p + ".")


def select(only: list[str], skip: list[str]) -> list[Check]:
    checks = all_checks()
    ids = [c.id for c in checks]
    for pattern in only + skip:
        if not any(_matches(pattern, c) for c in checks):
            close = difflib.get_close_matches(pattern, ids, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise SelectionError(f"no check matches {pattern!r}{hint}; see: gpucheck checks")
    if only:
        checks = [c for c in checks if any(_matches(p, c) for p in only)]
    return [c for c in checks if not any(_matches(p, c) for p in skip)]


def run(ctx: Context, checks: list[Check] | None = None) -> list[Finding]:
    from gpucheck.compat import CompatError

    findings = []
    for chk in checks if checks is not None else all_checks():
        try:
            outcome = chk.func(ctx)
        except CompatError:
            raise  # bad compat data (a user's --compat-dir, say) is bad input: exit 2
        except Exception as exc:
            outcome = Outcome(
                Status.ERROR,
                f"gpucheck's check {chk.id} failed: {type(exc).__name__}: {exc}",
                fix=Fix.of(
                    "This is a gpucheck bug: please report it with `gpucheck snapshot` attached."
                ),
            )
        if outcome is not None:
            findings.append(
                Finding(
                    chk.id,
                    chk.section,
                    outcome.status,
                    outcome.title,
                    outcome.evidence,
                    outcome.fix,
                    outcome.subjects,
                )
            )
    return findings
