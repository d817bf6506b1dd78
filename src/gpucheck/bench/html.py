"""`bench --format html`: the bench report as a page: the verdicts (the doctor's layout), and
per GPU the matmuls measured against the datasheet's peak (a bar chart and its table), the
copies, and the GPU-to-GPU copy matrix as a heat map."""

from __future__ import annotations

from typing import IO, Protocol

from gpucheck.bench.measurements import BenchRun, GpuRun
from gpucheck.bench.verdicts import label, shape
from gpucheck.compat.gpus import GpuIndex
from gpucheck.report.charts import bar_chart, figure, heat_map
from gpucheck.report.html import (
    findings_by_layer,
    header_block,
    page,
    report_title,
    table,
    text,
    verdict_block,
)
from gpucheck.report.text import Judged
from gpucheck.version import __version__


class BenchResult(Judged, Protocol):
    """What the page reads of a bench report (bench/report.py BenchReport: named here by its
    shape, as report.py imports this module)."""

    @property
    def run(self) -> BenchRun | None: ...


def _datasheet() -> GpuIndex | None:
    """The shipped GPU table (compat/gpus.toml), for the datasheet's peaks; None where it
    cannot be read (the page then shows the measurements alone)."""
    from gpucheck.compat import CompatError, load

    try:
        return load().gpus
    except (CompatError, OSError):
        return None


def _gpu_section(run: GpuRun, index: GpuIndex | None) -> str:
    ident = f"bench-gpu{run.facts.index}"
    out = [f'<section><h2 id="{ident}">{text(label(run))}</h2>']
    if run.problem:
        out.append(f"<p>Not measured: {text(run.problem)}</p>")
    spec = index.spec(run.facts.name or "") if index is not None else None
    if run.matmuls:
        labels = [shape(m) for m in run.matmuls]
        peaks: list[float | None] = []
        for m in run.matmuls:
            try:
                peaks.append(spec.tflops(m.dtype) if spec is not None else None)
            except KeyError:  # a dtype the datasheet has no column for
                peaks.append(None)
        values = [[m.tflops, peak] for m, peak in zip(run.matmuls, peaks, strict=True)]
        svg = bar_chart(
            f"{ident}-matmul",
            f"{label(run)}: matmul TFLOPS, measured and datasheet",
            "; ".join(
                f"{name}: {m.tflops:.1f} measured"
                + (f", {peak:g} datasheet" if peak is not None else "")
                for name, m, peak in zip(labels, run.matmuls, peaks, strict=True)
            ),
            labels,
            ["measured", "datasheet (dense peak)"],
            values,
            "TFLOPS",
        )
        rows = [
            (
                name,
                f"{m.median_ms:.3f}",
                f"{m.tflops:.1f}",
                f"{peak:g}" if peak is not None else "-",
                f"{100 * m.tflops / peak:.0f}%" if peak else "-",
                "yes" if m.correct else "NO",
            )
            for name, m, peak in zip(labels, run.matmuls, peaks, strict=True)
        ]
        headings = ("matmul", "median ms", "TFLOPS", "datasheet", "share", "correct")
        out.append(
            figure(
                svg,
                "Matmul throughput: measured (colour 1) against the datasheet's dense peak "
                "(colour 2)",
                table(headings, rows, frozenset({1, 2, 3, 4})),
            )
        )
    if run.copies:
        copies = [
            (c.path, f"{c.bytes:,}", f"{c.median_ms:.3f}", f"{c.gbs:.1f}") for c in run.copies
        ]
        out.append("<h3>Copies</h3>")
        out.append(table(("path", "bytes", "median ms", "GB/s"), copies, frozenset({1, 2, 3})))
    if run.skipped:
        out.append(
            "<ul>"
            + "".join(f"<li>{text(d)} not measured: {text(w)}</li>" for d, w in run.skipped.items())
            + "</ul>"
        )
    out.append("</section>")
    return "".join(out)


def _peer_section(bench: BenchRun) -> str:
    if not bench.peers:
        return ""
    gpus = sorted({p.src for p in bench.peers} | {p.dst for p in bench.peers})
    rate = {(p.src, p.dst): p.gbs for p in bench.peers}
    names = [f"GPU {i}" for i in gpus]
    values = [[rate.get((s, d)) for d in gpus] for s in gpus]
    svg = heat_map(
        "bench-peers",
        "GPU-to-GPU copies, GB/s (row: from, column: to)",
        "; ".join(f"GPU {p.src} to GPU {p.dst}: {p.gbs:.1f} GB/s" for p in bench.peers),
        names,
        names,
        values,
        "GB/s",
    )
    rows = [
        (f"GPU {p.src}", f"GPU {p.dst}", "yes" if p.peer_access else "no", f"{p.gbs:.1f}")
        for p in bench.peers
    ]
    return (
        '<section><h2 id="bench-peers">GPU-to-GPU copies</h2>'
        + figure(
            svg,
            "Copy rate between each pair of GPUs (darker: faster; the figure is in each cell)",
            table(("from", "to", "peer access", "GB/s"), rows, frozenset({3})),
        )
        + (f"<p>{text(bench.peer_problem)}</p>" if bench.peer_problem else "")
        + "</section>"
    )


def render_html(report: BenchResult, stream: IO[str], verbose: bool = False) -> None:
    run = report.run
    body = [header_block(report, f"gpucheck {__version__} bench")]
    if run is not None:
        via = f"{run.framework} {run.framework_version or ''}".strip() if run.framework else "-"
        body.append(
            f'<p class="muted">{text(via)} · {text(run.python or "no framework found")}'
            + (" · --quick" if run.quick else "")
            + "</p>"
        )
    body += [verdict_block(report), findings_by_layer(report, verbose)]
    if run is not None:
        index = _datasheet()
        body += [_gpu_section(g, index) for g in run.gpus]
        body.append(_peer_section(run))
    stream.write(page(report_title(report, "bench"), "\n".join(body)))
