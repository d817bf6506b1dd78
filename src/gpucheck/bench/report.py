"""The bench report: the doctor's report family (same summary, findings, exit-code rule and
snapshot) plus the measurements under "bench"; text for a person with every figure shown."""

from __future__ import annotations

from typing import IO, Any

from rich.console import Console
from rich.text import Text

from gpucheck.bench.html import render_html
from gpucheck.bench.measurements import BenchRun
from gpucheck.model.decoding import to_dict
from gpucheck.model.finding import Status
from gpucheck.model.plural import counted
from gpucheck.report.core import Report
from gpucheck.report.formats import render_json
from gpucheck.report.output_format import Format, FunctionFormat, format_table
from gpucheck.report.text import MARKS, printable
from gpucheck.version import __version__

BENCH_FORMAT_VERSION = "1.1"  # of the "bench" object inside the report (1.1: m, sustained,
# numa_node, duration, during.timeline)


class BenchReport(Report):
    run: BenchRun | None = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        bench = to_dict(self.run)
        # The facts of each GPU are the snapshot's; keep the index only.
        for gpu in bench.get("gpus", []):
            gpu["index"] = gpu.pop("facts", {}).get("index")
        data["bench"] = {"format_version": BENCH_FORMAT_VERSION, **bench}
        return data


def render_text(report: BenchReport, stream: IO[str], verbose: bool = False) -> None:
    console = Console(file=stream, highlight=False, soft_wrap=True, emoji=False)
    unicode_ok = (console.encoding or "").lower().startswith("utf")
    run = report.run
    where = report.snapshot.system.hostname
    head = f"gpucheck {__version__} bench  {where}"
    if run is not None:
        via = f"{run.framework} {run.framework_version or ''}".strip() if run.framework else "-"
        head += f" · {via} · {run.python or 'no framework found'}"
        head += " · --quick" if run.quick else ""
    console.print(Text(printable(head), style="bold"))
    for f in report.findings:
        mark, ascii_mark, style = MARKS[f.status]
        line = Text("  ")
        line.append(mark if unicode_ok else ascii_mark, style=style)
        line.append(" ")
        line.append(
            printable(f.title), style=style if f.status in (Status.FAIL, Status.ERROR) else ""
        )
        if f.status in (Status.WARN, Status.FAIL) or verbose:
            line.append(f"  [{f.id}]", style="dim")
        console.print(line)
        for ev in f.evidence:
            console.print(
                Text(printable(f"      {ev}"), style="" if f.status != Status.PASS else "dim")
            )
        if f.fix and f.status in (Status.WARN, Status.FAIL, Status.ERROR):
            console.print(Text(printable(f"      fix: {f.fix.text}")))
    c = report.counts
    console.print()
    if report.ready:
        warn = f", {counted(c['warn'], 'warning')}" if c["warn"] else ""
        console.print(Text(f"Measured: {c['pass']} as expected{warn}", style="bold green"))
    else:
        console.print(
            Text(
                f"{counted(len(report.problems), 'problem')}: {c['fail']} failed", style="bold red"
            )
        )


# The formats of `bench --format`, by name; text is the default. JSON: the report's own.
FORMATS: dict[str, Format[BenchReport]] = format_table(
    FunctionFormat("text", render_text, takes_verbose=True),
    FunctionFormat("json", render_json, takes_verbose=True),
    FunctionFormat("html", render_html, takes_verbose=True),
)
