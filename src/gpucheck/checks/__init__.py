"""Checks: pure functions of (snapshot, compat matrix, requirements) -> findings.

No I/O, no GPU libraries. Importing this package registers every check (one module per
layer, frameworks in their own package); `registry.run()` evaluates them in report order
(registry.ORDER, one explicit list) and
turns a check that raises into an ERROR finding (a gpucheck bug), never a crash.
"""

from __future__ import annotations

# Importing the modules registers their checks; registry.ORDER sets the report's order.
from gpucheck.checks import (  # noqa: F401
    cuda,
    cudnn,
    driver,
    frameworks,
    gpus,
    gpus_sharing,
    requirements,
    system,
    toolkit,
)
from gpucheck.checks.context import Context, Requirements
from gpucheck.checks.registry import SelectionError, all_checks, run, select

__all__ = ["Context", "Requirements", "SelectionError", "all_checks", "run", "select"]
