"""`watch --from LOG --format html`: the summary as a page, each GPU's numbers drawn over time,
throttled samples marked; a day of one-second samples stays small."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import run_gpucheck
from support.watch_run import FIXTURES

from gpucheck.watch.html import render_html, summarise
from gpucheck.watch.log import GpuSample, Sample

DAY = 86_400


def _day_of_samples() -> list[Sample]:
    """One GPU at one sample a second for 24 h: 30 % busy, one 100 % second at noon, and the
    power cap (clock event bit 0x4) active for the ten minutes after 18:00."""
    out = []
    for t in range(DAY):
        values: dict[str, int | float | str | None] = {
            "name": "NVIDIA H100 80GB HBM3",
            "utilization.gpu": 100 if t == 43_200 else 30,
            "memory.used": 30_000,
            "memory.total": 81_559,
            "temperature.gpu": 60,
            "power.draw": 400.0,
            "clocks.current.sm": 1980,
            "clocks_event_reasons.active": 0x4 if 64_800 <= t < 65_400 else 0,
        }
        out.append(Sample(1_700_000_000.0 + t, [GpuSample(0, values, {})]))
    return out


def test_a_day_of_samples_is_a_small_page_that_keeps_the_spike_and_marks_throttling() -> None:
    summary, timeline = summarise(_day_of_samples())
    page = render_html(summary, timeline, "day.csv")
    assert len(page.encode()) < 120_000, len(page.encode())
    assert '<h2 id="gpu-0">GPU 0 NVIDIA H100 80GB HBM3</h2>' in page
    utilisation = page.split('id="gpu0-utilization-gpu-t"')[1].split("</svg>")[0]
    path = re.search(r'<path d="([^"]+)"', utilisation)
    assert path
    ys = {float(y) for y in re.findall(r"[ML][\d.]+ ([\d.]+)", path.group(1))}
    assert ys == {28.0, 120.4}  # 100 % at the top of the plot, 30 % at 160 - 0.3 x 132
    # The throttled ten minutes: ticks at 18:00 of 24 h (column 432 of 576, x 484 and on).
    ticks = re.findall(r'<rect x="(\d+)" y="154" width="1" height="6"/>', utilisation)
    assert ticks and int(ticks[0]) == 484 and len(ticks) <= 5
    assert "red ticks along the bottom: 600 throttled samples" in page
    # Each chart's figures as text under it.
    assert '<td>utilization.gpu</td><td class="num">30</td>' in page
    for chart in ("utilisation", "memory used", "temperature", "power", "clocks"):
        assert f"GPU 0 NVIDIA H100 80GB HBM3: {chart} over time</title>" in page


def test_watch_from_nvidia_smis_csv_writes_the_page(tmp_path: Path) -> None:
    result = run_gpucheck(
        "watch", "--from", str(FIXTURES / "nvsmi-h100-query-gpu.csv"), "--format", "html"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("<!DOCTYPE html>")
    assert "<title>gpucheck watch: " in result.stdout and result.stdout.count("<svg") >= 4
    assert "<script" not in result.stdout


def test_html_is_for_a_saved_log_only() -> None:
    result = run_gpucheck("watch", "-c", "1", "--format", "html")
    assert (result.returncode, result.stderr) == (
        2,
        "gpucheck: --format html goes with --from LOG (a page is written once, at the end)\n",
    )
