"""`fix --from REPORT` plans from the snapshot the report embeds, judged by this gpucheck's own
checks and fix builders: a command the report wrote (tampered or not) is never planned, printed
or run. The report's selection (--only/--skip) and its requirements are kept; a written problem
this gpucheck does not derive again is listed, not planned; a verdict that differs is said."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

from support import real_cases as test_cases
from support.shell_sandbox import Sandbox

from gpucheck import cli
from gpucheck.checks.renamed import RENAMED
from gpucheck.version import __version__

CASES = Path(__file__).parents[1] / "cases"
TORCH_5090 = "deepprep-233-5090-torch201-cu118"  # a 5090 under torch 2.0.1+cu118
# What this gpucheck's builders make of that case (compat data of tests/cases' date).
TORCH_5090_COMMANDS = ["pip uninstall -y torch && pip install 'torch==2.15.*'"]
UVM_MISSING = "nvidia-docker-481-uvm-module-missing"  # driver.uvm and cuda.driver-api fail


def doctor_report(name: str, *args: str) -> dict[str, Any]:
    """The real `doctor --from CASE --json ARGS` report of a case in tests/cases."""
    case = json.loads((CASES / f"{name}.json").read_text(encoding="utf-8"))
    case["_slug"] = name
    case["args"] = list(args)
    report: dict[str, Any] = test_cases.diagnose(case)
    assert "error" not in report, report
    return report


def fix(source: Path, *args: str) -> str:
    """`gpucheck fix --from SOURCE ARGS`, in this process: its stdout (exit 0 asserted)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(["fix", "--from", str(source), *args])
    assert code == 0, err.getvalue()
    return out.getvalue()


