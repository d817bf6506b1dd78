"""`gpucheck schema`: the JSON Schema of `doctor --json` reports, or of `procs --json`."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer


def schema(
    procs: Annotated[
        bool, typer.Option("--procs", help="The schema of `gpucheck procs --json` instead.")
    ] = False,
) -> None:
    """Print the JSON Schema of `doctor --json` reports (or, with --procs, of `procs --json`)."""
    if procs:
        from gpucheck.report.procs import schema as procs_schema

        sys.stdout.write(json.dumps(procs_schema(), indent=2) + "\n")
        return
    from importlib.resources import files

    resource = files("gpucheck.report").joinpath("report.schema.json")
    sys.stdout.write(resource.read_text(encoding="utf-8"))
