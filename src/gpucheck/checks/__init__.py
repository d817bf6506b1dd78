"""Checks: pure functions of (snapshot, compat matrix, requirements) -> findings.

No I/O, no GPU libraries. One package per layer of the stack (system, driver, gpus, network,
cuda, cudnn, frameworks, requirements), each declaring its checks in report order in its
`__init__` (DECLARED: the module of each, the facts they read, their prerequisites), next to
its fact derivations and fix builders; fixes.py holds the steps several layers give.
`registry` derives the report order, the id-to-layer map and what to import from those
declarations and imports a layer's modules when first needed: `registry.all_checks()`
registers every check, `registry.select()` with --only just the layers it names, so a
`doctor --only gpus` never imports the framework checks. `registry.run()` evaluates them in
report order and turns a check that raises into an ERROR finding (a gpucheck bug), never a
crash.
"""

from __future__ import annotations

from gpucheck.checks.context import Context, Requirements
from gpucheck.checks.registry import SelectionError, all_checks, run, select

__all__ = ["Context", "Requirements", "SelectionError", "all_checks", "run", "select"]
