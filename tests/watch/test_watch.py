"""`gpucheck watch` on simulated machines: nvidia-smi's field names and CSV shape, JSON lines,
a log appended with its header once, values changing per sample (the scenario timeline), a
GPU lost mid-watch, a hung NVML call, Ctrl-C leaving a complete file, the summary's verdicts,
and one-line errors when there is no driver or no GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, Simulate, run_gpucheck
from sim.scenario import Scenario, Step, error, h100, replace, sleep
from support.terminal import on_a_terminal
from support.watch_run import HEADER, IDLE_H100_0, children_on, interrupt_after, rows_of, watch


def test_csv_uses_nvidia_smi_names_and_shape(simulate: Simulate) -> None:
    result = watch(simulate(Scenario(gpus=[h100(0), h100(1)])), "-i", "0.1", "-c", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == HEADER
    assert len(lines) == 1 + 2 * 2
    assert rows_of(result.stdout)[0] == IDLE_H100_0
    assert rows_of(result.stdout)[1].startswith("1, GPU-00000001-")
    stamp = lines[1].split(", ")[0]
    assert time.strptime(stamp[:19], "%Y/%m/%d %H:%M:%S") and len(stamp) == 23
    assert result.stderr == ""


def test_values_follow_the_timeline_and_a_lost_gpu_does_not_stop_the_watch(
    simulate: Simulate,
) -> None:
    """The timeline counts each function's calls per GPU within one process: values that
    change from sample to sample also prove one NVML session for the whole watch (a process
    per sample would see the first step every time)."""
    g0, g1 = h100(0), h100(1)
    busy = replace(g1, utilization=97, clock_event_reasons=0x40, temperature=88)
    scenario = Scenario(
        gpus=[g0, g1],
        timeline=[Step(1, 1, busy), Step(2, 1, replace(busy, lost=True))],
    )
    result = watch(
        simulate(scenario),
        "-i",
        "0.1",
        "-c",
        "4",
        "--fields",
        "utilization.gpu,clocks_throttle_reasons.active,temperature.gpu",
        "--summary",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        lines[0]
        == "timestamp, index, utilization.gpu [%], clocks_event_reasons.active, temperature.gpu"
    )
    assert rows_of(result.stdout) == [
        "0, 0, 0x0000000000000001, 41",
        "1, 0, 0x0000000000000001, 41",
        "0, 0, 0x0000000000000001, 41",
        "1, 97, 0x0000000000000040, 88",
        "0, 0, 0x0000000000000001, 41",
        "1, [GPU is lost], [GPU is lost], [GPU is lost]",
        "0, 0, 0x0000000000000001, 41",
        "1, [GPU is lost], [GPU is lost], [GPU is lost]",
    ]
    # The summary goes to stderr while the samples go to stdout.
    assert "Summary: 4 samples" in result.stderr
    assert "! did not answer in 2 samples (GpuIsLost)" in result.stderr
    assert "! throttled in 50% of samples (hw_thermal_slowdown 50%)" in result.stderr


def test_duration_ends_the_watch(simulate: Simulate) -> None:
    start = time.monotonic()
    result = watch(simulate(Scenario(gpus=[h100(0)])), "-i", "0.1", "--duration", "0.5s")
    assert result.returncode == 0, result.stderr
    assert 3 <= len(rows_of(result.stdout)) <= 8
    assert time.monotonic() - start < 20


def test_duration_in_scientific_notation_is_a_number_of_seconds(simulate: Simulate) -> None:
    # `-d 1e3` is 1000 s, as every other number option reads it (`--interval 1e-1`).
    machine = simulate(Scenario(gpus=[h100(0)]))
    result = watch(machine, "-i", "1e-1", "-d", "1e3", "-c", "2")
    assert (result.returncode, result.stderr) == (0, "")
    assert len(rows_of(result.stdout)) == 2
    start = time.monotonic()
    result = watch(machine, "-i", "0.1", "--duration", "5E-1s")
    assert result.returncode == 0, result.stderr
    assert 3 <= len(rows_of(result.stdout)) <= 8
    assert time.monotonic() - start < 20


def test_jsonl_rows_are_typed_and_name_errors(simulate: Simulate) -> None:
    g1 = h100(1)
    scenario = Scenario(gpus=[h100(0), g1], timeline=[Step(1, 1, replace(g1, lost=True))])
    result = watch(
        simulate(scenario),
        "-i",
        "0.1",
        "-c",
        "2",
        "--format",
        "jsonl",
        "--fields",
        "uuid,memory.used,power.draw,fan.speed,pstate",
    )
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 4
    first = rows[0]
    assert set(first) == {
        "timestamp",
        "index",
        "uuid",
        "memory.used",
        "power.draw",
        "fan.speed",
        "pstate",
        "errors",
    }
    assert (first["index"], first["memory.used"], first["power.draw"], first["pstate"]) == (
        0,
        0,
        69.62,
        "P0",
    )
    assert first["fan.speed"] is None and first["errors"] == {"fan.speed": "NotSupported"}
    lost = rows[3]
    assert lost["index"] == 1 and lost["uuid"] == "GPU-00000001-0000-0000-0000-000000000000"
    assert lost["errors"] == {
        "memory.used": "GpuIsLost",
        "power.draw": "GpuIsLost",
        "fan.speed": "GpuIsLost",
        "pstate": "GpuIsLost",
    }
    assert first["timestamp"][10] == "T" and first["timestamp"][-6] in "+-"


def test_a_gpu_lost_before_the_watch_names_nvmls_error(simulate: Simulate) -> None:
    """A GPU whose handle NVML refused at the start (GpuIsLost) read "GpuNotFound" in every
    field of every row: the name was made up, not NVML's."""
    scenario = Scenario(
        gpus=[h100(0), h100(1)],
        faults=[error("nvmlDeviceGetHandleByIndex", 15, 1)],  # NVML_ERROR_GPU_IS_LOST
    )
    machine = simulate(scenario)
    args = ("-i", "0.1", "-c", "1", "--fields", "uuid,memory.used")
    result = watch(machine, *args, "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    lost = [json.loads(line) for line in result.stdout.splitlines()][1]
    assert (lost["index"], lost["uuid"], lost["memory.used"]) == (1, None, None)
    assert lost["errors"] == {"uuid": "GpuIsLost", "memory.used": "GpuIsLost"}
    assert rows_of(watch(machine, *args).stdout)[1] == "1, [GPU is lost], [GPU is lost]"


def test_a_log_file_is_appended_with_its_header_once(simulate: Simulate, tmp_path: Path) -> None:
    machine = simulate(Scenario(gpus=[h100(0)]))
    log = tmp_path / "gpu.csv"
    for _ in range(2):
        result = watch(machine, "-i", "0.1", "-c", "2", "-o", str(log))
        assert result.returncode == 0, result.stderr
        assert result.stdout == ""  # not a terminal, the samples went to the file
    lines = log.read_text().splitlines()
    assert lines[0] == HEADER
    assert lines.count(HEADER) == 1
    assert rows_of(log.read_text()) == [IDLE_H100_0] * 4


def test_appending_other_columns_is_refused_and_the_file_kept(
    simulate: Simulate, tmp_path: Path
) -> None:
    machine = simulate(Scenario(gpus=[h100(0)]))
    log = tmp_path / "gpu.csv"
    assert watch(machine, "-i", "0.1", "-c", "1", "-o", str(log)).returncode == 0
    before = log.read_bytes()
    result = watch(machine, "-c", "1", "-o", str(log), "--fields", "utilization.gpu")
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"gpucheck: --output: {log} holds other columns (timestamp, index, uuid"
    )
    assert len(result.stderr.splitlines()) == 1
    assert log.read_bytes() == before


