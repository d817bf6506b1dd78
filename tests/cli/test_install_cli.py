"""`gpucheck install` as a user runs it: from a saved snapshot or a described machine, text and
--json (valid against `gpucheck schema install`), the installer detected or named, exit codes
0 (a build for everything), 1 (none, or a conflict) and 2 (usage)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import jsonschema
import pytest
from support import builders
from support import framework_builders as fb

from gpucheck import cli
from gpucheck.cli.schema import schema_text
from gpucheck.fixplan.install import NotAppliable, install_plan
from gpucheck.install.flow import detect_installer
from gpucheck.install.machine import Machine
from gpucheck.model.fix import Tool
from gpucheck.model.snapshot import dumps


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(["install", *argv])
    return code, out.getvalue(), err.getvalue()


def pascal_snapshot(tmp_path: Path) -> Path:
    """A GTX 1080 on driver 580.95.05, its venv holding torch 2.5.1+cu124 and torchvision."""
    env = fb.torch_cu124()
    fb.add(env, "torchvision", "0.20.1", ["torch==2.5.1"])
    path = tmp_path / "snap.json"
    path.write_text(dumps(fb.on(fb.pascal_workstation(), env)))
    return path


def test_from_a_snapshot_names_the_build_moves_torchvision_and_prints_the_date(
    tmp_path: Path,
) -> None:
    code, out, err = run("torch", "--from", str(pascal_snapshot(tmp_path)))
    assert (code, err) == (0, "")
    assert "torch: 2.14, cu126 from https://download.pytorch.org/whl/cu126 (torch==2.14.*)" in out
    assert "moves with it: torchvision 0.20.1 -> torchvision==0.29.* " in out
    assert (
        "  /home/user/.venv/bin/python -m pip install 'torch==2.14.*' 'torchvision==0.29.*' "
        "--index-url https://download.pytorch.org/whl/cu126\n" in out
    )
    assert "Compat data as of 2026-11-21" in out


def test_json_validates_against_its_schema(tmp_path: Path) -> None:
    code, out, _ = run("torch", "torchaudio", "--from", str(pascal_snapshot(tmp_path)), "--json")
    data = json.loads(out)
    jsonschema.Draft202012Validator(json.loads(schema_text("install"))).validate(data)
    assert code == 0 and data["schema_version"] == "1.0"
    assert [p["requirement"] for p in data["packages"]] == ["torch==2.14.*", "torchaudio==2.11.*"]
    assert data["environment"] == "/home/user/.venv/bin/python"


def test_no_build_is_exit_1_with_the_reason() -> None:
    code, out, _ = run("torch==2.5.1", "--gpu", "RTX 5090", "--driver", "580.95.05")
    assert code == 1
    assert "torch: no build in the compat data runs here" in out


def test_cupy_without_a_gpu_is_exit_1_and_with_one_validates_as_json() -> None:
    code, out, _ = run("cupy", "--python", "3.12")
    assert code == 1 and "CuPy has no CPU build" in out
    code, out, _ = run("cupy", "--gpu", "RTX 4090", "--driver", "550.54.14", "--json")
    data = json.loads(out)
    jsonschema.Draft202012Validator(json.loads(schema_text("install"))).validate(data)
    assert code == 0 and data["packages"][0]["requirement"] == "cupy-cuda12x[ctk]==14.2.*"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["numpy"], "gpucheck: numpy: not one gpucheck install resolves"),
        (["xformers"], "gpucheck: xformers: the compat data holds no xformers builds"),
        (["torch", "--gpu", "RTX 9999"], "gpucheck: --gpu: 'RTX 9999' is not in the compat data"),
        (["torch", "--driver", "new"], "gpucheck: --driver: 'new' is not a driver version"),
        (["torch", "--gpu", "H100", "--python", "/usr/bin/python3"], "gpucheck: --python PATH"),
        (["torch", "--gpu", "H100", "--apply"], "gpucheck: --apply installs on this machine"),
        (["torch", "--gpu", "H100", "--installer", "poetry"], "gpucheck: --installer: 'poetry'"),
        (["torch", "--gpu", "H100", "--os", "macos"], "gpucheck: --os: 'macos' is not one of"),
        (["torch==x"], "gpucheck: 'torch==x' is not a package requirement"),
        (["cupy-rocm-5-0"], "gpucheck: cupy-rocm-5-0: the compat data holds no CuPy ROCm builds"),
        (["cupy", "cupy-cuda12x"], "gpucheck: cupy-cuda12x: CuPy is named twice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str) -> None:
    code, out, err = run(*argv)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1, err


def test_uv_add_shows_the_index_and_sources_as_uv_documents_them() -> None:
    code, out, _ = run(
        "torch", "--gpu", "RTX 5090", "--driver", "570.124.06", "--python", "3.12",
        "--installer", "uv-add",
    )  # fmt: skip
    assert code == 0
    assert (
        "  in pyproject.toml:\n"
        "    [[tool.uv.index]]\n"
        '    name = "pytorch-cu128"\n'
        '    url = "https://download.pytorch.org/whl/cu128"\n'
        "    explicit = true\n\n"
        "    [tool.uv.sources]\n"
        '    torch = [{ index = "pytorch-cu128" }]\n'
        "  uv add 'torch==2.11.*'\n"
    ) in out


def test_conda_uses_the_pytorch_channel_up_to_2_5_and_conda_forge_after() -> None:
    # pytorch/pytorch#138506: 2.5 is the last release published to the pytorch channel.
    _, old, _ = run(
        "torch>=2.4,<2.6", "--gpu", "A100", "--driver", "535.104.05", "--python", "3.11",
        "--installer", "conda",
    )  # fmt: skip
    assert "  conda install pytorch=2.5 pytorch-cuda=12.4 -c pytorch -c nvidia\n" in old
    _, new, _ = run(
        "torch", "--gpu", "GTX 1080", "--driver", "580.95.05", "--python", "3.12",
        "--installer", "mamba",
    )  # fmt: skip
    assert "  mamba install -c conda-forge pytorch=2.14 cuda-version=12.6\n" in new


def test_the_installer_is_detected_from_the_project_and_environment(tmp_path: Path) -> None:
    machine = Machine(prefix=str(tmp_path / "env"))
    (tmp_path / "env").mkdir()
    assert detect_installer(machine, tmp_path)[0] == "pip"
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\nuv = 0.9.2\n")
    assert detect_installer(machine, tmp_path)[0] == "uv-pip"
    (tmp_path / "env" / "conda-meta").mkdir()
    assert detect_installer(machine, tmp_path)[0] == "conda"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.uv]\n")
    assert detect_installer(machine, tmp_path)[0] == "uv-add"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "uv.lock").write_text("version = 1\n")
    assert detect_installer(machine, tmp_path)[0] == "uv-add"


def test_apply_goes_through_the_fix_journal_as_one_local_pip_step(tmp_path: Path) -> None:
    from gpucheck.compat import load
    from gpucheck.install.flow import answer_for
    from gpucheck.install.machine import from_snapshot
    from gpucheck.install.request import parse_wanted

    compat = load()
    snap = fb.on(fb.pascal_workstation(), fb.torch_cu124())
    answer = answer_for(compat, from_snapshot(snap, compat), parse_wanted(["torch"]))
    plan = install_plan(answer)
    (step,) = plan.local_steps
    assert step.command == (
        "/home/user/.venv/bin/python -m pip install 'torch==2.14.*' "
        "--index-url https://download.pytorch.org/whl/cu126"
    )
    assert (step.tool, step.environment) == (Tool.PIP, "/home/user/.venv/bin/python")
    answer.installer = "uv-add"
    with pytest.raises(NotAppliable, match="runs pip and uv pip commands"):
        install_plan(answer)


def test_apply_refuses_another_machines_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    path.write_text(dumps(builders.h100_node(1)))
    code, _, err = run("torch", "--from", str(path), "--apply", "--yes")
    assert code == 2 and "--apply installs on this machine, not the snapshot" in err
