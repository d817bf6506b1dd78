"""A Windows snapshot's values are quoted by PowerShell's rule, not sh's, in every fix command
(PowerShell's about_Quoting_Rules: a single-quoted string also ends at a typographic quote,
U+2018-U+201B, and a comma outside quotes splits arguments); the scripts refuse, as comments,
a command their shell could read otherwise; and a saved plan's script runs only its local
installer steps."""

from __future__ import annotations

import io
import json
from pathlib import Path

from conftest import run_gpucheck
from support import framework_builders as fb

from gpucheck.fixplan.plan import Plan, PlanHost, PlanStep
from gpucheck.fixplan.render import render_ps1, render_sh
from gpucheck.model.decoding import to_json
from gpucheck.model.fix import StepKind, Tool
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import LibraryCopy


def _windows_broken_cudnn(tmp_path: Path, package: str) -> Path:
    snap = fb.windows_workstation()
    snap.cudnn.libraries = [
        LibraryCopy(
            name="cudnn",
            path="C:\\cudnn\\bin\\cudnn64_9.dll",
            realpath="C:\\cudnn\\bin\\cudnn64_9.dll",
            origin="pip",
            on_loader_path=True,
            package=package,
            version="9.1.0",
            load_error="cudnn_ops64_9.dll not found",
        )
    ]
    path = tmp_path / "win.json"
    path.write_bytes(to_json(snap))
    return path


def _commands(script: str) -> list[str]:
    return [line for line in script.splitlines() if line and not line.startswith(("#", "$", "if "))]


def test_a_typographic_quote_in_a_windows_package_stays_inside_one_powershell_word(
    tmp_path: Path,
) -> None:
    path = _windows_broken_cudnn(tmp_path, "nvidia-cudnn-cu12 9.1\u2019;calc.exe;\u2019")
    result = run_gpucheck("fix", "--from", str(path), "--format", "ps1")
    assert result.returncode == 0, result.stderr
    assert _commands(result.stdout) == [
        "pip install --force-reinstall 'nvidia-cudnn-cu12==9.1\u2019\u2019;calc.exe;\u2019\u2019'"
    ]


def test_a_comma_in_a_windows_package_is_quoted_not_an_array(tmp_path: Path) -> None:
    path = _windows_broken_cudnn(tmp_path, "nvidia-cudnn-cu12 9.1,evil-pkg")
    result = run_gpucheck("fix", "--from", str(path), "--format", "ps1")
    assert result.returncode == 0, result.stderr
    assert _commands(result.stdout) == [
        "pip install --force-reinstall 'nvidia-cudnn-cu12==9.1,evil-pkg'"
    ]


def _plan(command: str, os: str = "Linux", local: bool = True) -> Plan:
    step = PlanStep(
        number=1,
        kind=StepKind.COMMAND,
        text="reinstall it",
        command=command,
        tool=Tool.PIP if local else Tool.SHELL,
        layer=Layer.CUDNN if local else Layer.DRIVER,
        environment=None,
        changes=[],
        gpus=[],
        findings=["cudnn.libraries"],
        local=local,
        why_not_local=None if local else "changes the driver, outside the Python environment",
    )
    return Plan(host=PlanHost(os=os), steps=[step])


def test_the_powershell_script_comments_out_a_command_its_quoting_could_not_have_built() -> None:
    out = io.StringIO()
    render_ps1(_plan("pip install 'nvidia-cudnn-cu12==9.1\u2019;calc.exe;\u2019'", "Windows"), out)
    assert _commands(out.getvalue()) == []
    assert (
        "#    not written as a command: it holds ';' outside a single-quoted string, which its "
        "quoting never makes"
    ) in out.getvalue().splitlines()


def test_the_sh_script_comments_out_a_command_with_a_backtick() -> None:
    out = io.StringIO()
    render_sh(_plan("pip install `calc`"), out)
    assert _commands(out.getvalue()) == ["set -e"]
    assert "#    pip install `calc`" in out.getvalue().splitlines()


def test_a_saved_plans_script_runs_its_installer_steps_and_comments_out_the_rest(
    tmp_path: Path,
) -> None:
    plan = _plan("sudo apt install --reinstall nvidia-driver-550", local=False)
    plan.steps.append(_plan("pip install --force-reinstall torch==2.5.1").steps[0])
    plan.steps[1].number = 2
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(json.loads(to_json(plan))))
    result = run_gpucheck("fix", "--plan", str(path), "--format", "sh")
    assert result.returncode == 0, result.stderr
    assert _commands(result.stdout) == ["set -e", "pip install --force-reinstall torch==2.5.1"]
    lines = result.stdout.splitlines()
    assert (
        "#    from a saved plan (--plan), not a local installer step: read it, then run it yourself"
    ) in lines
    assert "#    sudo apt install --reinstall nvidia-driver-550" in lines
