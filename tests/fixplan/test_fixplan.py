"""`gpucheck fix`: the plan (merged, ordered, conflicts), its formats, and bad input."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from support.builders import workstation
from support.framework_builders import on, tensorflow_cpu, torch_cpu

from gpucheck.fixplan import diagnose, plan_for
from gpucheck.fixplan.plan import PlanHost, build_plan
from gpucheck.fixplan.render import plan_dict, plan_schema, render_sh, render_text
from gpucheck.inputs import load_compat
from gpucheck.model.finding import Finding, Status
from gpucheck.model.fix import Change, Fix, Step, Tool
from gpucheck.model.layers import Layer

PY = "/home/user/.venv/bin/python"


def finding(id: str, section: Layer, *steps: Step) -> Finding:
    return Finding(id, section, Status.FAIL, id, fix=Fix.of(*steps))


def pip(command: str, *changes: Change) -> Step:
    return Step.run("", command, Tool.PIP, changes=changes, environment=PY)


def test_a_cpu_torch_on_a_gpu_machine_plans_one_local_reinstall() -> None:
    snap = on(workstation(), torch_cpu())
    plan = plan_for(snap, diagnose(snap, load_compat(None)), None)
    assert [(s.layer, s.local, s.findings) for s in plan.steps] == [
        (Layer.FRAMEWORKS, True, ["frameworks.torch.cpu-build"])
    ]
    # The same torch 2.9.1 as a CUDA build this 570 driver runs (torch.toml, release 2.9:
    # cuda_variants 12.6, 12.8, 13.0; driver 570.124.04 is CUDA 12.8's).
    assert plan.steps[0].command == (
        "pip install torch==2.9.1+cu128 --index-url https://download.pytorch.org/whl/cu128"
    )
    assert plan.steps[0].changes == [Change("torch", "2.9.1+cpu", "2.9.1+cu128")]


def test_steps_run_lowest_layer_first_and_each_once() -> None:
    driver = Step.run("", "sudo apt-get install -y nvidia-driver-570", Tool.APT)
    reinstall = pip("pip install 'torch==2.5.1'", Change("torch", "2.4.0", "2.5.1"))
    findings = [
        finding("torch.a", Layer.FRAMEWORKS, reinstall),
        finding("torch.b", Layer.FRAMEWORKS, reinstall),
        finding("driver.old", Layer.DRIVER, driver),
    ]
    plan = build_plan(findings, PlanHost("h"), [PY])
    assert [(s.number, s.layer, s.findings) for s in plan.steps] == [
        (1, Layer.DRIVER, ["driver.old"]),
        (2, Layer.FRAMEWORKS, ["torch.a", "torch.b"]),
    ]
    assert plan.steps[0].local is False
    assert plan.steps[0].why_not_local == (
        "a system package: needs root (sudo), outside the Python environment"
    )
    assert [f.fixed_by for f in plan.findings] == [[2], [2], [1]]


def test_a_pin_that_satisfies_the_other_wins_and_carries_both_findings() -> None:
    exact = pip("pip install 'numpy==1.26.4'", Change("numpy", "2.1.0", "1.26.4"))
    below = pip("pip install 'numpy<2'", Change("numpy", "2.1.0", None, "<2"))
    plan = build_plan(
        [finding("a", Layer.FRAMEWORKS, below), finding("b", Layer.FRAMEWORKS, exact)],
        PlanHost("h"),
        [PY],
    )
    assert [(s.command, s.findings) for s in plan.steps] == [
        ("pip install 'numpy==1.26.4'", ["b", "a"])
    ]
    assert plan.conflicts == []


def test_wants_no_one_step_gives_are_a_conflict_and_neither_is_printed() -> None:
    low = pip("pip install 'numpy<2'", Change("numpy", "2.1.0", None, "<2"))
    high = pip("pip install 'numpy>=2.1'", Change("numpy", "1.26.4", None, ">=2.1"))
    plan = build_plan(
        [finding("a", Layer.FRAMEWORKS, low), finding("b", Layer.FRAMEWORKS, high)],
        PlanHost("h"),
        [PY],
    )
    assert plan.steps == []
    assert [(c.package, c.findings) for c in plan.conflicts] == [("numpy", ["a", "b"])]
    out = io.StringIO()
    render_text(plan, out)
    assert "conflict: numpy (not planned: choose one)" in out.getvalue()
    assert "$ pip install" not in out.getvalue()


def test_other_ways_are_not_planned() -> None:
    first = pip("pip install 'torch==2.5.1'")
    other = pip("pip install 'torch==2.4.1'")
    plan = build_plan(
        [Finding("t", Layer.FRAMEWORKS, Status.WARN, "t", fix=Fix.of(first, "or", other))],
        PlanHost("h"),
        [PY],
    )
    assert [s.command for s in plan.steps] == ["pip install 'torch==2.5.1'"]


def test_the_script_runs_commands_under_set_e_and_comments_a_persons_steps() -> None:
    snap = on(workstation(), tensorflow_cpu())
    plan = plan_for(snap, diagnose(snap, load_compat(None)), None)
    plan.steps.append(
        build_plan([finding("x", Layer.GPUS, Step.manual("reseat the GPU"))], PlanHost(), []).steps[
            0
        ]
    )
    out = io.StringIO()
    render_sh(plan, out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "#!/bin/sh" and "set -e" in lines
    assert "pip uninstall -y tensorflow-cpu && pip install 'tensorflow[and-cuda]==2.15.*'" in lines
    assert "#    changes tensorflow-cpu 2.15.0 -> removed" in lines
    assert "# 1. [gpus] reseat the GPU" in lines
    script = subprocess.run(["sh", "-n"], input=out.getvalue(), text=True, check=False)
    assert script.returncode == 0  # the shell itself parses it


def test_the_json_plan_meets_its_published_schema() -> None:
    snap = on(workstation(), torch_cpu())
    data = plan_dict(plan_for(snap, diagnose(snap, load_compat(None)), "snap.json"))
    jsonschema.Draft202012Validator(plan_schema()).validate(data)
    assert data["kind"] == "gpucheck-fix-plan"
    assert data["host"]["from_file"] == "snap.json"
    assert data["steps"][0]["changes"][0] == {
        "name": "torch",
        "from_version": "2.9.1+cpu",
        "to_version": "2.9.1+cu128",
        "requirement": None,
        "remove": False,
    }


def gpucheck(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpucheck", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def test_a_file_that_is_not_our_plan_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text('{"steps": []}')
    done = gpucheck("fix", "--plan", str(bad))
    assert done.returncode == 2
    assert done.stderr == (
        f'gpucheck: --plan: {bad}: not a gpucheck fix plan (no "kind": "gpucheck-fix-plan")\n'
    )


def test_apply_refuses_a_plan_of_another_machine(tmp_path: Path) -> None:
    plan = build_plan([], PlanHost("not-" + socket.gethostname(), from_file="x.json"), [])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_dict(plan)))
    done = gpucheck("fix", "--plan", str(path), "--apply", "--yes")
    assert done.returncode == 2
    assert done.stderr.startswith("gpucheck: --apply: the plan is of host not-")
    assert len(done.stderr.splitlines()) == 1


def test_apply_asks_first_and_changes_nothing_without_an_answer(tmp_path: Path) -> None:
    step = pip("pip install 'demo-pkg==2.0'", Change("demo-pkg", "1.0", "2.0"))
    plan = build_plan([finding("a", Layer.FRAMEWORKS, step)], PlanHost(socket.gethostname()), [])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_dict(plan)))
    done = gpucheck("fix", "--plan", str(path), "--apply", "--record", str(tmp_path / "r"))
    assert done.returncode == 2
    assert "answer on a terminal, or --yes" in done.stderr
    assert not (tmp_path / "r").exists()


def test_undo_of_a_folder_that_is_no_record_is_one_line(tmp_path: Path) -> None:
    done = gpucheck("fix", "--undo", str(tmp_path), "--yes")
    assert done.returncode == 2
    assert done.stderr == (
        f"gpucheck: {tmp_path}: not an apply record (no plan.json and journal.json)\n"
    )


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--apply"], "--apply"),
        (["--from", "report.json"], "--from"),
        (["--plan", "plan.json"], "--plan"),
        (["--json"], "--json"),
        (["-o", "out.txt"], "--output"),
        (["--json", "--apply"], "--apply, --json"),
        (["--timeout", "3"], "--timeout"),
        (["--compat-dir", "compat"], "--compat-dir"),
    ],
)
def test_undo_refuses_the_options_it_would_ignore(
    tmp_path: Path, extra: list[str], named: str
) -> None:
    done = gpucheck("fix", "--undo", str(tmp_path), "--yes", *extra, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"gpucheck: --undo restores a record alone: drop {named}\n"
    assert not (tmp_path / "out.txt").exists()


def test_a_reports_written_command_is_not_planned_its_snapshots_fix_is(tmp_path: Path) -> None:
    from gpucheck.api import doctor

    report = doctor(snapshot=on(workstation(), torch_cpu())).to_dict()
    torch_finding = next(f for f in report["findings"] if f["id"] == "frameworks.torch.cpu-build")
    torch_finding["fix"]["steps"][0]["command"] = "pip install 'torch==2.5.1'"  # as written then
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    done = gpucheck("fix", "--from", str(path), "--json")
    assert done.returncode == 0, done.stderr
    assert [s["command"] for s in json.loads(done.stdout)["steps"]] == [
        "pip install torch==2.9.1+cu128 --index-url https://download.pytorch.org/whl/cu128"
    ]


def test_only_installer_commands_are_local_and_each_is_aimed_at_its_interpreter() -> None:
    from gpucheck.fixplan.apply import step_argvs
    from gpucheck.fixplan.plan import installer_commands

    assert installer_commands("pip uninstall -y torch && pip install 'torch==2.5.1'") == [
        ["uninstall", "-y", "torch"],
        ["install", "torch==2.5.1"],
    ]
    assert installer_commands('"/opt/my env/bin/python" -m pip install numpy') == [
        ["install", "numpy"]
    ]
    for shell in ("sudo pip install x", "pip install x; reboot", "curl x | sh", "pip list"):
        assert installer_commands(shell) is None, shell
    uv = Step.run("", "uv pip install 'numpy<2'", Tool.UV, environment=PY)
    conda = Step.run("", "conda install -c nvidia cuda-nvcc", Tool.CONDA, environment=PY)
    plan = build_plan(
        [finding("a", Layer.FRAMEWORKS, uv), finding("b", Layer.CUDA, conda)], PlanHost(), []
    )
    assert [step_argvs(s, None) for s in plan.steps] == [
        [
            [
                "conda",
                "install",
                "--yes",
                "--prefix",
                "/home/user/.venv",
                "-c",
                "nvidia",
                "cuda-nvcc",
            ]
        ],
        [["uv", "pip", "install", "--python", PY, "numpy<2"]],
    ]


def test_undo_of_a_file_that_is_no_record_is_the_same_one_line(tmp_path: Path) -> None:
    # Before: "cannot read the apply record: [Errno 20] Not a directory: '.../plan.json'".
    other = tmp_path / "notours.json"
    other.write_text("{}")
    done = gpucheck("fix", "--undo", str(other), "--yes")
    assert done.returncode == 2
    assert (
        done.stderr == f"gpucheck: {other}: not an apply record (no plan.json and journal.json)\n"
    )


def test_an_environment_step_remaining_after_apply_says_to_source_the_file() -> None:
    from gpucheck.fixplan.apply import recheck_lines

    env = Step.set_env("CUDA_VISIBLE_DEVICES", "0,1", "show both GPUs", Layer.JOB)
    plan = build_plan(
        [
            finding("gpu.visible", Layer.GPUS, env),
            finding("torch.cpu-build", Layer.FRAMEWORKS, pip("pip install torch")),
        ],
        PlanHost("h"),
        [PY],
    )
    lines = recheck_lines(plan, {"gpu.visible"}, Path("/tmp/fix record"))
    assert lines == [
        "Doctor again: gone: torch.cpu-build; remain: gpu.visible",
        "gpu.visible remains until the environment is set: run `source '/tmp/fix record/env.sh'` "
        "in your shell (the doctor ran without it)",
    ]
    assert recheck_lines(plan, set(), Path("r")) == [
        "Doctor again: gone: gpu.visible, torch.cpu-build; remain: none"
    ]


def test_the_plan_counts_its_steps_in_words_that_agree() -> None:
    one = build_plan(
        [finding("a", Layer.SYSTEM, Step.run("", "apt-get install -y nvidia-utils", Tool.APT))],
        PlanHost("h"),
        [PY],
    )
    out = io.StringIO()
    render_text(one, out)
    assert out.getvalue().splitlines()[0] == (
        "gpucheck fix: 1 step for 1 problem (host h); 0 can be applied here (--apply), 1 is "
        "yours to do"
    )
