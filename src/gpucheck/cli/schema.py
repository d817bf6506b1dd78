"""`gpucheck schema [NAME]`: the JSON Schema of each JSON output (doctor reports by default)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import typer

from gpucheck.cli.common import UserError, write_output


def _report() -> str:
    from importlib.resources import files

    # The shipped file, generated from the code (a test keeps it current).
    return files("gpucheck.report").joinpath("report.schema.json").read_text(encoding="utf-8")


def _snapshot() -> dict[str, Any]:
    from gpucheck.report.schema import snapshot_schema

    return snapshot_schema()


def _procs() -> dict[str, Any]:
    from gpucheck.procs.render import schema as procs_schema

    return procs_schema()


def _watch() -> dict[str, Any]:
    from gpucheck.watch.log import record_schema

    return record_schema()


def _bench() -> dict[str, Any]:
    from gpucheck.bench.schema import bench_schema

    return bench_schema()


def _fit() -> dict[str, Any]:
    from gpucheck.fit.schema import fit_schema

    return fit_schema()


def _fleet() -> dict[str, Any]:
    from gpucheck.fleet.schema import fleet_schema

    return fleet_schema()


def _compat() -> dict[str, Any]:
    from gpucheck.compat.schema import compat_schema

    return compat_schema()


def _fix_plan() -> dict[str, Any]:
    from gpucheck.fixplan.render import plan_schema

    return plan_schema()


# name -> the schema (as text, or as data to print), for the output it describes.
SCHEMAS: dict[str, Callable[[], str | dict[str, Any]]] = {
    "report": _report,  # doctor --json
    "snapshot": _snapshot,
    "procs": _procs,
    "watch": _watch,  # one line of watch --format jsonl
    "bench": _bench,
    "fit": _fit,
    "fleet": _fleet,
    "compat": _compat,
    "fix-plan": _fix_plan,  # fix --json
}


def schema(
    name: Annotated[
        str,
        typer.Argument(
            metavar="[NAME]",
            help="Which output: report (doctor --json), snapshot, procs, watch (one jsonl "
            "record), bench, fit, fleet, compat, fix-plan.",
            autocompletion=lambda: list(SCHEMAS),
        ),
    ] = "report",
    procs: Annotated[
        bool, typer.Option("--procs", help="Same as NAME procs (kept for older scripts).")
    ] = False,
) -> None:
    """Print the JSON Schema (draft 2020-12) of a JSON output; doctor reports by default."""
    if procs:
        name = "procs"
    make = SCHEMAS.get(name)
    if make is None:
        raise UserError(f"schema: {name!r} is not one of {', '.join(SCHEMAS)}")
    made = make()
    text = made if isinstance(made, str) else json.dumps(made, indent=2) + "\n"
    write_output(None, lambda stream: stream.write(text))
