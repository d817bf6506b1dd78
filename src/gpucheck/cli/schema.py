"""`gpucheck schema`: the JSON Schema of `doctor --json` reports."""

from __future__ import annotations

import sys


def schema() -> None:
    """Print the JSON Schema of `doctor --json` reports."""
    from importlib.resources import files

    resource = files("gpucheck.report").joinpath("report.schema.json")
    sys.stdout.write(resource.read_text(encoding="utf-8"))
