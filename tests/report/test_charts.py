"""The SVG charts: a day of one-second samples drawn at the chart's pixel width, every
extreme kept; axes, labels and a text alternative on every chart."""

from __future__ import annotations

import re

from gpucheck.report.charts import (
    PLOT_WIDTH,
    LineChart,
    MinMax,
    Series,
    bar_chart,
    heat_map,
    line_chart,
)

DAY = 86_400  # one-second samples over 24 hours


def _ys(svg: str) -> set[float]:
    """The y coordinates of the chart's data path."""
    path = re.search(r'<path d="([^"]+)"', svg)
    assert path, svg[:300]
    return {float(y) for y in re.findall(r"[ML][\d.]+ ([\d.]+)", path.group(1))}


def _utilisation(values: MinMax, marks: list[float] | None = None) -> str:
    chart = LineChart(
        "u", "GPU 0: utilisation", "utilization.gpu", "%", [Series("utilization.gpu", values)],
        start=0.0, end=DAY - 1.0, low=0.0, high=100.0, marks=marks or [], mark_label="throttled",
    )  # fmt: skip
    return line_chart(chart)


def test_a_one_sample_spike_in_a_day_of_samples_survives_into_the_path() -> None:
    for spike_at in (0, 43_200, DAY - 1):  # the first sample, the middle, the last
        values = MinMax()
        for t in range(DAY):
            values.add(float(t), 100.0 if t == spike_at else 10.0)
        svg = _utilisation(values)
        # The plot runs from y 28 (100 %) to y 160 (0 %): 10 % is 146.8, the spike at the top.
        assert _ys(svg) == {28.0, 146.8}, spike_at
        # Bounded: a few numbers per pixel column kept, a few per column drawn.
        assert len(values.cells) <= 2 * PLOT_WIDTH
        assert len(svg) < 40_000, len(svg)


def test_a_dip_survives_as_well_as_a_spike() -> None:
    values = MinMax()
    for t in range(DAY):
        values.add(float(t), 0.0 if t == 5_000 else 90.0)
    assert _ys(_utilisation(values)) == {160.0, 41.2}  # 0 % at the bottom, 90 % at 160 - 0.9 x 132


def test_a_short_series_is_drawn_point_by_point() -> None:
    values = MinMax()
    for t, v in ((0.0, 0.0), (DAY / 2, 50.0), (DAY - 1.0, 100.0)):
        values.add(t, v)
    path = re.search(r'<path d="([^"]+)"', _utilisation(values))
    assert path and path.group(1) == "M52.5 160L340.5 94L627.5 28"


def test_a_line_chart_has_axes_labels_and_a_text_alternative() -> None:
    values = MinMax()
    for t in range(100):
        values.add(float(t), float(t % 7))
    svg = _utilisation(values, marks=[10.0, 11.0, 50.0])
    assert 'role="img" aria-labelledby="u-t u-d"' in svg
    assert '<title id="u-t">GPU 0: utilisation</title><desc id="u-d">utilization.gpu</desc>' in svg
    assert ">0 s</text>" in svg and ">24 h</text>" in svg  # the time axis, start and end
    assert ">100</text>" in svg and ">50</text>" in svg  # the y axis
    assert '<g fill="#c21a1a"><title>throttled</title>' in svg


def test_a_bar_chart_labels_every_bar_with_its_figure() -> None:
    svg = bar_chart(
        "b", "TFLOPS", "measured and datasheet", ["fp16", "tf32"], ["measured", "datasheet"],
        [[700.5, 989.4], [None, 494.7]], "TFLOPS",
    )  # fmt: skip
    assert svg.count("</title></rect>") == 3  # one bar per figure, none for "not measured"
    for figure in ("700.5", "989.4", "494.7"):
        assert f">{figure}</text>" in svg
    assert "<title>fp16 measured: 700.5 TFLOPS</title>" in svg


def test_a_heat_map_writes_each_figure_in_its_cell() -> None:
    svg = heat_map(
        "h", "copies", "GPU to GPU", ["GPU 0", "GPU 1"], ["GPU 0", "GPU 1"],
        [[None, 48.2], [47.9, None]], "GB/s",
    )  # fmt: skip
    assert ">48</text>" in svg and ">-</text>" in svg
    assert "<title>GPU 0 to GPU 1: 48.2 GB/s</title>" in svg
