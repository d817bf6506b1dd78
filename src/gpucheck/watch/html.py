"""`watch --from LOG --format html`: the summary as a page, with each GPU's utilisation,
memory, temperature, power and clocks drawn over time and its throttled samples marked.

Folded one sample at a time, like the summary: each series is kept at the chart's pixel width
(report/charts.py MinMax: each column's lowest and highest), so a day of one-second samples
costs the same memory as a minute, and a one-sample spike is still drawn."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gpucheck.model.plural import counted
from gpucheck.report.charts import LineChart, MinMax, Series, figure, line_chart
from gpucheck.report.html import page, table, text
from gpucheck.watch.log import Sample
from gpucheck.watch.summary import THROTTLE_BITS, Stat, Summarizer, Summary

# The charts, in order: (title, fields drawn together, unit, lowest top of the y axis).
CHARTS: tuple[tuple[str, tuple[str, ...], str, float], ...] = (
    ("Utilisation", ("utilization.gpu", "utilization.memory"), "%", 100.0),
    ("Memory used", ("memory.used",), "MiB", 1.0),
    ("Temperature", ("temperature.gpu",), "°C", 100.0),
    ("Power", ("power.draw",), "W", 1.0),
    ("Clocks", ("clocks.current.sm", "clocks.current.memory"), "MHz", 1.0),
)
CHARTED = frozenset(name for _, names, _, _ in CHARTS for name in names)
THROTTLE_MASK = sum(THROTTLE_BITS)


@dataclass
class GpuTimeline:
    series: dict[str, MinMax] = field(default_factory=dict)
    throttled: MinMax = field(default_factory=MinMax)  # value 1 at each throttled sample


class Timeline:
    """Each GPU's charted numbers over time, folded one sample at a time."""

    def __init__(self) -> None:
        self.gpus: dict[int, GpuTimeline] = {}
        self.first: float | None = None
        self.last = 0.0

    def add(self, sample: Sample) -> None:
        if self.first is None:
            self.first = sample.time
        self.last = max(self.last, sample.time)
        for g in sample.gpus:
            if g.error:
                continue
            gpu = self.gpus.get(g.index)
            if gpu is None:  # (a log's GPU count is bounded by the Summarizer beside this)
                gpu = self.gpus[g.index] = GpuTimeline()
            for name in CHARTED:
                value = g.values.get(name)
                if type(value) is int or type(value) is float:
                    series = gpu.series.get(name)
                    if series is None:
                        series = gpu.series[name] = MinMax()
                    series.add(sample.time, float(value))
            bits = g.values.get("clocks_event_reasons.active")
            if isinstance(bits, int) and bits & THROTTLE_MASK:
                gpu.throttled.add(sample.time, 1.0)


def summarise(samples: Iterable[Sample]) -> tuple[Summary, Timeline]:
    """The summary and the timeline of a log, read once."""
    folded, timeline = Summarizer(), Timeline()
    for sample in samples:
        folded.add(sample)
        timeline.add(sample)
    return folded.result(), timeline


def render_html(summary: Summary, timeline: Timeline, source: str) -> str:
    start = timeline.first if timeline.first is not None else 0.0
    end = max(timeline.last, start + 1.0)
    body = [
        f"<header><h1>gpucheck watch: {text(source)}</h1>"
        f'<p class="where">{text(counted(summary.samples, "sample"))} over '
        f"{summary.seconds:.0f} s, {text(counted(len(summary.gpus), 'GPU'))}</p></header>"
    ]
    for s in summary.gpus:
        name = f"GPU {s.index}" + (f" {s.name}" if s.name else "")
        body.append(f'<section><h2 id="gpu-{s.index}">{text(name)}</h2>')
        if s.verdict:
            body.append("<ul>" + "".join(f"<li>! {text(v)}</li>" for v in s.verdict) + "</ul>")
        else:
            body.append("<p>No throttling, no idle time with memory held.</p>")
        gpu = timeline.gpus.get(s.index, GpuTimeline())
        marks = [t for t, _, _ in gpu.throttled.points()]
        count = counted(gpu.throttled.count, "throttled sample")
        throttled = f"; red ticks along the bottom: {count}" if marks else ""
        for title, names, unit, floor in CHARTS:
            drawn = [n for n in names if n in gpu.series]
            if not drawn:
                continue
            high = max([floor] + [s.stats[n].maximum for n in drawn if n in s.stats])
            if unit == "MiB" and "memory.total" in s.stats:
                high = max(high, s.stats["memory.total"].maximum)
            chart = LineChart(
                ident=f"gpu{s.index}-{names[0].replace('.', '-')}",
                title=f"{name}: {title.lower()} over time",
                description=_described(s.stats, drawn, unit) + throttled,
                unit=unit,
                series=[Series(n, gpu.series[n]) for n in drawn],
                start=start,
                end=end,
                low=0.0,
                high=high,
                marks=marks,
                mark_label="throttled",
            )
            rows = [
                (n, f"{s.stats[n].minimum:g}", f"{s.stats[n].mean:.1f}", f"{s.stats[n].maximum:g}")
                for n in drawn
                if n in s.stats
            ]
            body.append(
                figure(
                    line_chart(chart),
                    f"{title} ({unit}) over the log: {', '.join(drawn)}"
                    + ("; throttled samples are ticked in red along the bottom" if marks else ""),
                    table(("field", "min", "mean", "max"), rows, frozenset({1, 2, 3})),
                )
            )
        body.append("</section>")
    return page(f"gpucheck watch: {source}", "\n".join(body))


def _described(stats: dict[str, Stat], names: list[str], unit: str) -> str:
    """What a chart shows, in words (its SVG <desc>)."""
    said = [
        f"{n} from {stats[n].minimum:g} to {stats[n].maximum:g} {unit}" for n in names if n in stats
    ]
    return "; ".join(said) or "no values"