def test_rotation_moves_a_full_log_aside(simulate: Simulate, tmp_path: Path) -> None:
    machine = simulate(Scenario(gpus=[h100(i) for i in range(8)]))
    log = tmp_path / "gpu.csv"
    result = watch(machine, "-i", "0.05", "-c", "12", "-o", str(log), "--rotate", "4K")
    assert result.returncode == 0, result.stderr
    old = tmp_path / "gpu.csv.1"
    assert old.exists()
    for path in (log, old):
        text = path.read_text()
        assert text.splitlines()[0] == HEADER
        assert len(text.encode()) <= 4096
    rows = len(rows_of(log.read_text())) + len(rows_of(old.read_text()))
    assert 8 <= rows <= 12 * 8 and rows % 8 == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--fields", "utilisation.gpu"],
            "gpucheck: --fields: 'utilisation.gpu' is not a field gpucheck watch samples (did "
            "you mean utilization.gpu?); it samples timestamp, index, uuid, name,",
        ),
        (["--format", "xml"], "gpucheck: --format xml: use csv or jsonl"),
        (
            ["--duration", "soon"],
            "gpucheck: --duration soon: use seconds, or a number with s, m or h (5m)",
        ),
        (["-d", "nan"], "gpucheck: --duration nan: use seconds, or a number with s, m or h (5m)"),
        (["-d", "inf"], "gpucheck: --duration inf: use seconds, or a number with s, m or h (5m)"),
        (["-d", "1e"], "gpucheck: --duration 1e: use seconds, or a number with s, m or h (5m)"),
        (
            ["-d", "1e400"],
            "gpucheck: --duration 1e400: too long (leave it out to watch until stopped)",
        ),
        (["-d", "0e5"], "gpucheck: --duration 0e5: must be more than 0"),
        (["--rotate", "10M"], "gpucheck: --rotate goes with --output FILE"),
        (
            ["--from", "x.csv", "--count", "3"],
            "gpucheck: --from reads a saved log: --count do not apply",
        ),
        (["--interval", "0"], "gpucheck: Invalid value for '--interval'"),
    ],
)
def test_bad_options_are_one_line_usage_errors(args: list[str], message: str) -> None:
    result = run_gpucheck("watch", *args)
    assert result.returncode == 2
    assert result.stderr.startswith(message)
    assert len(result.stderr.splitlines()) == 1


