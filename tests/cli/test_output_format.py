"""One way to choose an output: every command with a machine-readable output takes --format
(from one option factory) and --json, the same alias with the same help everywhere; a name
not in the command's table, or --json with another --format, is one line and exit 2."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from support import builders

from gpucheck import cli
from gpucheck.fit.flow import FitRequest, run
from gpucheck.fit.request import Request
from gpucheck.inputs import UserError
from gpucheck.model.snapshot import dumps
from gpucheck.report.output_format import FunctionFormat, choose_format, format_table

# The commands with a machine-readable output, and their formats as --help names them.
FORMATTED = {
    "doctor": "text, json, junit, prometheus or html.",
    "dockerfile": "text, json, junit, prometheus or html.",
    "fix": "text, json, sh, ps1 or html.",
    "fleet": "table, json, csv or html.",
    "procs": "text or json.",
    "bench": "text, json or html.",
    "fit": "text, json or html.",
    "explain": "text, json, junit or html.",
}


def commands() -> Any:
    """The command line's commands by name (a click group's, as typer builds it)."""
    return typer.main.get_command(cli.build_app()).commands  # type: ignore[attr-defined]


def options(command: Any) -> dict[str, Any]:
    return {name: p for p in command.params for name in p.opts}


@pytest.mark.parametrize("name", [*FORMATTED, "compat"])
def test_every_command_takes_format_and_json_alike(name: str) -> None:
    found = options(commands()[name])
    assert found["--json"].help == "Same as --format json."
    assert found["--format"].opts == ["--format", "-f"]
    assert found["--format"].help == FORMATTED.get(name, "text or json.")


def test_compat_subcommands_take_format_and_json_alike() -> None:
    compat = commands()["compat"]
    for sub in compat.commands.values():
        found = options(sub)
        assert found["--json"].help == "Same as --format json.", sub.name
        assert found["--format"].help == "text or json.", sub.name


TABLE = format_table(
    FunctionFormat("text", lambda result, stream: stream.write(f"text {result}")),
    FunctionFormat("json", lambda result, stream: stream.write(json.dumps(result))),
)


def test_choose_format_takes_the_default_the_name_or_json() -> None:
    assert choose_format(TABLE, None).name == "text"
    assert choose_format(TABLE, "text", json_out=True).name == "json"
    assert choose_format(TABLE, "json").name == "json"
    stream = io.StringIO()
    choose_format(TABLE, "text").write(7, stream)
    assert stream.getvalue() == "text 7"


def test_choose_format_refuses_an_unknown_name_and_two_formats() -> None:
    with pytest.raises(UserError) as unknown:
        choose_format(TABLE, "xml")
    assert str(unknown.value) == "--format: 'xml' is not one of text, json"
    two = format_table(*TABLE.values(), FunctionFormat("sh", lambda r, s: None))
    with pytest.raises(UserError) as both:
        choose_format(two, "sh", json_out=True)
    assert str(both.value) == "--json and --format sh ask for two formats: give one"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_and_format_json_write_the_same_bytes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fit = ["fit", "--params", "7B", "--gpu-memory", "80GiB"]
    code, by_alias, _ = run_cli(capsys, *fit, "--json")
    assert (code, by_alias) == (run_cli(capsys, *fit, "--format", "json")[:2])
    assert json.loads(by_alias)["model"]["params"] == 7_000_000_000
    snap = tmp_path / "snap.json"
    snap.write_text(dumps(builders.h100_node(2)))
    doctor = ["doctor", "--from", str(snap)]
    _, report, _ = run_cli(capsys, *doctor, "--json")
    _, by_name, _ = run_cli(capsys, *doctor, "--format", "json")

    def timeless(text: str) -> str:
        # Each report's own time stands aside: two runs may fall either side of a second.
        return text.replace(json.loads(text)["created_at"], "T")

    assert timeless(by_name) == timeless(report)


@pytest.mark.parametrize(
    "args",
    [
        ["fit", "--params", "7B", "--gpu-memory", "80GiB", "--format", "csv"],
        ["fleet", "-", "--format", "xml"],
        ["compat", "torch", "2.5.1", "--format", "yaml"],
    ],
)
def test_an_unknown_format_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = run_cli(capsys, *args)
    assert (code, out) == (2, "")
    assert err.startswith(f"gpucheck: --format: {args[-1]!r} is not one of ")
    assert err.count("\n") == 1


def test_fix_and_fleet_refuse_json_with_another_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "fleet", "-", "--json", "--format", "csv")
    assert (code, err) == (2, "gpucheck: --json and --format csv ask for two formats: give one\n")
    code, _, err = run_cli(capsys, "fix", "--json", "--format", "sh")
    assert (code, err) == (2, "gpucheck: --json and --format sh ask for two formats: give one\n")


def test_fit_runs_from_python_as_the_command_does(capsys: pytest.CaptureFixture[str]) -> None:
    result = run(FitRequest(params="7B", options=Request(batch=2), gpu_memory="80GiB"))
    assert result.nothing_judged is None
    assert result.exit_code == 1  # 7B parameters trained with AdamW: 112 GB of state alone
    code, out, _ = run_cli(
        capsys, "fit", "--params", "7B", "--batch", "2", "--gpu-memory", "80GiB", "--json"
    )
    assert result.report.to_dict() == json.loads(out)
    assert code == result.exit_code
    with pytest.raises(UserError) as info:
        run(FitRequest(params="7B", gpu_memory="80GiB", all_gpus=True))
    assert str(info.value) == "--gpu-memory and --all-gpus: choose one"
