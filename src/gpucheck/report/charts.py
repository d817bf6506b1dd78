"""Charts as inline SVG, drawn here (no script, no library): a line chart over time, a bar
chart and a heat map, each with a <title> and <desc> for a screen reader (the page puts a
table or a summary of the same figures under it).

A long series is folded to the chart's pixel width as it arrives (MinMax): each column keeps
its lowest and highest value, so a one-sample spike in a day of one-second samples is still
drawn, and the memory kept is a few numbers per pixel whatever the number of samples."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpucheck.report.html import text
from gpucheck.report.html_style import PALETTE, SERIES_COLOURS

WIDTH = 640  # the viewBox's width; the page scales it to the column
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 14, 30  # margins around the plot: axis labels live there
PLOT_WIDTH = WIDTH - LEFT - RIGHT  # one column of a line chart per unit of this
LINE_HEIGHT = 190
LINE_TOP = 28  # a line chart's top margin holds its legend
FONT = 'font-family="system-ui,DejaVu Sans,sans-serif" font-size="11"'


class MinMax:
    """A series folded to at most 2 x `columns` cells of [lowest, highest] as points arrive,
    so that any range can be drawn at `columns` wide without losing an extreme. Before the
    time range is known, the first 2 x `columns` points are kept as they are; then each cell
    spans a fixed time, doubled (two cells merged into one) whenever the series outgrows it."""

    def __init__(self, columns: int = PLOT_WIDTH) -> None:
        self.columns = columns
        self.origin: float | None = None
        self.span: float | None = None  # seconds per cell, once the raw points are folded
        self.cells: dict[int, list[float]] = {}
        self.raw: list[tuple[float, float]] = []
        self.count = 0

    def add(self, t: float, value: float) -> None:
        if not math.isfinite(value) or not math.isfinite(t):
            return
        self.count += 1
        if self.origin is None:
            self.origin = t
        if self.span is None:
            self.raw.append((t, value))
            if len(self.raw) > 2 * self.columns:
                self._fold()
            return
        self._put(t, value, value)

    def _fold(self) -> None:
        assert self.origin is not None
        last = max(t for t, _ in self.raw)
        self.span = max((last - self.origin) / self.columns, 1e-9)
        for t, v in self.raw:
            self._put(t, v, v)
        self.raw = []

    def _put(self, t: float, low: float, high: float) -> None:
        assert self.origin is not None and self.span is not None
        index = max(0, int((t - self.origin) / self.span))
        while index >= 2 * self.columns:  # outgrown: every two cells become one
            self.span *= 2
            merged: dict[int, list[float]] = {}
            for i, (lo, hi) in self.cells.items():
                pair = merged.setdefault(i // 2, [lo, hi])
                pair[0], pair[1] = min(pair[0], lo), max(pair[1], hi)
            self.cells = merged
            index //= 2
        cell = self.cells.get(index)
        if cell is None:
            self.cells[index] = [low, high]
        else:
            cell[0], cell[1] = min(cell[0], low), max(cell[1], high)

    def points(self) -> list[tuple[float, float, float]]:
        """(time, lowest, highest) per cell (per point before folding), in time order."""
        if self.span is None:
            return sorted((t, v, v) for t, v in self.raw)
        assert self.origin is not None
        return [
            (self.origin + (i + 0.5) * self.span, lo, hi)
            for i, (lo, hi) in sorted(self.cells.items())
        ]


@dataclass
class Series:
    label: str
    values: MinMax
    colour: str = ""


@dataclass
class LineChart:
    """A line chart over time: `start`/`end` in seconds, the y axis from `low` to `high`."""

    ident: str  # unique on the page: the SVG's title and desc ids are made from it
    title: str
    description: str
    unit: str
    series: list[Series]
    start: float
    end: float
    low: float
    high: float
    marks: list[float] = field(default_factory=list)  # times of events (throttling), drawn below
    mark_label: str = ""


def _fmt(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _tick(value: float) -> str:
    """An axis label short enough for the margin: 81559 as 82k."""
    return f"{value / 1000:.0f}k" if abs(value) >= 10_000 else _fmt(value)


def _svg_open(ident: str, title: str, description: str, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-labelledby="{ident}-t {ident}-d" {FONT}>'
        f'<title id="{ident}-t">{text(title)}</title>'
        f'<desc id="{ident}-d">{text(description)}</desc>'
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="{PALETTE["paper"]}"/>'
    )


def elapsed(seconds: float) -> str:
    """A time axis label: 0 s, 90 s, 15 min, 6 h."""
    if seconds < 120:
        return f"{_fmt(seconds)} s"
    if seconds < 7200:
        return f"{_fmt(seconds / 60)} min"
    return f"{_fmt(seconds / 3600)} h"


def columns(chart: LineChart, values: MinMax) -> list[tuple[int, float, float]]:
    """The series at the chart's pixel width: (column, lowest, highest) per column with data."""
    length = max(chart.end - chart.start, 1e-9)
    out: dict[int, list[float]] = {}
    for t, lo, hi in values.points():
        col = min(PLOT_WIDTH - 1, max(0, int((t - chart.start) / length * PLOT_WIDTH)))
        cell = out.setdefault(col, [lo, hi])
        cell[0], cell[1] = min(cell[0], lo), max(cell[1], hi)
    return [(c, lo, hi) for c, (lo, hi) in sorted(out.items())]


