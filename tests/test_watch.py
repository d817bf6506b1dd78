"""`gpucheck watch` on simulated machines: nvidia-smi's field names and CSV shape, JSON lines,
a log appended with its header once, values changing per sample (the scenario timeline), a
GPU lost mid-watch, a hung NVML call, Ctrl-C leaving a complete file, the summary's verdicts,
and one-line errors when there is no driver or no GPU."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, Simulate, run_gpucheck
from sim.scenario import GIB, Machine, Process, Scenario, Step, crash, h100, replace, sleep
from terminal import on_a_terminal

FIXTURES = Path(__file__).parent / "fixtures"
HEADER = (
    "timestamp, index, uuid, name, utilization.gpu [%], utilization.memory [%], "
    "memory.used [MiB], memory.total [MiB], temperature.gpu, power.draw [W], power.limit [W], "
    "clocks.current.sm [MHz], clocks.current.memory [MHz], clocks_event_reasons.active, "
    "pcie.link.gen.current, pcie.link.width.current, fan.speed [%], pstate, "
    "ecc.errors.uncorrected.volatile.total"
)
# An idle H100 as the preset has it (values from the real capture in shared/nvsmi): memory.used
# 0 MiB as nvidia-smi counts it, the 479 MiB the driver reserves left out.
IDLE_H100_0 = (
    "0, GPU-00000000-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3, 0, 0, 0, 81559, 41, "
    "69.62, 700.00, 1980, 2619, 0x0000000000000001, 5, 16, [N/A], P0, 0"
)


def watch(machine: Machine, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_gpucheck("watch", *args, env=machine.env, timeout=timeout)


def rows_of(text: str) -> list[str]:
    """CSV rows without their timestamps."""
    return [line.split(", ", 1)[1] for line in text.splitlines()[1:]]


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
    assert "Summary: 4 sample(s)" in result.stderr
    assert "! did not answer in 2 sample(s) (GpuIsLost)" in result.stderr
    assert "! throttled in 50% of samples (hw_thermal_slowdown 50%)" in result.stderr


def test_duration_ends_the_watch(simulate: Simulate) -> None:
    start = time.monotonic()
    result = watch(simulate(Scenario(gpus=[h100(0)])), "-i", "0.1", "--duration", "0.5s")
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


def test_no_driver_is_one_line_and_exit_1_and_no_file(simulate: Simulate, tmp_path: Path) -> None:
    log = tmp_path / "gpu.csv"
    unloaded = simulate(Scenario(gpus=[h100(0)], module_loaded=False))
    result = watch(unloaded, "-c", "1", "-o", str(log))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "gpucheck: watch: the NVIDIA driver is not loaded (no nvidia kernel module); run "
        "`gpucheck doctor` for the fix\n"
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


def _children_on(machine: Machine) -> list[int]:
    """Live processes started with this machine's scenario (the sampling child)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            continue
        if str(machine.scenario_file).encode() in environ and b") Z" not in stat:
            found.append(int(pid))
    return found


def test_ctrl_c_ends_cleanly_with_the_file_complete(simulate: Simulate, tmp_path: Path) -> None:
    machine = simulate(Scenario(gpus=[h100(i) for i in range(4)]))
    log = tmp_path / "gpu.csv"
    env = {**os.environ, **machine.env}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "watch", "-i", "0.05", "-o", str(log), "--summary"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
            not log.exists() or log.read_text().count("\n") < 1 + 4 * 5
        ):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert err == ""
    assert out.startswith("Summary: ")  # the samples went to the file, the summary here
    text = log.read_text()
    assert text.endswith("\n")
    lines = text.splitlines()
    assert lines[0] == HEADER
    assert len(lines) >= 1 + 4 * 5 and (len(lines) - 1) % 4 == 0  # whole samples only
    assert all(line.count(", ") == HEADER.count(", ") for line in lines)
    assert _children_on(machine) == []


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
    assert _children_on(machine) == []


