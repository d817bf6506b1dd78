"""explain's flow (explanation/flow.py), which the command line only parses options for: where
the text comes from, which facts join it, and --fix's plan, called as Python. The messages
and the plan's command are the catalog's own (compat/messages.toml: cuda.out-of-memory's
`command = "gpucheck procs"`)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from support import builders

from gpucheck.explanation.flow import ExplainRequest, run_explain, writer
from gpucheck.inputs import UserError
from gpucheck.model.snapshot import dumps

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"


def test_a_text_is_explained_without_probing_when_no_finding_needs_facts() -> None:
    answer = run_explain(ExplainRequest(text=OOM))
    assert [f.id for f in answer.explanation.findings] == ["explain.cuda.out-of-memory"]
    assert answer.explanation.source.name == "--text"
    assert answer.explanation.source.facts_from is None
    assert (answer.plan, answer.exit_code) == (None, 1)


def test_fix_plans_the_findings_fixes_with_the_saved_snapshots_facts(tmp_path: Path) -> None:
    log, snapshot = tmp_path / "train.log", tmp_path / "node.json"
    log.write_text("epoch 1\n" + OOM)
    snapshot.write_text(dumps(builders.h100_node(2)))
    request = ExplainRequest(path=str(log), from_file=str(snapshot), fix=True)
    answer = run_explain(request)
    assert answer.explanation.source.facts_from == str(snapshot)
    assert answer.plan is not None
    assert [s.command for s in answer.plan.steps] == ["gpucheck procs"]
    out = io.StringIO()
    writer(answer, "json")(out)
    assert '"command": "gpucheck procs"' in out.getvalue()


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (
            ExplainRequest(),
            "explain: give the text one way: FILE, - (standard input) or --text TEXT",
        ),
        (
            ExplainRequest(path="a.log", text=OOM),
            "explain: give the text one way: FILE, - (standard input) or --text TEXT",
        ),
        (
            ExplainRequest(text=OOM, from_file="node.json", probe=False),
            "explain: --from and --no-probe: give one",
        ),
        (
            ExplainRequest(text="x" * (16 * 1024 * 1024 + 1)),
            "--text: the text is larger than 16 MiB: give the part of the log around the error",
        ),
        (
            ExplainRequest(text=OOM, probe=False, output_format="xml"),
            "--format: 'xml' is not one of text, json, junit, html",
        ),
        (
            ExplainRequest(text=OOM, probe=False, fix=True, output_format="junit"),
            "explain --fix: the plan is text or json, not junit",
        ),
    ],
)
def test_a_request_it_cannot_answer_is_one_line(request_: ExplainRequest, error: str) -> None:
    with pytest.raises(UserError) as caught:
        run_explain(request_)
    assert str(caught.value) == error


def test_each_format_writes_what_the_command_line_wrote() -> None:
    answer = run_explain(ExplainRequest(text=OOM, probe=False))
    written = {}
    for fmt in ("text", "json", "junit", "html"):
        out = io.StringIO()
        writer(answer, fmt)(out)
        written[fmt] = out.getvalue()
    assert written["json"].startswith('{\n  "schema_version": ')
    assert written["junit"].startswith("<?xml")
    assert written["html"].startswith("<!DOCTYPE html>")
    assert written["text"].startswith("gpucheck explain: --text, 1 lines\n\nFAIL  [GPUs] ")


def test_the_writer_refuses_a_format_it_has_no_writer_for() -> None:
    answer = run_explain(ExplainRequest(text=OOM, probe=False))
    with pytest.raises(UserError, match=r"^--format: 'yaml' is not one of text, json, junit"):
        writer(answer, "yaml")
    planned = run_explain(ExplainRequest(text=OOM, probe=False, fix=True))
    with pytest.raises(UserError, match=r"^explain --fix: the plan is text or json, not html$"):
        writer(planned, "html")
