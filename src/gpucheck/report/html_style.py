"""The HTML reports' one style sheet, inlined in every page (a report is mailed, attached to a
ticket, opened offline: nothing is fetched). Every rule is scoped under `.gpucheck`, so the same
sheet can sit in a notebook's output without restyling the notebook.

The palette is named once (PALETTE): the status colours are chosen for a contrast of at least
4.5:1 against the background they sit on (WCAG AA for text), and a status is always shown as an
icon and a word too, never by its colour alone."""

from __future__ import annotations

# name -> colour (#rrggbb). ink/paper: text and page; the status colours are text colours on
# paper; line/soft: borders and the tint of a finding's box.
PALETTE: dict[str, str] = {
    "ink": "#1b1f24",
    "paper": "#ffffff",
    "muted": "#57606a",
    "line": "#d0d7de",
    "soft": "#f6f8fa",
    "pass": "#1a7f37",
    "warn": "#8a5a00",
    "fail": "#c21a1a",
    "skip": "#57606a",
    "info": "#0b62a4",
    "error": "#8e24aa",
    "code-ink": "#1b1f24",
    "code-paper": "#eef1f4",
}

# The colours of chart series, in order (each on paper at least 3:1: a graphical object).
SERIES_COLOURS: tuple[str, ...] = ("#0b62a4", "#c21a1a", "#1a7f37", "#8a5a00", "#8e24aa")

_VARIABLES = "".join(f"--gc-{name}:{colour};" for name, colour in PALETTE.items())

CSS = """\
.gpucheck{VARIABLES}
.gpucheck{color:var(--gc-ink);background:var(--gc-paper);max-width:60rem;margin:0 auto;
padding:0.75rem;font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
overflow-wrap:anywhere}
.gpucheck *{box-sizing:border-box}
.gpucheck h1{font-size:1.4rem;margin:0 0 .25rem}
.gpucheck h2{font-size:1.15rem;margin:1.25rem 0 .5rem;padding-bottom:.2rem;
border-bottom:1px solid var(--gc-line)}
.gpucheck h3{font-size:1rem;margin:0;font-weight:600;display:inline}
.gpucheck .where,.gpucheck .muted{color:var(--gc-muted)}
.gpucheck .meta{margin:0;padding:0;list-style:none;color:var(--gc-muted);font-size:.9rem}
.gpucheck .verdict{border:2px solid currentColor;border-radius:6px;padding:.5rem .75rem;
margin:.75rem 0;font-weight:600}
.gpucheck .finding{border:1px solid var(--gc-line);border-left-width:4px;border-radius:4px;
padding:.5rem .75rem;margin:.5rem 0;background:var(--gc-paper)}
.gpucheck .finding.problem{background:var(--gc-soft)}
.gpucheck .st{font-weight:700;white-space:nowrap;margin-right:.4rem}
.gpucheck .id{color:var(--gc-muted);font-size:.85rem;font-family:ui-monospace,Menlo,
"DejaVu Sans Mono",Consolas,monospace}
.gpucheck .st-pass{color:var(--gc-pass)}.gpucheck .finding.s-pass{border-left-color:var(--gc-pass)}
.gpucheck .st-warn{color:var(--gc-warn)}.gpucheck .finding.s-warn{border-left-color:var(--gc-warn)}
.gpucheck .st-fail{color:var(--gc-fail)}.gpucheck .finding.s-fail{border-left-color:var(--gc-fail)}
.gpucheck .st-skip{color:var(--gc-skip)}.gpucheck .finding.s-skip{border-left-color:var(--gc-skip)}
.gpucheck .st-info{color:var(--gc-info)}.gpucheck .finding.s-info{border-left-color:var(--gc-info)}
.gpucheck .st-error{color:var(--gc-error)}
.gpucheck .finding.s-error{border-left-color:var(--gc-error)}
.gpucheck ul.evidence{margin:.3rem 0 0;padding-left:1.2rem}
.gpucheck .fix{margin:.5rem 0 0}
.gpucheck .fix ol{margin:.25rem 0 0;padding-left:1.4rem}
.gpucheck .kind{color:var(--gc-muted);font-size:.85rem}
.gpucheck pre{background:var(--gc-code-paper);color:var(--gc-code-ink);padding:.5rem .6rem;
border-radius:4px;overflow-x:auto;margin:.3rem 0;white-space:pre;max-width:100%}
.gpucheck code{font-family:ui-monospace,Menlo,"DejaVu Sans Mono",Consolas,monospace;
font-size:.88rem}
.gpucheck details summary{cursor:pointer;color:var(--gc-muted)}
.gpucheck table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem;display:block;
overflow-x:auto;max-width:100%}
.gpucheck th,.gpucheck td{border:1px solid var(--gc-line);padding:.2rem .45rem;text-align:left;
vertical-align:top}
.gpucheck td.num{text-align:right;font-variant-numeric:tabular-nums}
.gpucheck figure{margin:.75rem 0}
.gpucheck figure svg{width:100%;height:auto;max-width:100%;display:block}
.gpucheck figcaption{font-size:.9rem;color:var(--gc-muted)}
.gpucheck footer{margin-top:1.5rem;font-size:.85rem;color:var(--gc-muted)}
@media (max-width:480px){.gpucheck{padding:.5rem;font-size:15px}.gpucheck h1{font-size:1.2rem}}
@media print{.gpucheck{max-width:none;padding:0;font-size:11pt}
.gpucheck .finding{break-inside:avoid}.gpucheck pre{white-space:pre-wrap;overflow:visible}
.gpucheck details{display:block}.gpucheck h2{break-after:avoid}}
""".replace("VARIABLES", _VARIABLES)

# The page around the report: no margin of its own (the report's box has it).
PAGE_CSS = "html,body{margin:0;padding:0;background:#ffffff}"
