"""`gpucheck schema [NAME]`: the JSON Schema of each JSON output (doctor reports by default)."""

from __future__ import annotations

import importlib
import json
from importlib.resources import files
from typing import Annotated, Any

import typer

from gpucheck.cli.common import UserError, write_output
from gpucheck.exit_status import ExitStatus

# name -> (module, function) making the schema of the output it names: imported only for the
# one asked ("report" is the shipped file, generated from the code; a test keeps it current).
SCHEMAS: dict[str, tuple[str, str]] = {
    "report": ("", ""),  # doctor --json
    "snapshot": ("gpucheck.report.schema", "snapshot_schema"),
    "procs": ("gpucheck.procs.render", "schema"),
    "watch": ("gpucheck.watch.log", "record_schema"),  # one line of watch --format jsonl
    "bench": ("gpucheck.bench.schema", "bench_schema"),
    "fit": ("gpucheck.fit.schema", "fit_schema"),
    "fleet": ("gpucheck.fleet.schema", "fleet_schema"),
    "compat": ("gpucheck.compat.schema", "compat_schema"),
    "fix-plan": ("gpucheck.fixplan.render", "plan_schema"),  # fix --json
    "explain": ("gpucheck.explanation.result", "explain_schema"),
    "install": ("gpucheck.install.schema", "install_schema"),
    "preflight": ("gpucheck.preflight.report", "preflight_schema"),
}


# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "the schema was printed",
}


def schema_text(name: str) -> str:
    """The schema named, as JSON text."""
    if name == "report":
        return files("gpucheck.report").joinpath("report.schema.json").read_text(encoding="utf-8")

    module, function = SCHEMAS[name]
    made: dict[str, Any] = getattr(importlib.import_module(module), function)()
    return json.dumps(made, indent=2) + "\n"


def schema(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="[NAME]",
            help="Which output: report (doctor --json), snapshot, procs, watch (one jsonl "
            "record), bench, fit, fleet, compat, fix-plan, explain, install, preflight; report if "
            "not given.",
            autocompletion=lambda: list(SCHEMAS),
            show_default=False,
        ),
    ] = None,
    procs: Annotated[
        bool, typer.Option("--procs", help="Same as NAME procs (kept for older scripts).")
    ] = False,
) -> None:
    """Print the JSON Schema (draft 2020-12) of a JSON output; doctor reports by default."""
    if procs and name not in (None, "procs"):
        # Each flag names a schema: printing one of two would be the wrong one to someone.
        raise UserError(f"schema: --procs names the procs schema, NAME names {name}: give one")
    name = "procs" if procs else "report" if name is None else name
    if name not in SCHEMAS:
        raise UserError(f"schema: {name!r} is not one of {', '.join(SCHEMAS)}")
    text = schema_text(name)
    write_output(None, lambda stream: stream.write(text))
