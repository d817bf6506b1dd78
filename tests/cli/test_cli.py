"""The real command end to end, in a subprocess: output, JSON, exit codes, --from, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from conftest import run_gpucheck
from support import builders

from gpucheck import checks
from gpucheck.model.snapshot import Snapshot, dumps
from gpucheck.report.schema import report_schema

HAS_NVIDIA_PCI = any(
    (Path(d) / "vendor").read_text().strip() == "0x10de"
    for d in Path("/sys/bus/pci/devices").glob("*")
    if (Path(d) / "vendor").exists()
)


def save(tmp_path: Path, snap: Snapshot, name: str = "snap.json") -> str:
    path = tmp_path / name
    path.write_text(dumps(snap))
    return str(path)


def one_line_error(result, needle: str) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gpucheck: ") and needle in lines[0], lines[0]
    assert "Traceback" not in result.stderr + result.stdout


# -- this machine, live -----------------------------------------------------------------------


def test_live_json_validates_against_the_schema() -> None:
    result = run_gpucheck("doctor", "--json")
    assert result.returncode in (0, 1), result.stderr
    data = json.loads(result.stdout)
    jsonschema.Draft202012Validator(report_schema()).validate(data)
    assert data["summary"]["exit_code"] == result.returncode
    ids = {c.id for c in checks.all_checks()}
    assert {f["id"] for f in data["findings"]} <= ids


@pytest.mark.skipif(HAS_NVIDIA_PCI, reason="this machine has an NVIDIA GPU")
def test_live_doctor_on_a_machine_without_gpu_says_so_first() -> None:
    result = run_gpucheck("doctor")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    first_fail = next(line for line in lines if line.strip().startswith(("✗", "x ")))
    assert "no NVIDIA GPU" in first_fail and "[system.gpu-present]" in first_fail
    assert "fix:" in result.stdout
    assert "\x1b[" not in result.stdout  # not a terminal: no colour codes
    assert "problem" in lines[-1]


def test_snapshot_then_doctor_from_gives_the_same_findings(tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    result = run_gpucheck("snapshot", "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    live = json.loads(run_gpucheck("doctor", "--json", "--from", str(out)).stdout)
    again = json.loads(run_gpucheck("doctor", "--json", "--from", str(out)).stdout)
    assert live["findings"] == again["findings"]
    assert live["snapshot"] == json.loads(out.read_text())
    stdin = run_gpucheck("doctor", "--json", "--from", "-", stdin=out.read_text())
    assert json.loads(stdin.stdout)["findings"] == live["findings"]


# -- saved snapshots: deterministic ------------------------------------------------------------


def test_healthy_node_is_ready(tmp_path: Path) -> None:
    result = run_gpucheck("doctor", "--from", save(tmp_path, builders.h100_node(8)))
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().splitlines()[-1].startswith(("✓ Ready", "+ Ready"))
    assert "fix:" not in result.stdout


def test_verbose_shows_evidence_of_passing_checks(tmp_path: Path) -> None:
    path = save(tmp_path, builders.h100_node(2))
    quiet = run_gpucheck("doctor", "--from", path).stdout
    loud = run_gpucheck("doctor", "--from", path, "-v").stdout
    assert "GPU 1 (NVIDIA H100 80GB HBM3" not in quiet
    assert "[gpus.ecc-errors]" in loud and len(loud.splitlines()) > len(quiet.splitlines())


def test_failure_exit_code_and_fix_in_every_format(tmp_path: Path) -> None:
    snap = builders.h100_node(4)
    snap.nvml.gpus[2].ecc_uncorrected_volatile = 3
    path = save(tmp_path, snap)
    text = run_gpucheck("doctor", "--from", path)
    assert text.returncode == 1
    assert "Uncorrectable ECC memory errors on 1 GPU(s)" in text.stdout
    assert "GPU 2 (NVIDIA H100 80GB HBM3" in text.stdout
    data = json.loads(run_gpucheck("doctor", "--from", path, "--json").stdout)
    ecc = next(f for f in data["findings"] if f["id"] == "gpus.ecc-errors")
    assert ecc["status"] == "fail" and "nvidia-smi -r" in ecc["fix"]["text"]
    assert data["summary"] == {
        "ready": False,
        "exit_code": 1,
        "strict": False,
        "problems": 1,
        "counts": data["summary"]["counts"],
        "reason": None,
        "requirements": {  # none asked (report schema 3.0 records them)
            "min_gpus": None,
            "min_memory_bytes": None,
            "min_memory_text": None,
            "min_compute_capability": None,
            "job_pids": None,
        },
    }
    junit = run_gpucheck("doctor", "--from", path, "--format", "junit")
    assert junit.returncode == 1
    suite = ET.fromstring(junit.stdout).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["gpus.ecc-errors"]


def test_strict_turns_warnings_into_failure(tmp_path: Path) -> None:
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].compute_mode = "exclusive_process"
    path = save(tmp_path, snap)
    assert run_gpucheck("doctor", "--from", path).returncode == 0
    strict = run_gpucheck("doctor", "--from", path, "--strict", "--json")
    assert strict.returncode == 1
    assert json.loads(strict.stdout)["summary"]["strict"] is True


def test_requirements_are_checks_with_their_own_findings(tmp_path: Path) -> None:
    path = save(tmp_path, builders.h100_node(8))
    ok = run_gpucheck(
        "doctor",
        "--from",
        path,
        "--json",
        "--min-gpus",
        "8",
        "--min-memory",
        "79GiB",
        "--min-compute-capability",
        "9.0",
    )
    assert ok.returncode == 0
    found = {f["id"]: f["status"] for f in json.loads(ok.stdout)["findings"]}
    assert found["requirements.min-gpus"] == found["requirements.min-memory"] == "pass"
    assert found["requirements.min-compute-capability"] == "pass"
    short = run_gpucheck("doctor", "--from", path, "--min-gpus", "16", "--min-memory", "80GiB")
    assert short.returncode == 1
    assert "Needs 16 GPU(s), has 8" in short.stdout
    assert "8 GPU(s) have less than 80GiB of memory" in short.stdout
    hidden = run_gpucheck(
        "doctor", "--from", path, "--min-gpus", "8", env={"CUDA_VISIBLE_DEVICES": "0"}
    )
    # The environment of the diagnosing machine does not leak into a saved snapshot's diagnosis.
    assert hidden.returncode == 0


def test_only_and_skip_select_checks(tmp_path: Path) -> None:
    snap = builders.h100_node(2)
    snap.nvml.gpus[0].compute_mode = "prohibited"
    path = save(tmp_path, snap)
    only = json.loads(run_gpucheck("doctor", "--from", path, "--json", "--only", "gpus.").stdout)
    assert {f["id"].split(".")[0] for f in only["findings"]} == {"gpus"}
    skipped = run_gpucheck("doctor", "--from", path, "--skip", "gpus.compute-mode")
    assert skipped.returncode == 0
    assert "compute-mode" not in skipped.stdout


def test_an_id_from_before_4_0_selects_its_check_and_names_the_new_id(tmp_path: Path) -> None:
    snap = builders.h100_node(2)
    snap.nvml.gpus[0].compute_mode = "prohibited"
    path = save(tmp_path, snap)
    result = run_gpucheck("doctor", "--from", path, "--json", "--only", "gpu.compute-mode")
    assert [f["id"] for f in json.loads(result.stdout)["findings"]] == ["gpus.compute-mode"]
    assert result.stderr.strip() == (
        "gpucheck: 'gpu.compute-mode' is a check id from before report schema 4.0; "
        "it now reads 'gpus.compute-mode'"
    )
    skipped = run_gpucheck("doctor", "--from", path, "--skip", "gpu", "--skip", "torch")
    assert skipped.returncode == 0  # the GPU checks (the failing one too) are skipped
    assert "'gpu' is a check id from before report schema 4.0; it now reads 'gpus'" in (
        skipped.stderr
    )
    assert "it now reads 'frameworks.torch'" in skipped.stderr


def test_output_file_is_written_whole(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = run_gpucheck(
        "doctor", "--from", save(tmp_path, builders.h100_node(1)), "--json", "-o", str(out)
    )
    assert result.returncode == 0 and result.stdout == ""
    assert json.loads(out.read_text())["summary"]["ready"] is True
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_colour_only_when_asked_or_on_a_terminal(tmp_path: Path) -> None:
    path = save(tmp_path, builders.no_gpu_machine())
    assert "\x1b[" not in run_gpucheck("doctor", "--from", path).stdout
    assert "\x1b[" in run_gpucheck("doctor", "--from", path, env={"FORCE_COLOR": "1"}).stdout
    forced_off = run_gpucheck("doctor", "--from", path, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[3" not in forced_off.stdout  # NO_COLOR: no colours (bold may stay)


def test_schema_and_checks_commands() -> None:
    schema = run_gpucheck("schema")
    assert schema.returncode == 0
    assert json.loads(schema.stdout) == report_schema()
    listing = run_gpucheck("checks").stdout.splitlines()
    assert [line.split()[0] for line in listing] == [c.id for c in checks.all_checks()]
    version = run_gpucheck("--version")
    assert version.returncode == 0 and version.stdout.startswith("gpucheck ")


# -- bad input: one line, exit 2, nothing the user had is changed ---------------------------------


def test_unreadable_snapshots(tmp_path: Path) -> None:
    one_line_error(run_gpucheck("doctor", "--from", str(tmp_path / "nope.json")), "no such file")
    one_line_error(run_gpucheck("doctor", "--from", str(tmp_path)), "is a folder")
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\xff\xfe\x00garbage")
    one_line_error(run_gpucheck("doctor", "--from", str(garbage)), "not a gpucheck snapshot")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"schema_version": "1.0", "nvml": {"gpus": [{"index": "zero"}]}}))
    one_line_error(run_gpucheck("doctor", "--from", str(wrong)), "nvml.gpus[0].index")
    negative = tmp_path / "negative.json"  # the trial: -1 ECC errors were judged a failure
    negative.write_text(
        json.dumps({"schema_version": "1.0", "nvml": {"gpus": [{"index": 0, "memory_total": -5}]}})
    )
    one_line_error(
        run_gpucheck("doctor", "--from", str(negative)),
        "invalid snapshot: nvml.gpus[0].memory_total: must not be negative (a count or size)",
    )
    future = tmp_path / "future.json"
    future.write_text(json.dumps({"schema_version": "9.0"}))
    one_line_error(run_gpucheck("doctor", "--from", str(future)), "schema 9.0 is not readable")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["doctor", "--min-memory", "lots"], "is not a size"),
        # The trial: a bare 40 was read as 40 bytes and passed every GPU; fit refuses it.
        (
            ["doctor", "--min-memory", "40"],
            "--min-memory: '40' has no unit: write 40GiB (as nvidia-smi's MiB) or 40GB",
        ),
        (["doctor", "--min-compute-capability", "ampere"], "is not a compute capability"),
        (["doctor", "--min-gpus", "zero"], "--min-gpus"),
        (["doctor", "--format", "yaml"], "is not one of text, json, junit"),
        (["doctor", "--only", "gpu.eccc-errors"], "did you mean gpus.ecc-errors"),
        (["doctor", "--timeout", "0"], "--timeout"),
        (["doctor", "--bogus"], "--bogus"),
        (["frobnicate"], "frobnicate"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], needle: str) -> None:
    one_line_error(run_gpucheck(*args), needle)


def test_a_failed_run_does_not_touch_an_existing_output_file(tmp_path: Path) -> None:
    existing = tmp_path / "report.json"
    existing.write_text("precious")
    result = run_gpucheck("doctor", "--from", str(tmp_path / "missing.json"), "-o", str(existing))
    assert result.returncode == 2
    assert existing.read_text() == "precious"
    one_line_error(
        run_gpucheck("snapshot", "-o", str(tmp_path / "no" / "such" / "dir" / "s.json")),
        "does not exist",
    )


def test_broken_pipe_is_quiet(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = save(tmp_path, builders.h100_node(8))
    proc = subprocess.run(
        f"{sys.executable} -m gpucheck doctor -v --from {path} | head -n 1",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert proc.stdout.startswith("gpucheck ")
    assert "Traceback" not in proc.stderr and "Broken pipe" not in proc.stderr


@pytest.mark.parametrize(
    ("snap", "code"), [(builders.h100_node(1), 0), (builders.no_gpu_machine(), 1)]
)
def test_a_closed_pipe_keeps_the_reports_exit_code(
    tmp_path: Path, snap: Snapshot, code: int
) -> None:
    """`gpucheck doctor | head -c 10` in a CI gate: the reader leaving must not turn a
    failing report into a pass or a passing one into a failure."""
    import subprocess
    import sys

    path = save(tmp_path, snap)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "doctor", "--from", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # gone before the first write
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert b"Traceback" not in err and b"Exception ignored" not in err


# -- the command table --------------------------------------------------------------------------

# Every command a user can run, as docs/index.md lists them.
EVERY_COMMAND = ["doctor", "snapshot", "schema", "checks", "bench", "fit", "fleet", "procs"]
EVERY_COMMAND += ["watch", "compat", "fix", "install", "dockerfile", "explain", "mcp", "preflight"]


def test_help_lists_every_command_and_each_one_runs_its_own_help() -> None:
    listing = run_gpucheck("--help")
    assert listing.returncode == 0, listing.stderr
    commands = listing.stdout.split("Commands:", 1)[1]
    listed = [
        line.split()[0]
        for line in commands.splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert listed == EVERY_COMMAND
    for name in listed:
        own = run_gpucheck(name, "--help")
        assert own.returncode == 0, (name, own.stderr)
        assert own.stdout.startswith(f"Usage: gpucheck {name} [OPTIONS]"), own.stdout[:80]


def test_a_mistyped_command_is_answered_with_the_closest_one() -> None:
    result = run_gpucheck("doctr")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "gpucheck: No such command 'doctr'. Did you mean 'doctor'? (see: gpucheck --help)"
    )