def line_chart(chart: LineChart) -> str:
    height, top = LINE_HEIGHT, LINE_TOP
    plot_h = height - top - BOTTOM
    span = (chart.high - chart.low) or 1.0

    def y(value: float) -> str:
        clamped = min(max(value, chart.low), chart.high)
        return _fmt(top + plot_h - (clamped - chart.low) / span * plot_h)

    out = [_svg_open(chart.ident, chart.title, chart.description, height)]
    ink, muted, line = PALETTE["ink"], PALETTE["muted"], PALETTE["line"]
    for value in (chart.low, (chart.low + chart.high) / 2, chart.high):
        out.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value)}" y2="{y(value)}" '
            f'stroke="{line}" stroke-width="1"/>'
            f'<text x="{LEFT - 4}" y="{y(value)}" dy="4" text-anchor="end" fill="{ink}">'
            f"{text(_tick(value))}</text>"
        )
    out.append(
        f'<text x="4" y="{top + plot_h / 2:.0f}" fill="{muted}" '
        f'transform="rotate(-90 10 {top + plot_h / 2:.0f})" text-anchor="middle">'
        f"{text(chart.unit)}</text>"
    )
    length = chart.end - chart.start
    for share, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
        x = LEFT + share * PLOT_WIDTH
        out.append(
            f'<text x="{_fmt(x)}" y="{height - 10}" text-anchor="{anchor}" fill="{ink}">'
            f"{text(elapsed(share * length))}</text>"
        )
    out.append(
        f'<line x1="{LEFT}" x2="{LEFT}" y1="{top}" y2="{top + plot_h}" stroke="{muted}"/>'
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{top + plot_h}" y2="{top + plot_h}" '
        f'stroke="{muted}"/>'
    )
    if chart.marks:  # one tick per column with an event, along the bottom of the plot
        cols = sorted({int((t - chart.start) / (length or 1e-9) * PLOT_WIDTH) for t in chart.marks})
        ticks = "".join(
            f'<rect x="{LEFT + min(c, PLOT_WIDTH - 1)}" y="{top + plot_h - 6}" '
            'width="1" height="6"/>'
            for c in cols
        )
        out.append(
            f'<g fill="{PALETTE["fail"]}"><title>{text(chart.mark_label)}</title>{ticks}</g>'
        )
    for i, series in enumerate(chart.series):  # the legend, in the top margin
        colour = series.colour or SERIES_COLOURS[i % len(SERIES_COLOURS)]
        key = LEFT + i * 200
        out.append(
            f'<line x1="{key}" x2="{key + 16}" y1="10" y2="10" stroke="{colour}" '
            f'stroke-width="3"/><text x="{key + 20}" y="14" fill="{ink}">'
            f"{text(series.label)}</text>"
        )
    for i, series in enumerate(chart.series):
        colour = series.colour or SERIES_COLOURS[i % len(SERIES_COLOURS)]
        path: list[str] = []
        for col, lo, hi in columns(chart, series.values):
            at = _fmt(LEFT + col + 0.5)  # each column's range as a stroke, joined to the next
            path.append(f"{'L' if path else 'M'}{at} {y(hi)}")
            if hi != lo:
                path.append(f"L{at} {y(lo)}")
        if len(path) == 1:  # one sample: a dot, where a path of one point draws nothing
            path.append("h1")
        if path:
            out.append(
                f'<path d="{"".join(path)}" fill="none" stroke="{colour}" stroke-width="1.5" '
                f'stroke-linejoin="round" stroke-linecap="round">'
                f"<title>{text(series.label)}</title></path>"
            )
    out.append("</svg>")
    return "".join(out)


