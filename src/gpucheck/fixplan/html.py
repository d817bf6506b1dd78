"""`fix --format html`: the plan as a page to forward (an admin does the steps that are not
the user's): the steps in order, each command in a copyable block, what it changes, the
findings it repairs, and whether --apply runs it or a person must."""

from __future__ import annotations

from typing import IO

from gpucheck.fixplan.plan import Plan, PlanStep
from gpucheck.fixplan.render import change_text, text_lines
from gpucheck.model.fix import StepKind
from gpucheck.report.html import code_block, page, table, text


def _step(step: PlanStep) -> str:
    layer = "info" if step.kind is StepKind.INFO else step.layer.value
    how = "gpucheck fix --apply runs it" if step.local else f"printed only: {step.why_not_local}"
    parts = [
        f'<li><div class="finding"><span class="kind">[{text(layer)}]</span> '
        f"<h3>{text(step.text or step.kind.value)}</h3>"
    ]
    if step.command:
        parts.append(code_block(step.command))
    details = [f"changes {change_text(c)}" for c in step.changes]
    if step.environment:
        details.append(f"in {step.environment}")
    details.append(f"fixes {', '.join(step.findings)}; {how}")
    parts.append('<ul class="evidence">' + "".join(f"<li>{text(d)}</li>" for d in details))
    parts.append("</ul></div></li>")
    return "".join(parts)


def render_html(plan: Plan, out: IO[str]) -> None:
    head, *_ = text_lines(plan, dry_run=True)  # the text plan's first line says it all
    host = plan.host.hostname or "this machine"
    body = [f"<header><h1>{text(head)}</h1>"]
    body += [f'<p class="muted">{text(note)}</p>' for note in plan.notes]
    body.append(f'<p class="muted">made {text(plan.created_at)}</p></header>')
    if plan.steps:
        body.append('<section><h2 id="steps">Steps, in order</h2><ol>')
        body += [_step(s) for s in plan.steps]
        body.append("</ol></section>")
    if plan.conflicts:
        body.append('<section><h2 id="conflicts">Conflicts (not planned: choose one)</h2>')
        for conflict in plan.conflicts:
            body.append(f"<h3>{text(conflict.package)}</h3>")
            body += [code_block(want) for want in conflict.wants]
        body.append("</section>")
    if plan.findings:
        rows = [
            (
                f.id,
                f.status,
                f.title,
                ", ".join(map(str, f.fixed_by))
                or (f"not planned: {f.not_planned}" if f.not_planned else "no step"),
            )
            for f in plan.findings
        ]
        body.append('<section><h2 id="findings">The problems</h2>')
        body.append(table(("check", "status", "finding", "fixed by step"), rows))
        body.append("</section>")
    body.append("<p>Nothing was changed: this page is the plan, not its run.</p>")
    out.write(page(f"gpucheck fix: {host}", "\n".join(body)))
