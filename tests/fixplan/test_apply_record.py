"""The record an --apply keeps (install's and fix's): a --record that names a file is refused
in one line (exit 2), and an environment installed into with `uv pip` (a venv uv made has no
pip) is recorded and restored with `uv pip` too, or refused in one line where uv is missing."""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path

import pytest

from gpucheck import cli
from gpucheck.fixplan.apply import ApplyError, apply_plan, freeze, step_argvs, undo
from gpucheck.fixplan.plan import Plan, PlanHost, build_plan
from gpucheck.fixplan.render import plan_dict
from gpucheck.model.finding import Finding, Status
from gpucheck.model.fix import Fix, Step, Tool
from gpucheck.model.layers import Layer

PYTHON = "/opt/uv-made/bin/python"  # never run: the fake uv answers for it


def _plan(tool: Tool, command: str = "pip install 'demo-pkg==2.0'") -> Plan:
    step = Step.run("install demo", command, tool, environment=PYTHON)
    finding = Finding("demo.0", Layer.FRAMEWORKS, Status.FAIL, "demo", fix=Fix.of(step))
    return build_plan([finding], PlanHost(socket.gethostname()), [PYTHON])


def test_fix_record_naming_a_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_dict(_plan(Tool.PIP))))
    taken = tmp_path / "f"
    taken.write_text("x\n")
    code = cli.run(["fix", "--plan", str(plan), "--apply", "--yes", "--record", str(taken)])
    assert code == 2
    assert capsys.readouterr().err == (
        f"gpucheck: --record: {taken} is not a folder: name a new folder\n"
    )
    assert taken.read_text() == "x\n"


def test_install_record_naming_a_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "f"
    taken.write_text("x\n")
    code = cli.run(["install", "torch", "--apply", "--yes", "--record", str(taken)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"gpucheck: --record: {taken} is not a folder: name a new folder\n"


@pytest.fixture
def fake_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `uv` on PATH that logs its arguments and freezes `demo-pkg==1.0`, then 2.0 once an
    install ran: the commands gpucheck gives uv, without uv (not installed here)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "uv.log"
    state = tmp_path / "installed"
    script = bin_dir / "uv"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {log}\n'
        f'if [ "$2" = freeze ]; then if [ -e {state} ]; then echo demo-pkg==2.0; '
        "else echo demo-pkg==1.0; fi; fi\n"
        f'if [ "$2" = install ]; then touch {state}; fi\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return log


def test_a_uv_step_is_recorded_and_undone_with_uv_pip(tmp_path: Path, fake_uv: Path) -> None:
    record = tmp_path / "record"
    journal = apply_plan(_plan(Tool.UV), record, PYTHON, lambda _: None)
    assert journal.uv_environments == [PYTHON]
    assert (record / "before" / "0.txt").read_text() == "demo-pkg==1.0\n"
    undo(str(record), lambda _: None)
    assert fake_uv.read_text().splitlines() == [
        f"pip freeze --python {PYTHON}",
        f"pip install --python {PYTHON} demo-pkg==2.0",
        f"pip freeze --python {PYTHON}",
        f"pip install --python {PYTHON} --no-deps demo-pkg==1.0",
    ]


def test_without_uv_on_path_a_uv_environment_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ApplyError) as caught:
        freeze(PYTHON, uv=True)
    assert str(caught.value) == (
        f"uv is not on PATH: {PYTHON}'s environment is recorded and restored with uv pip"
    )


def test_install_apply_refuses_conda_which_a_pip_freeze_record_cannot_undo() -> None:
    from support import framework_builders as fb

    from gpucheck.compat import load
    from gpucheck.fixplan.install import NotAppliable, install_plan
    from gpucheck.install.flow import answer_for
    from gpucheck.install.machine import from_snapshot
    from gpucheck.install.request import parse_wanted

    compat = load()
    snap = fb.on(fb.pascal_workstation(), fb.torch_cu124())
    answer = answer_for(compat, from_snapshot(snap, compat), parse_wanted(["torch"]), "conda")
    assert answer.commands == ["conda install -c conda-forge pytorch=2.14 cuda-version=12.6"]
    with pytest.raises(NotAppliable) as caught:
        install_plan(answer)
    assert str(caught.value) == (
        "--apply cannot undo a conda install (its record is pip's freeze list): run the "
        "commands above yourself, or --installer pip"
    )


def test_install_s_uv_pip_line_naming_its_environment_runs_with_one_python_option() -> None:
    # install prints `uv pip install --python PY ...`; the step is run for its environment
    line = f"uv pip install --python {PYTHON} 'demo-pkg==2.0'"
    (step,) = _plan(Tool.UV, line).local_steps
    assert step_argvs(step, None) == [["uv", "pip", "install", "--python", PYTHON, "demo-pkg==2.0"]]
