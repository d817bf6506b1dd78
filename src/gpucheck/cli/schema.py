"""`gpucheck schema`: the JSON Schema of `doctor --json` reports, or of `procs --json`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from gpucheck.cli.common import write_output


def schema(
    procs: Annotated[
        bool, typer.Option("--procs", help="The schema of `gpucheck procs --json` instead.")
    ] = False,
) -> None:
    """Print the JSON Schema of `doctor --json` reports (or, with --procs, of `procs --json`)."""
    if procs:
        from gpucheck.procs.render import schema as procs_schema

        text = json.dumps(procs_schema(), indent=2) + "\n"
    else:
        from importlib.resources import files

        resource = files("gpucheck.report").joinpath("report.schema.json")
        text = resource.read_text(encoding="utf-8")
    write_output(None, lambda stream: stream.write(text))