def test_no_driver_is_one_line_and_exit_5_and_no_file(simulate: Simulate, tmp_path: Path) -> None:
    # A GPU on the PCI bus and no driver loaded: its state could not be read (5), not "no GPU".
    log = tmp_path / "gpu.csv"
    unloaded = simulate(Scenario(gpus=[h100(0)], module_loaded=False))
    result = watch(unloaded, "-c", "1", "-o", str(log))
    assert (result.returncode, result.stdout) == (5, "")
    assert result.stderr == (
        "gpucheck: watch: the NVIDIA driver is not loaded (1 NVIDIA GPU on the PCI bus, no "
        "nvidia kernel module): nothing to sample; run `gpucheck doctor` for the fix\n"
    )
    assert not log.exists()
    no_library = run_gpucheck(
        "watch", "-c", "1", env={"LD_LIBRARY_PATH": str(tmp_path), "GPUCHECK_ROOT": str(tmp_path)}
    )
    assert no_library.returncode == 1
    assert no_library.stderr == (
        "gpucheck: watch: no NVIDIA driver: libnvidia-ml.so.1 cannot be loaded; run "
        "`gpucheck doctor` for the fix\n"
    )


def test_no_gpu_and_no_driver_is_no_gpu_exit_1(simulate: Simulate) -> None:
    result = watch(simulate(Scenario(gpus=[], module_loaded=False)), "-c", "1")
    assert (result.returncode, result.stderr) == (
        1,
        "gpucheck: watch: this machine has no NVIDIA GPU (none on the PCI bus)\n",
    )


