"""The doctor's request is judged once, by the code both callers share: `gpucheck doctor` and
`gpucheck.doctor()` refuse the same bad inputs with the same sentence, each naming the argument
as its caller spells it (the command line: one line, exit 2; Python: ValueError)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import builders

import gpucheck
from gpucheck import cli
from gpucheck.diagnosis.request import Caller, DoctorRequest, RequestError, validate
from gpucheck.model.snapshot import dumps

# (command-line options, API arguments, the command line's message, the API's message)
REFUSED: list[tuple[list[str], dict[str, object], str, str]] = [
    (
        ["--min-memory", "40"],
        {"min_memory": "40"},
        "--min-memory: '40' has no unit: write 40GiB (as nvidia-smi's MiB) or 40GB",
        "min_memory: '40' has no unit: write 40GiB (as nvidia-smi's MiB) or 40GB",
    ),
    (
        ["--min-memory", "lots"],
        {"min_memory": "lots"},
        "--min-memory: 'lots' is not a size (examples: 80GiB, 24G, 80GB, 16384MiB)",
        "min_memory: 'lots' is not a size (examples: 80GiB, 24G, 80GB, 16384MiB)",
    ),
    (
        ["--min-memory", "0GiB"],
        {"min_memory": "0GiB"},
        "--min-memory: '0GiB' must be above zero",
        "min_memory: '0GiB' must be above zero",
    ),
    (
        ["--min-compute-capability", "nine"],
        {"min_compute_capability": "nine"},
        "--min-compute-capability: 'nine' is not a compute capability (like 8.0)",
        "min_compute_capability: 'nine' is not a compute capability (like 8.0)",
    ),
    (
        ["--job-pids", "0"],
        {"job_pids": [0]},
        "--job-pids: '0' is not a process id",
        "job_pids: 0 is not a process id",
    ),
    (
        ["--only", "gpu.nope"],
        {"only": ["gpu.nope"]},
        "no check matches 'gpu.nope' (did you mean gpus.p2p, gpus.lost, gpus.compute-mode?); see: gpucheck checks",
        "no check matches 'gpu.nope' (did you mean gpus.p2p, gpus.lost, gpus.compute-mode?); see: gpucheck checks",
    ),
    (
        ["--skip", "nothing-like-it"],
        {"skip": ["nothing-like-it"]},
        "no check matches 'nothing-like-it'; see: gpucheck checks",
        "no check matches 'nothing-like-it'; see: gpucheck checks",
    ),
    (
        ["--deep"],
        {"deep": True},
        "--from diagnoses a saved snapshot; --deep, --python and --host-id probe this one",
        "from_file diagnoses a saved snapshot; deep, python and host_id probe this one",
    ),
]


@pytest.fixture
def saved(tmp_path: Path) -> str:
    path = tmp_path / "snap.json"
    path.write_text(dumps(builders.h100_node(2)))
    return str(path)


def command_line_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = cli.run(["doctor", *args])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err.endswith("\n") and err.count("\n") == 1, err  # one line
    return err.removeprefix("gpucheck: ").rstrip("\n")


@pytest.mark.parametrize(("options", "arguments", "said", "raised"), REFUSED)
def test_the_command_line_and_the_api_refuse_the_same_input_with_the_same_sentence(
    capsys: pytest.CaptureFixture[str],
    saved: str,
    options: list[str],
    arguments: dict[str, object],
    said: str,
    raised: str,
) -> None:
    assert command_line_error(capsys, "--from", saved, *options) == said
    with pytest.raises(ValueError) as info:
        gpucheck.doctor(from_file=saved, **arguments)  # type: ignore[arg-type]
    assert str(info.value) == raised


def test_an_unreadable_snapshot_is_refused_alike(capsys: pytest.CaptureFixture[str]) -> None:
    said = "--from: /nonexistent/snap.json: no such file"
    assert command_line_error(capsys, "--from", "/nonexistent/snap.json") == said
    with pytest.raises(ValueError) as info:
        gpucheck.doctor(from_file="/nonexistent/snap.json")
    assert str(info.value) == said


def test_an_interpreter_that_is_not_there_is_refused_alike_before_any_probe(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = str(tmp_path / "no-such-python")
    said = command_line_error(capsys, "--python", missing)
    assert said == f"--python: {missing}: no such interpreter"
    with pytest.raises(ValueError) as info:
        gpucheck.doctor(python=missing)
    assert str(info.value) == said


def test_a_snapshot_in_memory_is_not_probed_again() -> None:
    with pytest.raises(ValueError) as info:
        gpucheck.doctor(snapshot=builders.h100_node(1), python="python3")
    assert str(info.value) == (
        "snapshot diagnoses a saved snapshot; deep, python and host_id probe this one"
    )


def test_validate_parses_the_requirements_once_for_both_callers() -> None:
    for caller in Caller:
        request = DoctorRequest(
            min_gpus=8,
            min_memory="80GB",
            min_compute_capability="8",
            job_pids="12, 13",
            caller=caller,
        )
        required = validate(request)
        assert required.min_gpus == 8
        assert required.min_memory_bytes == 80_000_000_000
        assert required.min_memory_text == "80GB"
        assert required.min_compute_capability == "8.0"
        assert required.job_pids == frozenset({12, 13})


def test_a_request_error_is_a_usage_error_and_a_value_error() -> None:
    request = DoctorRequest(timeout=0.1, caller=Caller.COMMAND_LINE)
    with pytest.raises(RequestError) as info:
        validate(request)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == "--timeout: 0.1 is out of range: give a number from 0.5 to 600"
