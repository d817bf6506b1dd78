"""`gpucheck explain`'s flow: the text read (a file, standard input, or given), the facts
joined where the text cannot decide (a saved snapshot's; this machine's, probed only where a
finding needs them; or none), the text explained, and with --fix the findings' fixes as one
ordered plan, as `gpucheck fix` makes it. Bad input raises UserError (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from msgspec import Struct

from gpucheck.explanation import INPUT_LIMIT, Explanation, decode, explain
from gpucheck.explanation.live import explain_here
from gpucheck.inputs import UserError, load_compat, read_input, read_snapshot

if TYPE_CHECKING:
    from gpucheck.fixplan.plan import Plan

TOO_LARGE = "is larger than 16 MiB: give the part of the log around the error"
FORMATS = ("text", "json", "junit", "html")
PLAN_FORMATS = ("text", "json")  # --fix's plan


class ExplainRequest(Struct, frozen=True, kw_only=True):
    path: str | None = None  # a file, or - for standard input
    text: str | None = None  # the text itself (--text), instead of a file
    from_file: str | None = None  # a saved snapshot or doctor report whose facts decide
    probe: bool = True  # False: join no facts of this machine (--no-probe)
    fix: bool = False  # the findings' fixes as one plan
    compat_dirs: tuple[str, ...] = ()
    output_format: str = "text"  # one of FORMATS (with fix, of PLAN_FORMATS)


class ExplainAnswer(Struct):
    explanation: Explanation
    plan: Plan | None = None  # with fix

    @property
    def exit_code(self) -> int:
        return self.explanation.exit_code


def run_explain(request: ExplainRequest) -> ExplainAnswer:
    """The explanation `request` asks for, and with `fix` its plan."""
    check_format(request.output_format, request.fix)  # before any text is read or probe run
    if not request.probe and request.from_file is not None:
        raise UserError("explain: --from and --no-probe: give one")
    content, name = _read_text(request)
    snapshot = read_snapshot(request.from_file) if request.from_file is not None else None
    compat = load_compat(list(request.compat_dirs))
    if snapshot is not None:
        result = explain(content, compat, snapshot, name=name, facts_from=request.from_file)
    else:
        result, snapshot = explain_here(content, compat, name, probe=request.probe)
    if not request.fix:
        return ExplainAnswer(result)
    from gpucheck.fixplan import plan_for
    from gpucheck.model.snapshot import Snapshot

    plan = plan_for(snapshot or Snapshot(), result.findings, request.from_file)
    return ExplainAnswer(result, plan)


def _read_text(request: ExplainRequest) -> tuple[str, str]:
    """(the text, the name the answer gives it)."""
    if (request.path is None) == (request.text is None):
        raise UserError("explain: give the text one way: FILE, - (standard input) or --text TEXT")
    if request.text is not None:
        raw = request.text.encode("utf-8", errors="replace")
        if len(raw) > INPUT_LIMIT:
            raise UserError(f"--text: the text {TOO_LARGE}")
        return decode(raw), "--text"
    assert request.path is not None
    return decode(read_input(request.path, INPUT_LIMIT, TOO_LARGE, "FILE")), request.path


def check_format(fmt: str, fix: bool) -> None:
    """UserError unless `fmt` is one of FORMATS (with `fix`, of PLAN_FORMATS)."""
    if fmt not in FORMATS:
        raise UserError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if fix and fmt not in PLAN_FORMATS:
        raise UserError(f"explain --fix: the plan is text or json, not {fmt}")


def writer(answer: ExplainAnswer, fmt: str) -> Callable[[IO[str]], None]:
    """What writes `answer` in format `fmt`: text, json, junit or html; a plan, text or json."""
    plan = answer.plan
    check_format(fmt, plan is not None)
    if plan is not None:
        from gpucheck.fixplan.render import render_json, render_text

        if fmt == "json":
            return lambda stream: render_json(plan, stream)
        return lambda stream: render_text(plan, stream)
    result = answer.explanation
    if fmt == "json":

        def write_json(stream: IO[str]) -> None:
            stream.write(json.dumps(result.to_dict(), indent=2) + "\n")

        return write_json
    if fmt == "junit":
        return result.write_junit
    if fmt == "html":
        from gpucheck.explanation.html import render_html

        return lambda stream: render_html(result, stream)
    return result.write_text