def test_no_gpu_is_one_line_and_exit_1(simulate: Simulate) -> None:
    result = watch(simulate(Scenario(gpus=[])), "-c", "1")
    assert result.returncode == 1
    assert (
        result.stderr
        == "gpucheck: watch: the NVIDIA driver sees no GPU (nvmlDeviceGetCount is 0)\n"
    )


def test_a_hung_call_costs_that_sample_and_the_watch_goes_on(simulate: Simulate) -> None:
    scenario = Scenario(
        gpus=[h100(0), h100(1)], faults=[sleep("nvmlDeviceGetPowerUsage", 30, gpu=1)]
    )
    start = time.monotonic()
    result = watch(
        simulate(scenario), "-i", "0.1", "-c", "2", "--timeout", "0.5", "--fields", "power.draw"
    )
    assert result.returncode == 0, result.stderr
    assert (
        rows_of(result.stdout)
        == [
            "0, [Timeout in nvmlDeviceGetPowerUsage gpu=1]",
            "1, [Timeout in nvmlDeviceGetPowerUsage gpu=1]",
        ]
        * 2
    )
    assert time.monotonic() - start < 20  # bounded: not 30 s per sample


def test_the_main_process_never_imports_pynvml(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[h100(0)]))
    code = (
        "import sys\n"
        "from gpucheck.cli import run\n"
        "run(['watch', '-c', '2', '-i', '0.1'])\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write('pynvml imported\\n' if 'pynvml' in sys.modules else 'clean\\n')\n"
    )
    env = {**os.environ, **machine.env, "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.stderr.splitlines()[-1] == "clean", result.stderr
    assert len(result.stdout.splitlines()) == 3


def test_ctrl_c_ends_cleanly_with_the_file_complete(simulate: Simulate, tmp_path: Path) -> None:
    machine = simulate(Scenario(gpus=[h100(i) for i in range(4)]))
    log = tmp_path / "gpu.csv"
    code, out, err = interrupt_after(machine, log, 4 * 5, "--summary")
    assert code == 0, err
    assert err == ""
    assert out.startswith("Summary: ")  # the samples went to the file, the summary here
    text = log.read_text()
    assert text.endswith("\n")
    lines = text.splitlines()
    assert lines[0] == HEADER
    assert len(lines) >= 1 + 4 * 5 and (len(lines) - 1) % 4 == 0  # whole samples only
    assert all(line.count(", ") == HEADER.count(", ") for line in lines)
    assert children_on(machine) == []


def test_sigterm_ends_cleanly_too(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[h100(0)]))
    env = {**os.environ, **machine.env}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "watch", "-i", "0.05", "--format", "jsonl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and err == ""
    assert all(json.loads(line)["index"] == 0 for line in [first, *out.splitlines()])
    assert children_on(machine) == []


def test_live_view_only_on_a_terminal(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[h100(0), replace(h100(1), utilization=100)]))
    env = {**os.environ, **machine.env, "COLUMNS": "120", "TERM": "xterm"}
    code, text = on_a_terminal(["watch", "-i", "0.05", "-c", "3"], env)
    assert code == 0, text
    assert "gpucheck watch · 3 samples" in text
    assert "███" in text  # GPU 1's utilisation sparkline at 100%
    assert "timestamp, index" not in text  # no CSV on a terminal


# --- the summary -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("5m", 300.0),
        ("2h", 7200.0),
        ("1e3", 1000.0),
        (".5", 0.5),  # as `--interval .5` reads it
        ("1.", 1.0),
        ("+5", 5.0),
        ("1_000", 1000.0),
        ("1.5e1m", 900.0),
        ("5 m", 300.0),
    ],
)
def test_duration_reads_its_number_as_the_number_options_do(text: str, seconds: float) -> None:
    from gpucheck.cli.watch import parse_duration

    assert parse_duration(text) == seconds
