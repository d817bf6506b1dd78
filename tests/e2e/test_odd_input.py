"""Hostile or odd input: refused with one line and exit 2, or answered truthfully; never
judged as if it were true. A PID that is no process, a torch build never published, a
snapshot listing one GPU twice, a safetensors header whose tensors cannot fit its file, a
watch log with values no GPU shows, an empty input, a size written as 1e3GiB."""

from __future__ import annotations

import contextlib
import io
import json
import struct
from pathlib import Path

import msgspec
import pytest
from support import builders

from gpucheck import cli
from gpucheck.inputs import UserError, parse_size
from gpucheck.model.snapshot import dumps


def in_process(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        code = cli.run(argv)
    return code, out.getvalue(), err.getvalue()


# -- procs --kill ----------------------------------------------------------------------------


@pytest.mark.parametrize("pid", ["-5", "-1", "0", "4194305"])
def test_kill_of_a_number_that_is_no_process_id_is_a_usage_error(pid: str) -> None:
    code, out, err = in_process(["procs", "--kill", pid, "--yes"])
    assert (code, out) == (2, "")
    assert err == f"gpucheck: --kill: {pid} is not a process id (give one from 1 to 4194304)\n"


# -- compat torch VERSION+cuXYZ --------------------------------------------------------------


def test_a_torch_build_never_published_is_said_to_be_so() -> None:
    code, out, err = in_process(["compat", "torch", "2.5.1+cu999"])
    assert (code, out) == (2, "")
    assert err == (
        "gpucheck: PyTorch 2.5.1+cu999 is not a published build: 2.5 was published for CUDA "
        "11.8, 12.1, 12.4 (+cu118, +cu121, +cu124)\n"
    )


def test_a_published_torch_build_is_still_known() -> None:
    code, out, _ = in_process(["compat", "--json", "torch", "2.5.1+cu121"])
    assert code == 0
    answer = json.loads(out)
    assert answer["known"] is True and answer["cuda"] == "12.1"


# -- a snapshot listing one GPU twice ---------------------------------------------------------


def _snapshot_file(tmp_path: Path, gpus: list[dict[str, object]]) -> Path:
    data = json.loads(dumps(builders.h100_node(2)))
    data["nvml"]["gpus"] = gpus
    path = tmp_path / "snap.json"
    path.write_bytes(msgspec.json.encode(data))
    return path


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"index": 0}, "nvml.gpus[1].index: 0 is listed twice (also nvml.gpus[0])"),
        (
            {"uuid": "GPU-00000000-0000-0000-0000-000000000000"},
            "nvml.gpus[1].uuid: 'GPU-00000000-0000-0000-0000-000000000000' is listed twice "
            "(also nvml.gpus[0])",
        ),
    ],
)
def test_a_snapshot_listing_one_gpu_twice_is_refused_at_decode(
    tmp_path: Path, change: dict[str, object], expected: str
) -> None:
    gpus = json.loads(dumps(builders.h100_node(2)))["nvml"]["gpus"]
    gpus[1].update(change)
    path = _snapshot_file(tmp_path, gpus)
    code, out, err = in_process(["doctor", "--from", str(path)])
    assert (code, out) == (2, "")
    assert err == f"gpucheck: --from: {path}: invalid snapshot: {expected}: one entry each\n"


def test_two_distinct_gpus_are_read(tmp_path: Path) -> None:
    path = _snapshot_file(tmp_path, json.loads(dumps(builders.h100_node(2)))["nvml"]["gpus"])
    assert in_process(["doctor", "--from", str(path)])[0] == 0


# -- a safetensors header that its file cannot hold -------------------------------------------


def _safetensors(path: Path, header: dict[str, object], data: int) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(data))
    return path


@pytest.mark.parametrize(
    ("header", "data", "why"),
    [
        (  # 10**12 elements claimed, 8 bytes of data in the file
            {"w": {"dtype": "F32", "shape": [1000000, 1000000], "data_offsets": [0, 8]}},
            8,
            "tensor 'w' does not fit its data: its shape needs 4,000,000,000,000 bytes, its "
            "data_offsets hold 8",
        ),
        (  # the offsets agree with the shape, but the file ends before them
            {"w": {"dtype": "F32", "shape": [1000, 1000], "data_offsets": [0, 4000000]}},
            8,
            "tensor 'w' does not fit its data: it ends at byte 4,000,000 of the data, the file "
            "holds 8",
        ),
        (
            {"w": {"dtype": "F32", "shape": [2]}},
            8,
            "tensor 'w' has malformed data_offsets None",
        ),
    ],
)
def test_a_safetensors_header_its_file_cannot_hold_is_refused_naming_the_tensor(
    tmp_path: Path, header: dict[str, object], data: int, why: str
) -> None:
    path = _safetensors(tmp_path / "model.safetensors", header, data)
    code, out, err = in_process(["fit", str(path), "--gpu-memory", "80GiB"])
    assert (code, out) == (2, "")
    assert err == f"gpucheck: {path}: {why}\n"


