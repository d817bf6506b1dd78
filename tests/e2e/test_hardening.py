"""What a demanding user broke (bad paths, odd environments, wrong versions), each reproduced through the real command first."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from conftest import run_gpucheck
from support import builders
from support import more_builders as mb
from support.started import wait_until_main_runs

from gpucheck.model.snapshot import Snapshot, dumps


def save(tmp_path: Path, snap: Snapshot, name: str = "snap.json") -> str:
    path = tmp_path / name
    path.write_text(dumps(snap))
    return str(path)


def one_line(result: subprocess.CompletedProcess[str], code: int, needle: str) -> None:
    assert result.returncode == code, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpucheck: "), result.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in result.stderr + result.stdout


@pytest.fixture
def snap_file(tmp_path: Path) -> str:
    return save(tmp_path, builders.h100_node(2))


# -- 1 and 11: -o writes regular files atomically, and everything else in place -------------------


def test_output_through_a_link_to_a_device_keeps_device_and_link(
    tmp_path: Path, snap_file: str
) -> None:
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    result = run_gpucheck("doctor", "--from", snap_file, "--json", "-o", str(link))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_to_a_fifo_is_written_in_place_and_read_by_its_reader(
    tmp_path: Path, snap_file: str
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run_gpucheck("doctor", "--from", snap_file, "--json", "-o", str(fifo), timeout=60)
    reader.join(timeout=30)
    assert result.returncode == 0, result.stderr
    assert json.loads(got[0])["summary"]["ready"] is True
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_output_through_a_link_replaces_the_target_and_keeps_link_and_mode(
    tmp_path: Path, snap_file: str
) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    real.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    result = run_gpucheck("doctor", "--from", snap_file, "--json", "-o", str(link))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert json.loads(real.read_text())["schema_version"] == "4.2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json", "snap.json"]


def test_output_to_dev_stdout_reaches_the_pipe(snap_file: str) -> None:
    result = run_gpucheck("doctor", "--from", snap_file, "--json", "-o", "/dev/stdout")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["summary"]["exit_code"] == 0


def test_output_to_a_folder_is_one_line(tmp_path: Path, snap_file: str) -> None:
    one_line(run_gpucheck("doctor", "--from", snap_file, "-o", str(tmp_path)), 2, "is a folder")


def test_output_over_the_input_snapshot_is_refused_and_the_input_kept(snap_file: str) -> None:
    before = Path(snap_file).read_bytes()
    result = run_gpucheck("doctor", "--from", snap_file, "-o", snap_file)
    one_line(result, 2, "would be overwritten")
    assert Path(snap_file).read_bytes() == before


def test_a_full_disk_is_one_line_and_exit_4(snap_file: str) -> None:
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "gpucheck", "doctor", "--from", snap_file, "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    result.stdout = ""
    one_line(result, 4, "cannot write the report to standard output")


# -- 2: a gate that judged nothing is not ready --------------------------------------------------


def test_only_gpus_on_a_machine_without_gpu_is_not_ready(tmp_path: Path) -> None:
    path = save(tmp_path, builders.no_gpu_machine())
    result = run_gpucheck("doctor", "--from", path, "--only", "gpus", "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    found = {f["id"]: f for f in data["findings"]}
    assert found["system.gpu-present"]["status"] == "fail"  # the prerequisite, reported
    gpu_checks = [f for f in data["findings"] if f["section"] == "gpus"]
    assert gpu_checks and all(f["status"] == "skip" for f in gpu_checks)
    assert all("system.gpu-present" in f["title"] for f in gpu_checks)
    assert data["summary"]["ready"] is False


def test_only_one_check_under_a_failed_nvml_is_not_ready_even_strict(tmp_path: Path) -> None:
    path = save(tmp_path, mb.nvml_fails(builders.h100_node(2), "DriverNotLoaded"))
    result = run_gpucheck("doctor", "--from", path, "--only", "gpus.ecc-errors", "--strict")
    assert result.returncode == 1
    assert "driver.nvml" in result.stdout and "Ready" not in result.stdout


def test_only_a_requirement_that_was_not_asked_for_is_not_ready(snap_file: str) -> None:
    result = run_gpucheck(
        "doctor", "--from", snap_file, "--only", "requirements.min-gpus", "--json"
    )
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert [f["status"] for f in data["findings"]] == ["skip"]
    assert data["summary"]["reason"].startswith("every check skipped")


# -- 3: --python ./python is that file ------------------------------------------------------------


def test_python_given_as_a_relative_path_is_that_path(tmp_path: Path) -> None:
    (tmp_path / "python").symlink_to(sys.executable)
    result = subprocess.run(
        [sys.executable, "-m", "gpucheck", "snapshot", "--python", "./python"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (env,) = json.loads(result.stdout)["environments"]
    assert env["python"] == str(tmp_path / "python")
    assert env["origin"] == "--python"


def test_a_bare_python_name_not_on_path_is_one_line() -> None:
    one_line(run_gpucheck("doctor", "--python", "no-such-python-3.99"), 2, "no such interpreter")


# -- 4 and 14: --from input ------------------------------------------------------------------------


def test_stdin_snapshot_has_the_same_size_limit() -> None:
    huge = " " * (64 * 1024 * 1024 + 16)
    one_line(run_gpucheck("doctor", "--from", "-", stdin=huge), 2, "too large")


def test_two_snapshots_are_refused(snap_file: str) -> None:
    one_line(run_gpucheck("doctor", "--from", snap_file, "--from", snap_file), 2, "one snapshot")


def test_junit_and_json_together_are_refused(snap_file: str) -> None:
    result = run_gpucheck("doctor", "--from", snap_file, "--format", "junit", "--json")
    one_line(result, 2, "two formats")


def test_a_snapshot_with_a_utf8_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + dumps(builders.h100_node(1)).encode())
    assert run_gpucheck("doctor", "--from", str(path)).returncode == 0


# -- 6: facts missing from a snapshot are unknown ----------------------------------------------------


def test_a_snapshot_without_nvml_skips_the_nvml_checks(tmp_path: Path) -> None:
    data = builders.h100_node(1).to_dict()
    del data["nvml"]
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(data))
    result = run_gpucheck("doctor", "--from", str(path), "--json")
    found = {f["id"]: f for f in json.loads(result.stdout)["findings"]}
    assert found["driver.nvml"]["status"] == "skip"
    assert "no nvml facts" in found["driver.nvml"]["title"]
    assert "reboot" not in json.dumps(found["driver.nvml"]).lower()


def test_a_bare_version_is_not_ready_and_claims_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bare.json"
    path.write_text('{"schema_version": "1.1"}')
    result = run_gpucheck("doctor", "--from", str(path))
    assert result.returncode == 1
    assert "not readable" not in result.stdout and "Not ready: every check skipped" in result.stdout


# -- 7: bad compat data is exit 2, whatever the machine ----------------------------------------------


def test_an_invalid_extra_gpus_file_is_refused_by_the_doctor_too(
    tmp_path: Path, snap_file: str
) -> None:
    extra = tmp_path / "compat"
    extra.mkdir()
    (extra / "gpus.toml").write_text('[[gpu]]\nname = "X"\ncompute_capability = "abc"\n')
    no_gpu = save(tmp_path, builders.no_gpu_machine(), "no-gpu.json")
    one_line(run_gpucheck("doctor", "--from", no_gpu, "--compat-dir", str(extra)), 2, "gpus.toml")


def test_a_deeply_nested_compat_file_is_exit_2(tmp_path: Path, snap_file: str) -> None:
    extra = tmp_path / "compat"
    extra.mkdir()
    (extra / "torch.toml").write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    result = run_gpucheck("doctor", "--from", snap_file, "--compat-dir", str(extra))
    one_line(result, 2, "nested too deeply")


# -- 8: exit codes with pipes -----------------------------------------------------------------------


@pytest.mark.parametrize("args", [("checks",), ("compat", "torch", "2.5.1"), ("schema",)])
def test_a_reader_that_stops_early_does_not_change_the_exit_code(args: tuple[str, ...]) -> None:
    for _ in range(4):  # the failure was intermittent: a race with the interpreter's exit
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpucheck", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0, err
        assert err == ""


# -- 9: compat output ------------------------------------------------------------------------------


def test_compat_json_before_the_subcommand_is_json() -> None:
    data = json.loads(run_gpucheck("compat", "--json", "cudnn", "9.1.0").stdout)
    assert data["compute_capabilities"] is None  # the stored matrix cells are unreadable
    assert data["min_driver_linux"] == {"12": "525.60.13", "11": "450.80.02"}


def test_compat_unknown_prints_unknown_not_none() -> None:
    out = run_gpucheck("compat", "torch", "2.15.0").stdout
    assert "cuda_variants: unknown" in out
    assert "architectures: 13.2 sm 7.5, 8.0, 8.6, 9.0, 10.0, 12.0" in out


def test_cudnn_897_is_answered_from_its_lines_row_and_says_so() -> None:
    data = json.loads(run_gpucheck("compat", "cudnn", "8.9.7", "--json").stdout)
    assert data["answered_by"] == "8.9.6"
    assert data["min_driver_linux"] == {"12": "525.60.13", "11": "450.80.02"}


# -- 10: Ctrl-C ------------------------------------------------------------------------------------


@pytest.mark.parametrize("delay", [0, 0.01, 0.03, 0.1, 1.0])
def test_ctrl_c_anywhere_is_130_with_one_line(delay: float) -> None:
    """`--from -` waits on stdin, so the signal lands during main()'s imports (short delays
    after main() has started) or while the command is running (long ones): always the same
    ending. (Counted from main()'s start, not from the process's: a fixed sleep landed the
    signal in the interpreter's own start on a busy machine, which gpucheck cannot reach.)"""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "doctor", "--from", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wait_until_main_runs(proc)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.decode().strip().splitlines()[-1] == "gpucheck: interrupted"
    assert b"Traceback" not in err


# -- 12 and 13: text for pipes, files and terminals ---------------------------------------------------


def test_text_to_a_pipe_keeps_long_paths_on_one_line(tmp_path: Path) -> None:
    snap = builders.h100_node(1)
    long = "/opt/" + "very-long-folder-name/" * 6 + "lib/libcudart.so.13"
    snap.cuda.runtimes = [builders.library("cudart", long, "13.0", "ld_library_path")]
    result = run_gpucheck("doctor", "--from", save(tmp_path, snap), "-v")
    assert any(long in line for line in result.stdout.splitlines()), result.stdout


def test_force_color_does_not_colour_a_file(tmp_path: Path, snap_file: str) -> None:
    out = tmp_path / "report.txt"
    result = run_gpucheck("doctor", "--from", snap_file, "-o", str(out), env={"FORCE_COLOR": "1"})
    assert result.returncode == 0
    assert "\x1b[" not in out.read_text() and "Ready" in out.read_text()


def test_control_characters_from_a_snapshot_never_reach_the_terminal(tmp_path: Path) -> None:
    snap = builders.h100_node(1)
    snap.system.hostname = "node\x1b]0;pwned\x07"
    snap.nvml.gpus[0].name = "GPU\x1b[2J"
    snap.nvml.gpus[0].ecc_uncorrected_volatile = 1  # so that the name shows in evidence
    path = save(tmp_path, snap)
    text = run_gpucheck("doctor", "--from", path, "-v").stdout
    assert "\x1b" not in text and "\x07" not in text
    assert "node\\x1b]0;pwned\\x07" in text and "GPU\\x1b[2J" in text
    junit = run_gpucheck("doctor", "--from", path, "--format", "junit").stdout
    suite = ET.fromstring(junit).find("testsuite")  # well-formed XML
    assert suite is not None and suite.get("hostname") == "node\\x1b]0;pwned\\x07"


def test_junit_marks_warnings(tmp_path: Path) -> None:
    snap = builders.h100_node(1)
    snap.system.env["CUDA_LAUNCH_BLOCKING"] = "1"
    junit = run_gpucheck("doctor", "--from", save(tmp_path, snap), "--format", "junit").stdout
    case = next(
        c
        for c in ET.fromstring(junit).iter("testcase")
        if c.get("name") == "system.cuda-launch-blocking"
    )
    prop = case.find("properties/property")
    assert prop is not None and prop.get("value") == "warn"
    out = case.find("system-out")
    assert out is not None and (out.text or "").startswith("WARNING: ")
