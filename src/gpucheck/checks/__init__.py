"""Checks: pure functions of (snapshot, compat matrix, requirements) -> findings.

No I/O, no GPU libraries. `run()` evaluates the registered checks in report order; a check
that raises becomes an ERROR finding (a gpucheck bug), never a crash.
"""

from __future__ import annotations

import difflib

# Importing the modules registers their checks, in this order.
from gpucheck.checks import (  # noqa: F401
    cuda,
    cudnn,
    driver,
    frameworks,
    gpus,
    requirements,
    system,
)
from gpucheck.checks.context import Context, Requirements
from gpucheck.checks.model import REGISTRY, Check, Finding, Outcome, Section, Status
from gpucheck.compat import CompatError

__all__ = ["Context", "Finding", "Outcome", "Requirements", "Section", "Status", "run", "select"]

SECTION_ORDER = list(Section)


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
                fix="This is a gpucheck bug: please report it with `gpucheck snapshot` attached.",
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
                )
            )
    return findings
