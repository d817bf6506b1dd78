"""`gpucheck watch`: summaries, logs read back (--from), quoting and escaping, rotation, the
child writing the log, and odd input."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, Simulate, run_gpucheck
from sim.scenario import GIB, Process, Scenario, Step, crash, h100, replace, sleep
from support.watch_run import FIXTURES, HEADER, children_on, interrupt_after, rows_of, watch


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
    assert lines[0] == "Summary: 2 samples over 15 s"
    assert lines[1] == "GPU 0  NVIDIA H100 80GB HBM3"
    assert (
        "  (memory.used as nvidia-smi counts it, the driver's reservation left out; "
        "`gpucheck procs` counts it in)"
    ) in lines
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


# What both `procs --gpu` and `watch --gpu` say of a prefix the 3 GPUs share (it said "no such
# GPU", as if none matched).
AMBIGUOUS = (
    "gpucheck: --gpu GPU-0000000: ambiguous: the UUID prefix matches 3 GPUs: "
    "0 (GPU-00000000-0000-0000-0000-000000000000), 1 (GPU-00000001-0000-0000-0000-000000000000), "
    "2 (GPU-00000002-0000-0000-0000-000000000000); give more of the UUID, or the index\n"
)


def test_an_ambiguous_uuid_prefix_lists_its_matches(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[h100(i) for i in range(3)]))
    for argv in (("procs",), ("watch", "-c", "1")):
        result = run_gpucheck(*argv, "--gpu", "GPU-0000000", env=machine.env)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", AMBIGUOUS), argv


# --- hostile names, NaN, rotation generations -------------------------------------------


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
        "Summary: 2 samples over 0 s",
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
    from gpucheck.report.text import printable
    from gpucheck.watch.scripts.watch_shared import printable as child_printable

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
    """The whole log in memory made a 100 MiB CSV peak at 1.36 GiB: a 40 MiB log
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
    assert text.startswith(f"Summary: {samples} samples")
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
    assert result.stdout.splitlines()[0] == "Summary: 2 samples over 1 s"
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
    assert result.stdout.splitlines()[:2] == ["Summary: 1 sample over 0 s", "GPU 0  A, B"]


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
    code, out, err = interrupt_after(machine, log, 8 * 5)
    assert (code, out, err) == (0, "", "")
    text = log.read_text()
    lines = text.splitlines()
    assert text.endswith("\n") and lines[0] == HEADER
    assert len(lines) >= 1 + 8 * 5 and (len(lines) - 1) % 8 == 0  # whole samples only
    assert all(line.count(", ") == HEADER.count(", ") for line in lines)
    assert children_on(machine) == []


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
    assert children_on(machine) == []
