"""The report on a terminal: the lines of text.layout() in colour, each wrapped under its
hanging indent. Colour follows rich (NO_COLOR and FORCE_COLOR honoured)."""

from __future__ import annotations

from typing import IO, Any

from rich.console import Console
from rich.text import Text

from gpucheck.report.text import Judged, layout


class _Console(Console):
    def __init__(self, **options: Any) -> None:
        # In a Jupyter kernel rich would send every line to the notebook as its own display
        # output, ignoring `file`; the report's one notebook output is Report's mimebundle.
        super().__init__(force_jupyter=False, **options)

    def on_broken_pipe(self) -> None:
        # rich's own handling exits 1; the CLI keeps the report's exit code instead.
        raise BrokenPipeError


def render(report: Judged, stream: IO[str] | None = None, verbose: bool = False) -> None:
    console = _Console(file=stream, highlight=False, soft_wrap=False, emoji=False, markup=False)
    _render(console, report, verbose)


def _render(console: Console, report: Judged, verbose: bool) -> None:
    unicode_ok = (console.encoding or "").lower().startswith("utf")
    for line in layout(report, verbose, unicode_ok):
        _hanging(
            console, Text(line.lead, style=line.lead_style), Text(line.body, style=line.body_style)
        )


def _hanging(console: Console, prefix: Text, body: Text) -> None:
    """Print `prefix` + `body`, wrapping `body` with continuation lines aligned under it
    (and no padding: no trailing spaces)."""
    indent = prefix.cell_len
    width = max(30, console.width - indent)
    if not body.plain:
        console.print(prefix, soft_wrap=True)
        return
    for i, line in enumerate(body.wrap(console, width)):
        line.rstrip()
        lead = prefix if i == 0 else Text(" " * indent)
        console.print(Text.assemble(lead, line), soft_wrap=True)
