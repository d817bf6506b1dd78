"""`fleet --format html`: the fleet as a page: the verdict, the problems per check (a bar
chart of the hosts each one hit, and the hosts), the version spread of each layer (bars of
hosts per version), the inventory and the GPUs to act on. Rows are written as the store gives
them, never held whole."""

from __future__ import annotations

import itertools
from typing import IO

from gpucheck.fleet.rows import VERBS, head_line, inventory_row
from gpucheck.fleet.summary import HOSTS_SHOWN, Fleet
from gpucheck.report.charts import bar_chart, figure
from gpucheck.report.html import page, table, text
from gpucheck.version import __version__


def _problems(fleet: Fleet) -> str:
    groups = fleet.problems
    labels = [f"{g.check} ({g.status})" for g in groups]
    svg = bar_chart(
        "fleet-problems",
        "Hosts with each problem",
        "; ".join(f"{label}: {g.count} host(s)" for label, g in zip(labels, groups, strict=True)),
        labels,
        ["hosts"],
        [[float(g.count)] for g in groups],
        "hosts",
    )
    items = []
    for g in groups:
        more = g.count - HOSTS_SHOWN
        shown = ", ".join(g.first_hosts[:HOSTS_SHOWN]) + (f" and {more} more" if more > 0 else "")
        verb = VERBS.get(g.status, g.status)
        items.append(
            f"<li><strong>{text(g.check)}</strong> {text(verb)} on {g.count} host(s): "
            f'{text(g.title)}<br><span class="muted">{text(shown)}</span></li>'
        )
    return (
        '<section><h2 id="problems">Problems across the fleet</h2>'
        + figure(svg, "Hosts each check found a problem on, worst status first")
        + f"<ul>{''.join(items)}</ul></section>"
    )


def _versions(fleet: Fleet) -> str:
    out = ['<section><h2 id="versions">Version spread (hosts)</h2>']
    for n, (category, counts) in enumerate(fleet.versions.items()):
        versions = list(counts)
        svg = bar_chart(
            f"fleet-versions-{n}",
            f"{category}: hosts per version",
            "; ".join(f"{v}: {c} host(s)" for v, c in counts.items()),
            versions,
            ["hosts"],
            [[float(counts[v])] for v in versions],
            "hosts",
        )
        out.append(figure(svg, f"{category}: hosts per version"))
    out.append("</section>")
    return "".join(out)


def render_html(fleet: Fleet, stream: IO[str]) -> None:
    body = [
        f"<header><h1>gpucheck {text(__version__)} fleet</h1>"
        f"<p>{text(head_line(fleet))}</p></header>"
    ]
    if fleet.problems:
        body.append(_problems(fleet))
    if fleet.versions:
        body.append(_versions(fleet))
    if fleet.host_count:
        header = ("host", "GPUs", "driver", "CUDA", "frameworks", "ready", "problems")
        rows = itertools.starmap(inventory_row, fleet.hosts())
        body.append(
            '<section><h2 id="inventory">Inventory</h2>' + table(header, rows) + "</section>"
        )
    acts = [
        (a.host, a.gpu.index, a.gpu.uuid or "-", a.gpu.serial or "-", a.gpu.check, a.gpu.status)
        for a in fleet.gpus_to_act_on()
    ]
    if acts:
        columns = ("host", "GPU", "UUID", "serial", "check", "status")
        body.append(
            '<section><h2 id="act">GPUs to act on</h2>' + table(columns, acts) + "</section>"
        )
    if fleet.bad_count:
        bad = "".join(f"<li>{text(b.source)}: {text(b.reason)}</li>" for b in fleet.bad_reports())
        body.append(
            f'<section><h2 id="bad">Bad reports ({fleet.bad_count})</h2><ul>{bad}</ul></section>'
        )
    stream.write(page("gpucheck fleet", "\n".join(body)))