def bar_chart(
    ident: str,
    title: str,
    description: str,
    labels: Sequence[str],
    groups: Sequence[str],
    values: Sequence[Sequence[float | None]],
    unit: str,
) -> str:
    """Horizontal bars (long labels fit a phone): per label, one bar per group; `values[i][g]`
    is label i's figure for group g (None: not measured, no bar)."""
    bar, gap, label_w = 12, 10, 150
    rows = len(labels)
    legend = 18 if len(groups) > 1 else 0
    height = TOP + legend + rows * (len(groups) * bar + gap) + BOTTOM
    top = max((v for row in values for v in row if v is not None), default=0.0) or 1.0
    plot_w = WIDTH - label_w - RIGHT - 40
    out = [_svg_open(ident, title, description, height)]
    ink = PALETTE["ink"]
    for g, name in enumerate(groups if legend else ()):
        colour = SERIES_COLOURS[g % len(SERIES_COLOURS)]
        x = label_w + g * 170
        out.append(
            f'<rect x="{x}" y="{TOP - 8}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{x + 14}" y="{TOP + 1}" fill="{ink}">{text(name)}</text>'
        )
    y = TOP + legend
    for label, row in zip(labels, values, strict=True):
        out.append(
            f'<text x="{label_w - 6}" y="{y + len(groups) * bar / 2 + 4:.0f}" text-anchor="end" '
            f'fill="{ink}">{text(label)}</text>'
        )
        for g, value in enumerate(row):
            if value is not None:
                w = max(1.0, value / top * plot_w)
                colour = SERIES_COLOURS[g % len(SERIES_COLOURS)]
                out.append(
                    f'<rect x="{label_w}" y="{y}" width="{_fmt(w)}" height="{bar - 2}" '
                    f'fill="{colour}"><title>{text(f"{label} {groups[g]}: {value:g} {unit}")}'
                    f"</title></rect>"
                    f'<text x="{_fmt(label_w + w + 4)}" y="{y + bar - 3}" fill="{ink}">'
                    f"{text(f'{value:g}')}</text>"
                )
            y += bar
        y += gap
    out.append(
        f'<line x1="{label_w}" x2="{label_w}" y1="{TOP + legend - 2}" y2="{y - gap + 2}" '
        f'stroke="{PALETTE["muted"]}"/>'
        f'<text x="{label_w}" y="{height - 10}" fill="{PALETTE["muted"]}">{text(unit)}</text>'
    )
    out.append("</svg>")
    return "".join(out)


def heat_map(
    ident: str,
    title: str,
    description: str,
    rows: Sequence[str],
    cols: Sequence[str],
    values: Sequence[Sequence[float | None]],
    unit: str,
) -> str:
    """A grid of cells shaded by value (darker: higher), each with its figure written in it
    (so the colour is never the only signal); None is an empty cell marked with a dash."""
    cell, label_w = 54, 60
    height = TOP + 20 + len(rows) * cell + BOTTOM
    width = min(WIDTH, label_w + len(cols) * cell + RIGHT)
    top = max((v for row in values for v in row if v is not None), default=0.0) or 1.0
    out = [_svg_open(ident, title, description, height).replace(f"0 0 {WIDTH} ", f"0 0 {width} ")]
    ink = PALETTE["ink"]
    for c, name in enumerate(cols):
        out.append(
            f'<text x="{label_w + c * cell + cell / 2:.0f}" y="{TOP + 8}" text-anchor="middle" '
            f'fill="{ink}">{text(name)}</text>'
        )
    for r, (name, row) in enumerate(zip(rows, values, strict=True)):
        y = TOP + 20 + r * cell
        out.append(
            f'<text x="{label_w - 6}" y="{y + cell / 2 + 4:.0f}" text-anchor="end" fill="{ink}">'
            f"{text(name)}</text>"
        )
        for c, value in enumerate(row):
            x = label_w + c * cell
            if value is None:
                out.append(
                    f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                    f'fill="{PALETTE["soft"]}"/><text x="{x + cell / 2 - 1:.0f}" '
                    f'y="{y + cell / 2 + 4:.0f}" text-anchor="middle" fill="{ink}">-</text>'
                )
                continue
            share = max(0.0, min(1.0, value / top))
            shade = _blend("#ffffff", "#0b3d91", 0.1 + 0.9 * share)
            label_ink = max(("#ffffff", ink), key=lambda fg: contrast(fg, shade))
            out.append(
                f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{shade}">'
                f"<title>{text(f'{name} to {cols[c]}: {value:g} {unit}')}</title></rect>"
                f'<text x="{x + cell / 2 - 1:.0f}" y="{y + cell / 2 + 4:.0f}" text-anchor="middle" '
                f'fill="{label_ink}">{text(f"{value:.0f}")}</text>'
            )
    out.append(
        f'<text x="{label_w}" y="{height - 10}" fill="{PALETTE["muted"]}">{text(unit)}</text></svg>'
    )
    return "".join(out)


def contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two #rrggbb colours (1 to 21)."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _luminance(colour: str) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(colour[i : i + 2], 16)) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _blend(a: str, b: str, share: float) -> str:
    pa = [int(a[i : i + 2], 16) for i in (1, 3, 5)]
    pb = [int(b[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * share):02x}" for x, y in zip(pa, pb, strict=True))


def figure(svg: str, caption: str, alternative: str = "") -> str:
    """A chart with its caption and, under it, the same figures as text (a table)."""
    return f"<figure>{svg}<figcaption>{text(caption)}</figcaption>{alternative}</figure>"
