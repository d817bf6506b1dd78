"""The Python API: `gpucheck.doctor()` and `gpucheck.snapshot()` return objects and print
nothing, the report renders itself in notebooks, and `import gpucheck` loads nothing else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import builders

import gpucheck
from gpucheck.model.snapshot import dumps


def ecc_node() -> gpucheck.Snapshot:
    snap = builders.h100_node(8)
    snap.nvml.gpus[6].ecc_uncorrected_volatile = 3
    return snap


def test_import_gpucheck_loads_nothing_else() -> None:
    code = (
        "import sys, gpucheck; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('gpucheck', 'msgspec', 'rich', 'typer', 'pynvml', 'packaging')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['gpucheck']"


def test_doctor_on_a_snapshot_returns_the_report_and_prints_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = gpucheck.doctor(snapshot=ecc_node())
    assert isinstance(report, gpucheck.Report)
    assert (report.ready, report.exit_code) == (False, 1)
    assert [f.id for f in report.problems] == ["gpus.ecc-errors"]
    assert capsys.readouterr() == ("", "")
    assert repr(report).startswith("<Report not ready: exit 1, 1 failed, 0 warned,")


def test_doctor_from_a_file_with_requirements(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    path.write_text(dumps(builders.h100_node(8)))
    report = gpucheck.doctor(from_file=path, min_gpus=16, min_memory="80GB")
    status = {f.id: f.status.value for f in report.findings}
    assert status["requirements.min-gpus"] == "fail" and status["requirements.min-memory"] == "pass"
    assert report.from_file == str(path)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"only": ["gpu.nope"]}, "no check matches 'gpu.nope'"),
        ({"min_memory": "lots"}, "min_memory: 'lots' is not a size"),
        ({"min_memory": "40"}, "min_memory: '40' has no unit: write 40GiB"),
        ({"min_compute_capability": "nine"}, "is not a compute capability"),
        ({"from_file": "/nonexistent/snap.json"}, "--from: /nonexistent/snap.json: no such file"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        gpucheck.doctor(snapshot=None if "from_file" in kwargs else ecc_node(), **kwargs)  # type: ignore[arg-type]
    assert message in str(info.value)


NAN = float("nan")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        # What the command line refuses (--timeout's range, --min-gpus's, sizes above zero):
        # before, timeout=0 diagnosed a hung driver and the rest were accepted.
        ({"timeout": 0}, "timeout: 0 is out of range: give a number from 0.5 to 600"),
        ({"timeout": -5}, "timeout: -5 is out of range: give a number from 0.5 to 600"),
        ({"timeout": NAN}, "timeout: nan is not a number from 0.5 to 600"),
        ({"timeout": float("inf")}, "timeout: inf is not a number from 0.5 to 600"),
        ({"timeout": 601}, "timeout: 601 is out of range"),
        ({"min_gpus": 0}, "min_gpus: 0 is out of range: give a number of at least 1"),
        ({"min_gpus": -1}, "min_gpus: -1 is out of range: give a number of at least 1"),
        ({"min_memory": -5}, "min_memory: -5 is out of range: give a number of at least 1"),
        ({"min_memory": 0}, "min_memory: 0 is out of range"),
        ({"min_memory": "0GiB"}, "min_memory: '0GiB' must be above zero"),
    ],
)
def test_numbers_the_command_line_refuses_raise_value_error_naming_the_argument(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        gpucheck.doctor(snapshot=ecc_node(), **kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message or str(info.value).startswith(message), info.value


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_gpus": "8"}, "min_gpus: expected an integer, not str '8'"),  # was exit 3
        ({"min_gpus": True}, "min_gpus: expected an integer, not bool True"),
        ({"min_gpus": 2.0}, "min_gpus: expected an integer, not float 2.0"),
        ({"timeout": "15"}, "timeout: expected a number, not str '15'"),
        ({"min_memory": 1.5}, "min_memory: expected an integer, not float 1.5"),
        ({"min_compute_capability": 8.0}, "min_compute_capability: expected a string"),
        ({"only": "gpus"}, "only: expected a list of strings"),
        ({"skip": [1]}, "skip: expected a list of strings"),
        ({"compat_dirs": "/etc"}, "compat_dirs: expected a list of strings"),
        ({"snapshot": {}}, "snapshot: expected a gpucheck.Snapshot, not dict"),
        ({"from_file": 3}, "from_file: expected a path, not int"),
    ],
)
def test_arguments_of_the_wrong_type_raise_type_error_naming_the_argument(
    kwargs: dict[str, object], message: str
) -> None:
    kwargs = {"snapshot": ecc_node(), **kwargs}
    if "from_file" in kwargs:
        del kwargs["snapshot"]
    with pytest.raises(TypeError) as info:
        gpucheck.doctor(**kwargs)  # type: ignore[arg-type]
    assert str(info.value).startswith(message), info.value


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"timeout": 0}, ValueError),
        ({"timeout": NAN}, ValueError),
        ({"timeout": "5"}, TypeError),
        ({"host_id": 7}, TypeError),
    ],
)
def test_snapshot_arguments_are_judged_before_anything_is_probed(
    kwargs: dict[str, object], error: type[Exception]
) -> None:
    with pytest.raises(error, match=next(iter(kwargs))):
        gpucheck.snapshot(**kwargs)  # type: ignore[arg-type]


def test_the_api_and_the_command_line_accept_the_same_bounds() -> None:
    """The lowest and highest timeout and the lowest GPU count work through both."""
    for timeout in (0.5, 600):
        assert gpucheck.doctor(snapshot=ecc_node(), timeout=timeout, min_gpus=1).exit_code == 1


def test_the_report_renders_in_a_notebook() -> None:
    bundle = gpucheck.doctor(snapshot=ecc_node())._repr_mimebundle_()
    html, text = bundle["text/html"], bundle["text/plain"]
    # The body of `doctor --format html`, with its scoped style sheet, no document around it.
    assert html.startswith("<style>.gpucheck{") and '<div class="gpucheck">' in html
    assert "<html" not in html and "<script" not in html
    assert "Uncorrectable ECC memory errors on 1 GPU(s)" in html
    assert '<span aria-hidden="true">✗</span> fail</span>' in html  # icon and word
    assert "[gpus.ecc-errors]" in text and "\x1b[" not in text


def test_snapshot_of_this_machine_and_redacted() -> None:
    snap = gpucheck.snapshot(timeout=30)
    assert snap.schema_version == "1.6" and not snap.redacted
    assert gpucheck.snapshot(redact=True, timeout=30).redacted


def test_unknown_attributes_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = gpucheck.nope
    assert {"doctor", "snapshot", "Report", "Snapshot"} <= set(dir(gpucheck))


def test_only_gates_the_same_way_as_the_command() -> None:
    """gpucheck.doctor(only=...) and `doctor --only` share one path: a selected check with
    nothing to judge is a skip naming the failed prerequisite, and the report is not ready."""
    report = gpucheck.doctor(snapshot=builders.no_gpu_machine(), only=["gpus"])
    by_id = {f.id: f for f in report.findings}
    assert by_id["system.gpu-present"].status.value == "fail"
    assert by_id["gpus.ecc-errors"].status.value == "skip"
    assert "system.gpu-present" in by_id["gpus.ecc-errors"].title
    assert report.ready is False
