"""Checks: pure functions of (snapshot, compat matrix, requirements) -> findings.

No I/O, no GPU libraries. One module per layer (frameworks in their own package), imported
when first needed: `registry.all_checks()` registers every check, `registry.select()` with
--only just the sections it names (registry.SECTION_MODULES), so a `doctor --only gpus` never
imports the framework checks. `registry.run()` evaluates them in report order (registry.ORDER,
one explicit list) and turns a check that raises into an ERROR finding (a gpucheck bug), never
a crash.
"""

from __future__ import annotations

from gpucheck.checks.context import Context, Requirements
from gpucheck.checks.registry import SelectionError, all_checks, run, select

__all__ = ["Context", "Requirements", "SelectionError", "all_checks", "run", "select"]
