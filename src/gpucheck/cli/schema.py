"""`gpucheck schema`: the JSON Schema of `doctor --json` reports."""

from __future__ import annotations

from gpucheck.cli.common import write_output


def schema() -> None:
    """Print the JSON Schema of `doctor --json` reports."""
    from importlib.resources import files

    resource = files("gpucheck.report").joinpath("report.schema.json")
    text = resource.read_text(encoding="utf-8")
    write_output(None, lambda stream: stream.write(text))
