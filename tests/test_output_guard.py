"""No command writes its -o over one of its own inputs: the one guard (outputs.py,
refuse_input_as_output) refuses with the same line and exit 2 whichever command it is, and
whether the output names the input itself, a symbolic link to it or a hard link to it.

The table below says how each command with -o reads an input; a command given -o that is not
in it fails test_every_command_with_an_output_is_in_the_table, so a new one is covered."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from support import builders

from gpucheck import cli
from gpucheck.model.snapshot import dumps

FIXTURES = Path(__file__).parent / "fixtures"


def in_process(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(argv)
    return code, out.getvalue(), err.getvalue()


def commands_with_output() -> set[str]:
    """Every command (or subcommand) that takes -o, read from the command line itself."""
    found = set()
    group = typer.main.get_command(cli.build_app())
    for name in cli.COMMANDS:
        command = group.commands[name]  # type: ignore[attr-defined]
        subcommands = getattr(command, "commands", None) or {name: command}
        for sub, each in subcommands.items():
            if any("-o" in getattr(param, "opts", ()) for param in each.params):
                found.add(name if sub == name else f"{name} {sub}")
    return found


def _snapshot(folder: Path) -> Path:
    path = folder / "snap.json"
    path.write_text(dumps(builders.h100_node(1)))
    return path


def _plan(folder: Path) -> Path:
    path = folder / "plan.json"
    code, _, err = in_process(["fix", "--from", str(_snapshot(folder)), "--json", "-o", str(path)])
    assert code in (0, 1) and path.exists(), err
    return path


def _python_list(folder: Path) -> Path:
    path = folder / "pythons.txt"
    path.write_text(f"{sys.executable}\n")
    return path


def _dockerfile(folder: Path) -> Path:
    path = folder / "Dockerfile"
    path.write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n")
    return path


def _config(folder: Path) -> Path:
    path = folder / "config.json"
    shutil.copy(FIXTURES / "models" / "gpt2" / "config.json", path)
    return path


def _error_log(folder: Path) -> Path:
    path = folder / "train.log"
    path.write_text("RuntimeError: CUDA error: out of memory\n")
    return path


def _watch_log(folder: Path) -> Path:
    path = folder / "train.jsonl"
    path.write_text('{"timestamp": "2026-01-01T00:00:00Z", "gpu": 0, "power.draw": 100.0}\n')
    return path


def _beside(path: str) -> str:
    """The snapshot in the input's folder (dockerfile judges against one)."""
    return str(Path(path).parent / "snap.json")


# command -> (make its input in a folder, its arguments given that input's path and -o's)
Case = tuple[Callable[[Path], Path], Callable[[str, str], list[str]]]
CASES: dict[str, Case] = {
    "doctor": (_snapshot, lambda i, o: ["doctor", "--from", i, "-o", o]),
    "snapshot": (_python_list, lambda i, o: ["snapshot", "--python", f"@{i}", "-o", o]),
    "bench": (_python_list, lambda i, o: ["bench", "--python", f"@{i}", "-o", o]),
    "fit": (_config, lambda i, o: ["fit", i, "--gpu-memory", "80GiB", "-o", o]),
    "fleet": (_snapshot, lambda i, o: ["fleet", i, "-o", o]),
    "fix": (_snapshot, lambda i, o: ["fix", "--from", i, "-o", o]),
    "fix --plan": (_plan, lambda i, o: ["fix", "--plan", i, "-o", o]),
    "install": (_snapshot, lambda i, o: ["install", "torch", "--from", i, "-o", o]),
    "dockerfile": (_dockerfile, lambda i, o: ["dockerfile", i, "--from", _beside(i), "-o", o]),
    "watch": (_watch_log, lambda i, o: ["watch", "--from", i, "-o", o]),
    "explain": (_error_log, lambda i, o: ["explain", i, "-o", o]),
}


def test_every_command_with_an_output_is_in_the_table() -> None:
    assert {case.split()[0] for case in CASES} == commands_with_output()


@pytest.mark.parametrize("how", ["itself", "symbolic link", "hard link", "through a link"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_output_over_the_commands_own_input_is_refused(
    case: str, how: str, tmp_path: Path
) -> None:
    make, argv = CASES[case]
    _snapshot(tmp_path)
    source = make(tmp_path)
    before = source.read_bytes()
    read, written = str(source), str(source)
    if how == "symbolic link":
        written = str(tmp_path / "out-link")
        os.symlink(source, written)
    elif how == "hard link":
        written = str(tmp_path / "out-hard")
        os.link(source, written)
    elif how == "through a link":  # the input named by a link, the output by its real name
        read = str(tmp_path / "in-link")
        os.symlink(source, read)
    code, out, err = in_process(argv(read, written))
    assert code == 2, (code, err)
    assert err.startswith(f"gpucheck: --output: {written} is one of the inputs ("), err
    assert err.endswith("): it would be overwritten\n") and err.count("\n") == 1, err
    assert source.read_bytes() == before
    assert out == ""


def test_an_output_beside_the_inputs_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard refuses the input, not the folder it is in."""
    _config(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, _, err = in_process(["fit", "config.json", "--gpu-memory", "80GiB", "-o", "fit.txt"])
    assert code in (0, 1), err
    assert (tmp_path / "fit.txt").read_text().strip()


def test_a_command_starts_with_no_inputs_of_an_earlier_one(tmp_path: Path) -> None:
    """In one process (the API, the tests), what an earlier command read is not refused."""
    snap = _snapshot(tmp_path)
    other = tmp_path / "other.json"
    other.write_text(dumps(builders.h100_node(2)))
    assert in_process(["doctor", "--from", str(snap)])[0] == 0
    code, _, err = in_process(["doctor", "--from", str(other), "--json", "-o", str(snap)])
    assert code == 0, err
    assert '"schema_version"' in snap.read_text() and '"summary"' in snap.read_text()


def test_a_file_read_from_a_model_folder_is_an_input_too(tmp_path: Path) -> None:
    """fit reads the folder's config.json: -o naming that file is refused when it is written,
    by the same guard (the files a command reads are noted as they are read)."""
    config = _config(tmp_path)
    before = config.read_bytes()
    code, _, err = in_process(["fit", str(tmp_path), "--gpu-memory", "80GiB", "-o", str(config)])
    assert (code, err) == (
        2,
        f"gpucheck: --output: {config} is one of the inputs ({config}): it would be overwritten\n",
    )
    assert config.read_bytes() == before


def test_the_dockerfile_a_compose_file_builds_is_an_input_too(tmp_path: Path) -> None:
    dockerfile = _dockerfile(tmp_path)
    before = dockerfile.read_bytes()
    compose = tmp_path / "compose.yaml"
    compose.write_text("services:\n  train:\n    build: .\n")
    snap = _snapshot(tmp_path)
    code, _, err = in_process(
        ["dockerfile", str(compose), "--from", str(snap), "-o", str(dockerfile)]
    )
    assert (code, err) == (
        2,
        f"gpucheck: --output: {dockerfile} is one of the inputs ({dockerfile}): it would be "
        "overwritten\n",
    )
    assert dockerfile.read_bytes() == before