def test_live_view_only_on_a_terminal(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[h100(0), replace(h100(1), utilization=100)]))
    env = {**os.environ, **machine.env, "COLUMNS": "120", "TERM": "xterm"}
    code, text = on_a_terminal(["watch", "-i", "0.05", "-c", "3"], env)
    assert code == 0, text
    assert "gpucheck watch · 3 sample(s)" in text
    assert "███" in text  # GPU 1's utilisation sparkline at 100%
    assert "timestamp, index" not in text  # no CSV on a terminal


# --- the summary -------------------------------------------------------------------------------


def starved_scenario() -> Scenario:
    """GPU 0 holds 30 GiB for a training job that computes one sample in two, idle the other:
    a job waiting on its input."""
    job = Process(4242, "python3", 30 * GIB)
    base = h100(0)
    holding = replace(base, memory_used=base.memory_used + 30 * GIB, processes=[job])
    busy = replace(holding, utilization=96, clock_event_reasons=0)
    idle = replace(holding, utilization=0)
    return Scenario(
        gpus=[holding, h100(1)],
        timeline=[Step(n, 0, busy if n % 2 == 0 else idle) for n in range(8)],
    )


STARVED = (
    "  ! idle in 50% of samples while a process held its memory, and busy in 50%: the job waits "
    "for its input. The usual remedies: more data-loader workers (PyTorch "
    "`DataLoader(num_workers=...)`, tf.data `num_parallel_calls`), pinned memory "
    "(`pin_memory=True`), prefetching (`prefetch_factor`, `dataset.prefetch(tf.data.AUTOTUNE)`), "
    "and data on local fast storage"
)


def test_summary_says_when_a_job_starves_and_from_a_log_too(
    simulate: Simulate, tmp_path: Path
) -> None:
    machine = simulate(starved_scenario())
    log = tmp_path / "train.jsonl"
    result = watch(machine, "-i", "0.05", "-c", "8", "-o", str(log), "--summary")
    assert result.returncode == 0, result.stderr
    assert STARVED in result.stdout.splitlines()
    assert (
        "  memory.used                            min 30720  mean 30720.0  max 30720 MiB"
        in result.stdout
    )
    gpu1 = result.stdout.split("GPU 1")[1]
    assert "no throttling, no idle time with memory held" in gpu1
    again = run_gpucheck("watch", "--from", str(log), "--summary")
    assert again.returncode == 0, again.stderr
    assert STARVED in again.stdout.splitlines()


