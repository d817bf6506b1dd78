"""`fit --format html`: the estimate as a page: what takes the memory of each GPU (a bar chart
of the parts, and their formulas in a table), the verdict per GPU judged, and every
assumption. Read from the report's JSON form (its keys are stable) and its text's head, so
the page follows the estimate whatever its internals."""

from __future__ import annotations

from typing import IO, Any

from gpucheck.report.charts import bar_chart, figure
from gpucheck.report.html import page, table, text

GIB = 1 << 30


def render_html(data: dict[str, Any], said: str, stream: IO[str]) -> None:
    """The page of a fit report: `data`, its JSON form; `said`, its text form (the page's
    head is the text's own: the model, then its shape and the setup)."""
    head, *rest = said.splitlines() or [""]
    lines = rest[: rest.index("")] if "" in rest else rest[:2]
    body = [f"<header><h1>{text(head)}</h1>"]
    body += [f'<p class="where">{text(line.strip())}</p>' for line in lines]
    body.append("</header>")
    parts = data["per_gpu"]["parts"]
    total = data["per_gpu"]["total_bytes"]
    labels = [p["name"] for p in parts]
    svg = bar_chart(
        "fit-parts",
        "Memory per GPU, by part (GiB)",
        "; ".join(f"{p['name']}: {p['bytes'] / GIB:.2f} GiB" for p in parts)
        + f"; total {total / GIB:.2f} GiB",
        labels,
        ["GiB"],
        [[round(p["bytes"] / GIB, 2)] for p in parts],
        "GiB",
    )
    rows = [(p["name"], f"{p['bytes'] / GIB:.2f}", p["how"]) for p in parts]
    rows.append(
        ("total", f"{total / GIB:.2f}", "lower bound" if data["per_gpu"]["lower_bound"] else "")
    )
    body.append('<section><h2 id="per-gpu">Per GPU</h2>')
    body.append(
        figure(
            svg, "What takes each GPU's memory", table(("part", "GiB", "how"), rows, frozenset({1}))
        )
    )
    body.append("</section>")
    if data["verdicts"]:
        verdicts = [
            (
                v["verdict"],
                v["gpu"],
                f"{total / GIB:.2f} of {v['memory_bytes'] / GIB:.2f} GiB ({v['share']:.0%})",
                "-" if v["largest_batch"] is None else v["largest_batch"],
            )
            for v in data["verdicts"]
        ]
        body.append('<section><h2 id="verdict">Verdict</h2>')
        body.append(table(("verdict", "GPU", "needs", "largest batch that fits"), verdicts))
        body.append("</section>")
    body += [f"<p>{text(note)}</p>" for note in data["notes"]]
    body.append('<section><h2 id="assumptions">Assumptions</h2><ul>')
    body += [f"<li>{text(line)}</li>" for line in data["assumptions"]]
    body.append("</ul></section>")
    stream.write(page(f"gpucheck fit: {data['model']['source']}", "\n".join(body)))