def saved(tmp_path: Path, name: str, data: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def planned(source: Path) -> dict[str, Any]:
    plan: dict[str, Any] = json.loads(fix(source, "--json"))
    return plan


def commands(plan: dict[str, Any]) -> list[str]:
    return [s["command"] for s in plan["steps"] if s["command"]]


def tamper_commands(report: dict[str, Any], command: str, ids: set[str] | None = None) -> None:
    """Every fix step's command (of the findings `ids`, or all) replaced with `command`."""
    for finding in report["findings"]:
        if ids is not None and finding["id"] not in ids:
            continue
        for step in (finding.get("fix") or {}).get("steps") or []:
            step["command"] = command


def run_sh_plan(tmp_path: Path, source: Path) -> None:
    """`fix --from SOURCE --format sh -o fix.sh`, then `sh fix.sh` among stub programs: no
    payload may run (the `touch` stub leaves a marker)."""
    root = tmp_path / "box"
    root.mkdir()
    box = Sandbox(root)
    script = root / "fix.sh"
    fix(source, "--format", "sh", "-o", str(script))
    for command in commands(planned(source)):
        box.provide(command)
    box.assert_nothing_ran("sh fix.sh", box.run(["/bin/sh", str(script)]))
    assert "PWNED" not in script.read_text(encoding="utf-8")


def same_plan(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["steps"] == b["steps"]
    assert a["findings"] == b["findings"]
    assert a["conflicts"] == b["conflicts"]


def test_a_command_replaced_in_the_report_is_never_planned(tmp_path: Path) -> None:
    report = doctor_report(TORCH_5090)
    snapshot_alone = planned(saved(tmp_path, "snap.json", report["snapshot"]))
    tamper_commands(report, "touch PWNED")
    source = saved(tmp_path, "node7.json", report)
    run_sh_plan(tmp_path, source)
    plan = planned(source)
    assert commands(plan) == TORCH_5090_COMMANDS
    same_plan(plan, snapshot_alone)
    assert plan["notes"] == []


def test_a_package_name_that_runs_a_command_is_never_planned(tmp_path: Path) -> None:
    report = doctor_report(TORCH_5090)
    for finding in report["findings"]:
        for step in (finding.get("fix") or {}).get("steps") or []:
            for change in step["changes"]:
                change["name"] = "torch$(touch PWNED)"
                step["command"] = "pip install torch$(touch PWNED)==2.15"
    source = saved(tmp_path, "node7.json", report)
    run_sh_plan(tmp_path, source)
    plan = planned(source)
    assert commands(plan) == TORCH_5090_COMMANDS
    assert plan["steps"][0]["changes"][0]["name"] == "torch"


def test_a_3_x_report_plans_from_its_snapshot_under_4_0_ids(tmp_path: Path) -> None:
    report = doctor_report(TORCH_5090)
    today = planned(saved(tmp_path, "today.json", report))
    old_id = {new: old for old, new in RENAMED.items()}
    old = copy.deepcopy(report)
    old["schema_version"] = "3.1"
    for finding in old["findings"]:
        finding["id"] = old_id.get(finding["id"], finding["id"])
    assert "torch.arch-support" in [f["id"] for f in old["findings"]]
    tamper_commands(old, "touch PWNED")
    source = saved(tmp_path, "node7-3.1.json", old)
    run_sh_plan(tmp_path, source)
    plan = planned(source)
    same_plan(plan, today)
    assert [f["id"] for f in plan["findings"]] == ["frameworks.torch.arch-support"]
    assert plan["notes"] == []


def test_the_report_s_only_selection_is_kept(tmp_path: Path) -> None:
    report = doctor_report(UVM_MISSING, "--only", "driver.uvm")
    assert [f["id"] for f in report["findings"]] == ["driver.uvm"]
    tamper_commands(report, "touch PWNED")
    source = saved(tmp_path, "node7.json", report)
    run_sh_plan(tmp_path, source)
    plan = planned(source)
    # The snapshot alone also plans cuda.driver-api (a dmesg look): the report did not run it.
    assert commands(plan) == [
        "sudo modprobe nvidia-uvm && sudo nvidia-modprobe -u -c=0",
        "echo nvidia-uvm | sudo tee /etc/modules-load.d/nvidia-uvm.conf",
    ]
    assert [f["id"] for f in plan["findings"]] == ["driver.uvm"]


def test_the_report_s_requirements_are_judged_again(tmp_path: Path) -> None:
    report = doctor_report(TORCH_5090, "--min-gpus", "2")
    assert report["summary"]["requirements"]["min_gpus"] == 2
    written = next(f for f in report["findings"] if f["id"] == "requirements.min-gpus")
    written["title"] = "tampered"
    written["fix"]["steps"][0]["command"] = "touch PWNED"
    source = saved(tmp_path, "node7.json", report)
    run_sh_plan(tmp_path, source)
    plan = planned(source)
    assert commands(plan) == TORCH_5090_COMMANDS
    judged = plan["findings"][1]
    assert (judged["id"], judged["status"], judged["title"], judged["not_planned"]) == (
        "requirements.min-gpus",
        "fail",
        "Needs 2 GPU(s), has 1",
        None,
    )
    assert plan["steps"][1]["text"] == "run the job on a node with 2 or more GPUs"
    assert plan["steps"][1]["command"] is None


def test_a_written_problem_not_derived_here_is_listed_never_planned(tmp_path: Path) -> None:
    report = doctor_report(TORCH_5090)
    invented = copy.deepcopy(next(f for f in report["findings"] if f["status"] == "fail"))
    invented["id"] = "gpus.made-up"
    report["findings"].append(invented)
    tamper_commands(report, "touch PWNED", {"gpus.made-up"})
    source = saved(tmp_path, "node7.json", report)
    run_sh_plan(tmp_path, source)
    plan = planned(source)
    assert commands(plan) == TORCH_5090_COMMANDS
    assert plan["findings"][-1]["id"] == "gpus.made-up"
    assert plan["findings"][-1]["fixed_by"] == []
    assert plan["findings"][-1]["not_planned"] == "written by the report, not re-derived here"
    line = "not planned (written by the report, not re-derived here): gpus.made-up"
    assert f"\n# {line}\n" in fix(source, "--format", "sh")
    assert f"\n{line}\n" in fix(source)


def test_a_verdict_that_differs_from_the_report_s_is_said_in_one_note(tmp_path: Path) -> None:
    report = doctor_report(TORCH_5090)
    report["tool"]["version"] = "9.9.9"
    report["created_at"] = "2026-01-02T03:04:05+00:00"
    for finding in report["findings"]:
        if finding["id"] == "frameworks.torch.arch-support":
            finding["status"] = "pass"
    source = saved(tmp_path, "node7.json", report)
    plan = planned(source)
    assert commands(plan) == TORCH_5090_COMMANDS  # this gpucheck's verdict is planned
    (note,) = plan["notes"]
    assert note.startswith(
        f"planned from the report's snapshot with this gpucheck's data (gpucheck {__version__}, "
        "compat as of "
    )
    assert note.endswith(
        "the report was written by gpucheck 9.9.9 on 2026-01-02T03:04:05+00:00 and judged "
        "otherwise: frameworks.torch.arch-support"
    )
    assert fix(source).splitlines()[1] == note
    assert fix(source, "--format", "sh").splitlines()[4] == f"# {note}"


def test_a_report_on_stdin_keeps_its_selection(tmp_path: Path) -> None:
    from conftest import run_gpucheck

    report = doctor_report(UVM_MISSING, "--only", "driver.uvm")
    tamper_commands(report, "touch PWNED")
    done = run_gpucheck("fix", "--from", "-", "--json", stdin=json.dumps(report))
    assert done.returncode == 0, done.stderr
    assert commands(json.loads(done.stdout)) == [
        "sudo modprobe nvidia-uvm && sudo nvidia-modprobe -u -c=0",
        "echo nvidia-uvm | sudo tee /etc/modules-load.d/nvidia-uvm.conf",
    ]


def test_a_report_whose_requirements_are_malformed_is_refused_in_one_line(tmp_path: Path) -> None:
    report = doctor_report(TORCH_5090)
    report["summary"]["requirements"] = {"min_gpus": "two"}
    source = saved(tmp_path, "node7.json", report)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(["fix", "--from", str(source)])
    assert code == 2
    assert err.getvalue() == (
        f"gpucheck: --from: {source}: not a valid report: Expected `int | null`, got `str` - "
        "at `$.summary.requirements.min_gpus`\n"
    )
    assert out.getvalue() == ""


def test_after_apply_a_finding_listed_but_not_planned_is_not_said_gone() -> None:
    from gpucheck.fixplan.apply import recheck_lines
    from gpucheck.fixplan.plan import Plan, PlanFinding

    plan = Plan(
        findings=[
            PlanFinding("frameworks.torch.arch-support", "fail", "t", [1]),
            PlanFinding("gpus.made-up", "fail", "t", not_planned="written by the report"),
        ]
    )
    assert recheck_lines(plan, set(), Path("r")) == [
        "Doctor again: gone: frameworks.torch.arch-support; remain: none"
    ]