def test_summary_of_nvidia_smis_own_csv() -> None:
    """A real `nvidia-smi --query-gpu=... --format=csv` log (units in the values), an idle and a
    loaded sample of an H100 (shared/nvsmi)."""
    result = run_gpucheck("watch", "--from", str(FIXTURES / "nvsmi-h100-query-gpu.csv"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Summary: 2 sample(s) over 15 s"
    assert lines[1] == "GPU 0  NVIDIA H100 80GB HBM3"
    assert "  utilization.gpu                        min 0  mean 50.0  max 100 %" in lines
    assert "  power.draw                             min 69.85  mean 350.9  max 631.95 W" in lines
    assert "  clocks.current.sm                      min 345  mean 1162.5  max 1980 MHz" in lines


def test_from_a_log_that_is_not_one_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.csv"
    bad.write_text("name, value\nx, 1\n")
    result = run_gpucheck("watch", "--from", str(bad))
    assert result.returncode == 2
    assert result.stderr == (
        f"gpucheck: --from: {bad}: not a GPU log: no index column (write it with "
        "--query-gpu=index,...)\n"
    )


def test_a_full_disk_is_one_line_and_exit_4(simulate: Simulate) -> None:
    result = watch(simulate(Scenario(gpus=[h100(0)])), "-i", "0.1", "-c", "2", "-o", "/dev/full")
    assert result.returncode == 4
    assert result.stderr == "gpucheck: cannot write samples to /dev/full: No space left on device\n"


def test_gpu_selection_by_index_and_uuid(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[h100(i) for i in range(4)]))
    result = watch(machine, "-i", "0.1", "-c", "2", "--gpu", "1,GPU-00000003", "--fields", "uuid")
    assert result.returncode == 0, result.stderr
    assert (
        rows_of(result.stdout)
        == [
            "1, GPU-00000001-0000-0000-0000-000000000000",
            "3, GPU-00000003-0000-0000-0000-000000000000",
        ]
        * 2
    )
    wrong = watch(machine, "-c", "1", "--gpu", "9")
    assert wrong.returncode == 2
    assert wrong.stderr == (
        "gpucheck: --gpu 9: no such GPU (the driver sees 4: indices 0-3, or a UUID prefix)\n"
    )


# --- hostile names, NaN, rotation generations (issue #21) ------------------------------------


def test_a_name_with_a_comma_and_quotes_is_quoted_and_read_back(
    simulate: Simulate, tmp_path: Path
) -> None:
    """RFC 4180: a value holding the separator or a quote is quoted, its quotes doubled; the
    log reads back with the csv module (and `watch --from`)."""
    odd = replace(h100(0), name='NVIDIA H100 80GB, HBM3 "SXM5"')
    log = tmp_path / "gpu.csv"
    result = watch(
        simulate(Scenario(gpus=[odd])),
        "-i",
        "0.05",
        "-c",
        "2",
        "-o",
        str(log),
        "--fields",
        "name,utilization.gpu",
    )
    assert result.returncode == 0, result.stderr
    assert rows_of(log.read_text()) == ['0, "NVIDIA H100 80GB, HBM3 ""SXM5""", 0'] * 2
    again = run_gpucheck("watch", "--from", str(log))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[:2] == [
        "Summary: 2 sample(s) over 0 s",
        'GPU 0  NVIDIA H100 80GB, HBM3 "SXM5"',
    ]
    assert "  utilization.gpu                        min 0  mean 0.0  max 0 %" in again.stdout


def test_control_characters_in_a_name_are_escaped_in_the_log_and_the_summary(
    simulate: Simulate, tmp_path: Path
) -> None:
    hostile = replace(h100(0), name="NVIDIA\x1b]0;owned\x07 H100\x1b[2J")
    log = tmp_path / "gpu.csv"
    result = watch(
        simulate(Scenario(gpus=[hostile])),
        "-i",
        "0.05",
        "-c",
        "1",
        "-o",
        str(log),
        "--fields",
        "name",
        "--summary",
    )
    assert result.returncode == 0, result.stderr
    assert rows_of(log.read_text()) == ["0, NVIDIA\\x1b]0;owned\\x07 H100\\x1b[2J"]
    assert "GPU 0  NVIDIA\\x1b]0;owned\\x07 H100\\x1b[2J" in result.stdout.splitlines()
    raw = tmp_path / "raw.csv"  # a log written by another tool, raw escapes in it
    raw.write_text("timestamp, index, name\n2026/01/01 00:00:00.000, 0, A\x1b[2JB\x9b\n")
    again = run_gpucheck("watch", "--from", str(raw))
    assert again.returncode == 0, again.stderr
    assert "\x1b" not in again.stdout and "\x9b" not in again.stdout
    assert "GPU 0  A\\x1b[2JB\\x9b" in again.stdout.splitlines()


@pytest.mark.parametrize("option", ["--interval", "--timeout"])
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf"])
def test_nan_and_infinite_seconds_are_usage_errors(option: str, value: str) -> None:
    result = run_gpucheck("watch", option, value, "-c", "1")
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("gpucheck: ") and option in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_rotation_keeps_n_generations_newest_first(simulate: Simulate, tmp_path: Path) -> None:
    """Like logrotate: FILE.1 is the newest full log, FILE.N the oldest; older ones go."""
    machine = simulate(Scenario(gpus=[h100(i) for i in range(8)]))
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "gpu.csv"
    result = watch(
        machine, "-i", "0.05", "-c", "40", "-o", str(log), "--rotate", "4K", "--keep", "3"
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in logs.iterdir()) == [
        "gpu.csv",
        "gpu.csv.1",
        "gpu.csv.2",
        "gpu.csv.3",
    ]
    stamps = []
    for path in (log, *(logs / f"gpu.csv.{n}" for n in (1, 2, 3))):
        text = path.read_text()
        assert text.splitlines()[0] == HEADER
        assert len(text.encode()) <= 4096
        stamps.append([line.split(", ")[0] for line in text.splitlines()[1:]])
    # Every row of FILE.1 is newer than every row of FILE.2, and so on.
    for newer, older in itertools.pairwise(stamps):
        assert min(newer) >= max(older)


def test_rotation_keeps_five_generations_by_default(simulate: Simulate, tmp_path: Path) -> None:
    machine = simulate(Scenario(gpus=[h100(i) for i in range(8)]))
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "gpu.csv"
    result = watch(machine, "-i", "0.05", "-c", "60", "-o", str(log), "--rotate", "4K")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in logs.iterdir()) == ["gpu.csv"] + [
        f"gpu.csv.{n}" for n in range(1, 6)
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--keep", "3"], "gpucheck: --keep goes with --rotate SIZE"),
        (["-o", "x.csv", "--rotate", "4K", "--keep", "0"], "gpucheck: Invalid value for '--keep'"),
    ],
)
def test_keep_without_rotation_is_a_usage_error(args: list[str], message: str) -> None:
    result = run_gpucheck("watch", *args)
    assert result.returncode == 2
    assert result.stderr.startswith(message), result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_the_childs_escaping_is_report_texts() -> None:
    """The sampling child cannot import gpucheck: its copy of printable() must escape exactly
    what the report's does, for every code point."""
    from gpucheck.probes.scripts.watch_shared import printable as child_printable
    from gpucheck.report.text import printable

    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert child_printable(every) == printable(every)
    assert child_printable("a\x1b[2J\x9b\u202eb") == "a\\x1b[2J\\x9b\\u202eb"