def test_a_safetensors_file_whose_tensors_fill_its_data_is_counted(tmp_path: Path) -> None:
    header: dict[str, object] = {
        "a": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 12]},
        "b": {"dtype": "F32", "shape": [4], "data_offsets": [12, 28]},
    }
    path = _safetensors(tmp_path / "model.safetensors", header, 28)
    code, out, err = in_process(["fit", str(path), "--gpu-memory", "80GiB", "--json"])
    assert code in (0, 1), err  # (1: weights alone, no config: a lower bound, "may fit")
    assert json.loads(out)["model"]["params"] == 10


# -- watch --from LOG: values that are no reading ----------------------------------------------

LOG = """timestamp, index, power.draw [W], memory.used [MiB]
2026/11/01 00:00:00.000, 0, 100, 1000
2026/11/01 00:00:01.000, 0, abc, 1000
2026/11/01 00:00:02.000, 0, 1e28, -5
2026/11/01 00:00:03.000, 0, 300, 3000
"""


def test_a_log_value_that_is_no_reading_is_reported_with_its_line_and_not_averaged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "train.csv"
    path.write_text(LOG)
    code, out, err = in_process(["watch", "--from", str(path)])
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Summary: 4 samples over 3 s",
        "GPU 0",
        "  memory.used                            min 1000  mean 1666.7  max 3000 MiB",
        "  power.draw                             min 100  mean 200.0  max 300 W",
        "  (memory.used as nvidia-smi counts it, the driver's reservation left out; `gpucheck procs` counts it in)",
        "  no throttling, no idle time with memory held",
        "Skipped 3 values of the log, not in the figures above:",
        "  line 3: power.draw 'abc' is not a number",
        "  line 4: power.draw 1e+28 is beyond what a GPU shows (0 to 1e+06 W)",
        "  line 4: memory.used -5 is beyond what a GPU shows (0 to 1e+09 MiB)",
    ]


def test_a_json_lines_value_that_is_no_number_is_reported(tmp_path: Path) -> None:
    rows = [
        '{"timestamp": "2026-11-01T00:00:00+00:00", "index": 0, "power.draw": 100}',
        '{"timestamp": "2026-11-01T00:00:01+00:00", "index": 0, "power.draw": "x"}',
        '{"timestamp": "2026-11-01T00:00:02+00:00", "index": 0, "power.draw": NaN}',
    ]
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(rows) + "\n")
    code, out, _ = in_process(["watch", "--from", str(path)])
    assert code == 0
    assert "  power.draw                             min 100  mean 100.0  max 100 W" in out
    assert out.endswith(
        "Skipped 2 values of the log, not in the figures above:\n"
        "  line 2: power.draw 'x' is not a number\n"
        "  line 3: power.draw nan is not a number\n"
    )


# -- empty inputs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["doctor", "--from"], "--from"),
        (["fix", "--from"], "--from"),
        (["fix", "--plan"], "--plan"),
        (["dockerfile", "--from", "-"], "PATH"),
    ],
)
@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_an_empty_input_is_said_to_be_empty(
    tmp_path: Path, argv: list[str], option: str, content: str
) -> None:
    path = tmp_path / "input.json"
    path.write_text(content)
    command = [*argv[:1], str(path), *argv[1:]] if option == "PATH" else [*argv, str(path)]
    code, out, err = in_process(command)
    assert (code, out) == (2, "")
    assert err == f"gpucheck: {option}: {path} is empty\n"


def test_empty_standard_input_is_said_to_be_empty() -> None:
    code, _, err = in_process(["doctor", "--from", "-"], stdin="")
    assert (code, err) == (2, "gpucheck: --from: -: standard input is empty\n")


def test_an_empty_model_config_is_said_to_be_empty(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("")
    code, _, err = in_process(["fit", str(path), "--gpu-memory", "80GiB"])
    assert (code, err) == (2, f"gpucheck: {path} is empty\n")


def test_an_empty_report_in_a_fleet_is_said_to_be_empty(tmp_path: Path) -> None:
    (tmp_path / "node1.json").write_text("")
    code, out, _ = in_process(["fleet", str(tmp_path)])
    assert code == 1
    assert f"  {tmp_path / 'node1.json'}: the file is empty" in out.splitlines()


# -- sizes take the number syntax durations take ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1e3GiB", 1000 * 1024**3),
        ("1E3MiB", 1000 * 1024**2),
        (".5G", 512 * 1024**2),
        ("1_000MiB", 1000 * 1024**2),
        ("5e-1 GiB", 512 * 1024**2),
        ("80GB", 80 * 10**9),
    ],
)
def test_a_size_takes_a_number_as_a_duration_does(text: str, size: int) -> None:
    assert parse_size(text, "--min-memory") == size


@pytest.mark.parametrize("text", ["1eGiB", "nanGiB", "infGiB", "1__0G", "e3G"])
def test_a_size_that_is_no_number_is_refused(text: str) -> None:
    with pytest.raises(UserError, match="is not a size"):
        parse_size(text, "--min-memory")


def test_min_memory_1e3gib_is_read_on_the_command_line(tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(dumps(builders.h100_node(1)))
    code, out, err = in_process(["doctor", "--from", str(snap), "--min-memory", "1e3GiB"])
    assert code == 1, err
    assert "  ✗ 1 GPU(s) have less than 1e3GiB of memory  [requirements.min-memory]" in out, out