def _generated_log(path: Path, size: int) -> int:
    """A CSV log of 8 GPUs of at least `size` bytes, one sample a second; its samples."""
    row = (
        "2026/11/01 00:{m:02d}:{s:02d}.000, {g}, GPU-{g:08d}, NVIDIA H100 80GB HBM3, {u}, 0, "
        "30720, 81559, 50, 650.25, 700.00, 1980, 2619, 0x0000000000000000, 5, 16, [N/A], P0, 0\n"
    )
    samples = 0
    with path.open("w") as fh:
        fh.write(HEADER + "\n")
        written = 0
        while written < size:
            minute, second = divmod(samples % 3600, 60)
            block = "".join(
                row.format(m=minute, s=second, g=g, u=96 if samples % 2 else 0) for g in range(8)
            )
            fh.write(block)
            written += len(block)
            samples += 1
    return samples


# Runs argv[1:] and writes its peak resident bytes on stderr. Linux keeps a process's peak
# across exec, so a command started straight from pytest would count pytest's own memory: it is
# started from this small process instead.
PEAK_OF = """
import os, sys
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
sys.stdout.flush()
sys.stderr.write(str(usage.ru_maxrss * 1024) + "\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.slow
def test_from_streams_a_large_log_in_bounded_memory(tmp_path: Path) -> None:
    """The whole log in memory made a 100 MiB CSV peak at 1.36 GiB (issue #21): a 40 MiB log
    stays near the interpreter's own size (gpucheck --help peaks at ~16 MiB)."""
    log = tmp_path / "big.csv"
    samples = _generated_log(log, 40 << 20)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            PEAK_OF,
            sys.executable,
            "-m",
            "gpucheck",
            "watch",
            "--from",
            str(log),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    text, peak = proc.stdout, int(proc.stderr.splitlines()[-1])
    assert proc.returncode == 0, text
    assert text.startswith(f"Summary: {samples} sample(s)")
    assert "  utilization.gpu                        min 0  mean 48.0  max 96 %" in text
    assert peak < 100 << 20, peak


def test_a_line_too_long_to_be_a_log_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "one-line.csv"
    log.write_text("timestamp, index, name\n" + "x" * (3 << 20) + "\n")
    result = run_gpucheck("watch", "--from", str(log))
    assert result.returncode == 2
    assert result.stderr == (
        f"gpucheck: --from: {log}: line 2 is over 1048576 characters: not a GPU log\n"
    )


def test_a_log_cut_short_reads_up_to_the_cut_and_a_bad_row_inside_is_an_error(
    tmp_path: Path,
) -> None:
    head = "timestamp, index, utilization.gpu [%]\n"
    rows = "2026/11/01 00:00:00.000, 0, 10\n2026/11/01 00:00:01.000, 0, 30\n"
    cut = tmp_path / "cut.csv"
    cut.write_text(head + rows + "2026/11/01 00:00:02.000, 0")
    result = run_gpucheck("watch", "--from", str(cut))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "Summary: 2 sample(s) over 1 s"
    assert "  utilization.gpu                        min 10  mean 20.0  max 30 %" in result.stdout
    broken = tmp_path / "broken.csv"
    broken.write_text(head + "2026/11/01 00:00:02.000, 0\n" + rows)
    result = run_gpucheck("watch", "--from", str(broken))
    assert result.returncode == 2
    assert result.stderr == f"gpucheck: --from: {broken}: line 2 has 2 values for 3 columns\n"


def test_from_standard_input(tmp_path: Path) -> None:
    text = 'timestamp, index, name\n2026/11/01 00:00:00.000, 0, "A, B"\n'
    result = subprocess.run(
        [sys.executable, "-m", "gpucheck", "watch", "--from", "-"],
        input=text,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["Summary: 1 sample(s) over 0 s", "GPU 0  A, B"]


def test_only_the_calls_the_fields_need_and_the_name_read_once(simulate: Simulate) -> None:
    """A temperature call would hang 30 s: asking for power only never makes it. The name is
    read once: the timeline renames the GPU from its second name call on, which never comes."""
    g0 = h100(0)
    scenario = Scenario(
        gpus=[g0],
        faults=[sleep("nvmlDeviceGetTemperature", 30, gpu=0)],
        timeline=[Step(1, 0, replace(g0, name="Renamed", power_draw_mw=100_000))],
    )
    start = time.monotonic()
    result = watch(
        simulate(scenario), "-i", "0.05", "-c", "3", "--fields", "name,power.draw", "--timeout", "1"
    )
    assert result.returncode == 0, result.stderr
    assert rows_of(result.stdout) == [
        "0, NVIDIA H100 80GB HBM3, 69.62",
        "0, NVIDIA H100 80GB HBM3, 100.00",
        "0, NVIDIA H100 80GB HBM3, 100.00",
    ]
    assert time.monotonic() - start < 20


def test_a_crashed_child_costs_a_sample_and_says_where(simulate: Simulate) -> None:
    scenario = Scenario(gpus=[h100(0)], faults=[crash("nvmlDeviceGetPowerUsage", gpu=0)])
    result = watch(simulate(scenario), "-i", "0.05", "-c", "2", "--fields", "power.draw")
    assert result.returncode == 0, result.stderr
    assert rows_of(result.stdout) == ["0, [Crashed in nvmlDeviceGetPowerUsage gpu=0]"] * 2


def test_ctrl_c_while_the_child_writes_the_log_leaves_whole_rows(
    simulate: Simulate, tmp_path: Path
) -> None:
    """Without --summary the child writes the log itself: Ctrl-C ends it between two rows."""
    machine = simulate(Scenario(gpus=[h100(i) for i in range(8)]))
    log = tmp_path / "gpu.csv"
    env = {**os.environ, **machine.env}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "watch", "-i", "0.05", "-o", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
            not log.exists() or log.read_text().count("\n") < 1 + 8 * 5
        ):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out, err) == (0, "", "")
    text = log.read_text()
    lines = text.splitlines()
    assert text.endswith("\n") and lines[0] == HEADER
    assert len(lines) >= 1 + 8 * 5 and (len(lines) - 1) % 8 == 0  # whole samples only
    assert all(line.count(", ") == HEADER.count(", ") for line in lines)
    assert _children_on(machine) == []


def test_a_reader_that_goes_away_ends_the_watch_quietly(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[h100(0)]))
    env = {**os.environ, **machine.env}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "watch", "-i", "0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().decode() == HEADER + "\n"
    assert proc.stdout.readline().count(b", ") == HEADER.count(", ")
    proc.stdout.close()
    try:
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr.read() == b""
    assert _children_on(machine) == []
