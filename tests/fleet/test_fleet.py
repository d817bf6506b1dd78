"""`gpucheck fleet` on reports made by the real checks from tests/support/builders.py machines (values
from real nvidia-smi outputs): inventory, problems grouped across hosts, version spread, GPUs
to act on, --recheck, bad reports, and the command end to end."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgspec
import pytest
from conftest import run_gpucheck
from support import builders
from support import framework_builders as fb
from support.evaluate import run_checks
from support.more_builders import nvml_fails
from support.started import wait_for_children

from gpucheck.fleet.reading import IN_PROCESS_BELOW, Settings, read_all
from gpucheck.fleet.records import HostRecord
from gpucheck.fleet.sources import items
from gpucheck.fleet.store import Folded
from gpucheck.fleet.summary import Fleet, FleetBuilder, HostGpu
from gpucheck.model.decoding import to_json
from gpucheck.model.snapshot import HostIdentity, Snapshot, dumps
from gpucheck.report.core import Report


def report_text(snap: Snapshot, created_at: str = "2026-11-21T10:00:00+00:00") -> str:
    report = Report(snap, run_checks(snap), created_at=created_at)
    return to_json(report.to_dict()).decode()


def node(name: str, host_id: str | None = None) -> Snapshot:
    snap = fb.on(builders.h100_node(4), fb.torch_cu124())
    snap.system.hostname = name
    snap.system.host = HostIdentity(host_id=host_id or f"mid-{name}", host_id_source="machine-id")
    return snap


def ecc_node(name: str) -> Snapshot:
    snap = node(name)
    snap.nvml.gpus[2].ecc_uncorrected_volatile = 3
    return snap


def mismatch_node(name: str) -> Snapshot:
    snap = nvml_fails(node(name), "LibRmVersionMismatch", "/usr/lib/libnvidia-ml.so.1")
    return snap


class Summary:
    """A built fleet's lists, read whole from its store (the test fleets are small)."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        named = list(fleet.hosts())
        self.names = [n for n, _ in named]
        self.hosts: list[HostRecord] = [h for _, h in named]
        self.problems = [(g, list(fleet.problem_hosts(g))) for g in fleet.problems]
        self.gpus_to_act_on: list[HostGpu] = list(fleet.gpus_to_act_on())
        self.bad_reports = list(fleet.bad_reports())
        self.reports, self.ready, self.versions = fleet.reports, fleet.ready, fleet.versions
        self.superseded, self.exit_code = fleet.superseded, fleet.exit_code


def summarise(*paths: Path | str, recheck: bool = False, jobs: int = 1) -> Summary:
    builder = FleetBuilder()
    try:
        for blob in read_all(items([str(p) for p in paths]), Settings(recheck=recheck), jobs):
            builder.add_folded(blob)
        return Summary(builder.build())
    finally:
        builder.close()


@pytest.fixture
def fleet_dir(tmp_path: Path) -> Path:
    d = tmp_path / "reports"
    (d / "rack2").mkdir(parents=True)
    (d / "a.json").write_text(report_text(node("node-a")))
    (d / "b.json").write_text(report_text(ecc_node("node-b")))
    (d / "rack2" / "c.json").write_text(report_text(mismatch_node("node-c")))
    (d / "rack2" / "d.json").write_text(report_text(ecc_node("node-d")))
    (d / "notes.txt").write_text("not a report, not read")
    return d


def test_inventory_problems_versions_and_gpus_to_act_on(fleet_dir: Path) -> None:
    fleet = summarise(fleet_dir)
    assert fleet.reports == 4 and fleet.bad_reports == []
    assert [h.hostname for h in fleet.hosts] == ["node-b", "node-c", "node-d", "node-a"]
    a = fleet.hosts[-1]
    assert a.ready and a.gpus == ["NVIDIA H100 80GB HBM3"] * 4
    assert (a.driver, a.cuda, a.frameworks) == ("590.48.01", "13.1", ["torch 2.5.1+cu124"])
    assert fleet.ready == 1 and fleet.exit_code == 1
    groups = {(g.check, g.status): hosts for g, hosts in fleet.problems}
    assert groups[("gpus.ecc-errors", "fail")] == ["node-b", "node-d"]
    assert groups[("driver.nvml", "fail")] == ["node-c"]
    assert fleet.problems[0][0].check == "gpus.ecc-errors"  # most hosts first among failures
    assert fleet.versions["driver"] == {"590.48.01": 4}
    assert fleet.versions["cuda"] == {"13.1": 3, "unknown": 1}
    assert fleet.versions["torch"] == {"2.5.1+cu124": 4}
    acts = [(a.host, a.gpu.index, a.gpu.uuid, a.gpu.serial) for a in fleet.gpus_to_act_on]
    assert acts == [
        ("node-b", 2, "GPU-00000002-0000-0000-0000-000000000000", "1650000000002"),
        ("node-d", 2, "GPU-00000002-0000-0000-0000-000000000000", "1650000000002"),
    ]


def test_a_snapshot_is_diagnosed_here(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    path.write_text(dumps(ecc_node("node-s")))
    (host,) = summarise(path).hosts
    assert host.rechecked and not host.ready
    assert [p.check for p in host.problems] == ["gpus.ecc-errors"]


def test_recheck_judges_the_snapshot_again(tmp_path: Path) -> None:
    # A report written when its findings were all fine; its snapshot shows ECC errors (as if
    # today's checks knew more than the gpucheck that wrote it).
    report = json.loads(report_text(node("node-r")))
    report["snapshot"]["nvml"]["gpus"][1]["ecc_uncorrected_volatile"] = 7
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    (as_written,) = summarise(path).hosts
    assert as_written.ready and not as_written.rechecked
    (rechecked,) = summarise(path, recheck=True).hosts
    assert rechecked.rechecked and not rechecked.ready
    assert rechecked.gpus_to_act_on[0].uuid == "GPU-00000001-0000-0000-0000-000000000000"


def test_a_report_of_an_older_major_is_judged_from_its_snapshot(tmp_path: Path) -> None:
    report = json.loads(report_text(ecc_node("node-o")))
    report["schema_version"] = "1.1"  # 1.x: fix was a sentence, no subjects
    for f in report["findings"]:
        f["fix"] = f["fix"]["text"] if f["fix"] else None
        del f["subjects"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(report))
    (host,) = summarise(path).hosts
    assert host.rechecked and [p.check for p in host.problems] == ["gpus.ecc-errors"]


def test_a_2_x_report_keeps_its_own_findings_its_fixes_read_as_text_and_commands(
    tmp_path: Path,
) -> None:
    # Report schema 2.x wrote a fix as {"text", "commands"}: it still decodes, and the report's
    # own verdict stands (its snapshot is not judged again). Here the snapshot is healthy and
    # the 2.0 report says gpu.ecc-errors failed: only the report's word can say so, under the
    # id report schema 4.0 gives it.
    report = json.loads(report_text(node("node-2")))
    report["schema_version"] = "2.0"
    report["summary"]["exit_code"] = 1
    report["findings"].append(
        {
            "id": "gpu.ecc-errors",
            "section": "gpus",
            "status": "fail",
            "title": "Uncorrectable ECC memory errors on 1 GPU(s)",
            "evidence": [],
            "fix": {
                "text": "Drain the node; `sudo nvidia-smi -r -i 2`",
                "commands": ["sudo nvidia-smi -r -i 2"],
            },
            "subjects": {"gpus": [{"index": 2}], "environments": [], "paths": []},
        }
    )
    for f in report["findings"]:
        if isinstance(f["fix"], dict) and "steps" in f["fix"]:
            f["fix"] = {"text": f["fix"]["text"], "commands": []}
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(report))
    (host,) = summarise(path).hosts
    assert not host.rechecked
    assert [p.check for p in host.problems] == ["gpus.ecc-errors"]


def test_bad_reports_are_counted_and_named_never_fatal(tmp_path: Path) -> None:
    good = report_text(node("node-g"))
    files = {
        "truncated.json": good[: len(good) // 2],
        "garbage.json": "<html>502 Bad Gateway</html>",
        "array.json": "[]",
        "empty.json": "",
        "other.json": '{"hello": "world"}',
        "future.json": good.replace('"schema_version": "1.6"', '"schema_version": "9.0"'),
        "wrongtype.json": good.replace('"exit_code": 0', '"exit_code": "zero"', 1),
        "good.json": good,
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    fleet = summarise(tmp_path, tmp_path / "missing.json")
    reasons = {Path(b.source).name: b.reason for b in fleet.bad_reports}
    assert reasons == {
        "array.json": "not a gpucheck report or snapshot: expected a JSON object",
        "empty.json": "the file is empty",
        "future.json": "invalid report: snapshot schema 9.0 is not readable by gpucheck 0.1.0 "
        "(reads 1.x): use a gpucheck of the same major schema",
        "garbage.json": "not valid JSON: invalid character (byte 0)",
        "missing.json": "no such file or folder",
        "other.json": "not a gpucheck snapshot: no valid schema_version field",
        "truncated.json": "not valid JSON: input data was truncated",
        "wrongtype.json": "invalid report: summary.exit_code: expected integer, got string",
    }
    assert [h.hostname for h in fleet.hosts] == ["node-g"]
    assert fleet.reports == 9 and fleet.exit_code == 1


def test_the_newest_report_of_a_host_is_the_one_listed(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(report_text(ecc_node("node-x"), "2026-11-20T10:00:00+00:00"))
    (tmp_path / "new.json").write_text(report_text(node("node-x"), "2026-11-21T10:00:00+00:00"))
    fleet = summarise(tmp_path)
    assert fleet.superseded == 1
    assert [(h.source.rsplit("/", 1)[-1], h.ready) for h in fleet.hosts] == [("new.json", True)]


def test_of_reports_made_at_the_same_time_the_greatest_file_name_wins(tmp_path: Path) -> None:
    same_time = "2026-11-21T10:00:00+00:00"
    (tmp_path / "a.json").write_text(report_text(node("node-x"), same_time))
    (tmp_path / "c.json").write_text(report_text(ecc_node("node-x"), same_time))
    (tmp_path / "b.json").write_text(report_text(node("node-x"), same_time))
    (tmp_path / "z.json").write_text(report_text(node("node-x"), "2026-11-20T10:00:00+00:00"))
    (tmp_path / "other.json").write_text(report_text(node("node-y"), same_time))
    fleet = summarise(tmp_path)
    assert fleet.superseded == 3 and fleet.reports == 5
    assert [(Path(h.source).name, h.ready) for h in fleet.hosts] == [
        ("c.json", False),
        ("other.json", True),
    ]


def test_workers_give_the_same_fleet_as_one_process(tmp_path: Path) -> None:
    texts = [report_text(ecc_node("n")), report_text(node("n"))]
    count = 582
    assert count > IN_PROCESS_BELOW  # enough reports for the workers to start
    for n in range(count):
        text = texts[n % 7 == 0].replace('"hostname": "n"', f'"hostname": "n{n:03d}"')
        text = text.replace('"host_id": "mid-n"', f'"host_id": "mid-{n}"')
        (tmp_path / f"{n:03d}.json").write_text(text)
    parallel = summarise(tmp_path, jobs=2)
    assert len(parallel.hosts) == count
    assert parallel.ready == 84  # n = 0, 7, ..., 581 (texts[True]) are the healthy ones
    one = summarise(tmp_path, jobs=1)
    assert [h.hostname for h in parallel.hosts] == [h.hostname for h in one.hosts]
    assert parallel.problems == one.problems


# --- the command ----------------------------------------------------------------------------


def test_cli_table_names_problems_and_hosts(fleet_dir: Path) -> None:
    result = run_gpucheck("fleet", str(fleet_dir))
    assert result.returncode == 1, result.stderr
    out = result.stdout
    assert "4 report(s), 4 host(s): 1 ready, 3 not ready" in out
    assert "✗ gpus.ecc-errors failed on 2 host(s): Uncorrectable ECC memory errors" in out
    assert "      node-b, node-d\n" in out
    assert "driver.nvml failed on 1 host(s): Driver/library version mismatch" in out
    assert "GPU-00000002-0000-0000-0000-000000000000  1650000000002  gpus.ecc-errors" in out


def test_cli_json_and_csv(fleet_dir: Path) -> None:
    data = json.loads(run_gpucheck("fleet", str(fleet_dir), "--format", "json").stdout)
    assert data["summary"] == {
        "reports": 4,
        "hosts": 4,
        "ready": 1,
        "not_ready": 3,
        "bad_reports": 0,
        "superseded": 0,
        "exit_code": 1,
    }
    assert data["hosts"][0]["host"]["host_id"] == "mid-node-b"
    rows = list(
        csv.DictReader(io.StringIO(run_gpucheck("fleet", str(fleet_dir), "-f", "csv").stdout))
    )
    b = rows[0]
    assert (b["host"], b["ready"], b["gpus"], b["problems"]) == (
        "node-b",
        "no",
        "4x NVIDIA H100 80GB HBM3",
        "gpus.ecc-errors",
    )
    assert rows[-1]["host"] == "node-a" and rows[-1]["ready"] == "yes"


def test_cli_reads_json_lines_on_stdin() -> None:
    lines = [json.dumps(json.loads(report_text(node(f"s{n}")))) for n in range(3)]
    result = run_gpucheck("fleet", "-", "-f", "json", stdin="\n".join([*lines, "{oops"]) + "\n")
    data = json.loads(result.stdout)
    assert data["summary"]["hosts"] == 3
    assert data["bad_reports"] == [
        {"source": "<stdin>:4", "reason": "not valid JSON: object keys must be strings (byte 1)"}
    ]


def test_cli_reads_indented_reports_on_stdin() -> None:
    """`gpucheck doctor --json | gpucheck fleet -`: indented documents, one after another."""
    texts = [report_text(node(f"s{n}")) for n in range(2)]
    assert texts[0].count("\n") > 10  # indented, as doctor --json writes it
    result = run_gpucheck("fleet", "-", "-f", "json", stdin="".join(t + "\n" for t in texts))
    data = json.loads(result.stdout)
    assert data["summary"]["hosts"] == 2 and data["bad_reports"] == []


def test_cli_all_ready_is_exit_0(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(report_text(node("node-a")))
    assert run_gpucheck("fleet", str(tmp_path), "-f", "csv").returncode == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--format", "xml"], "--format: 'xml' is not one of table, json, csv"),
        (["-", "-"], "- (stdin) can be given once"),
        ([], "no reports found in"),
    ],
)
def test_cli_usage_errors_are_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    result = run_gpucheck("fleet", str(tmp_path), *args, stdin="")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("gpucheck: ") and needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_records_are_small(fleet_dir: Path) -> None:
    # What travels back from a worker and is kept per host: no findings' evidence, no facts.
    (blob,) = read_all(items([str(fleet_dir)]), Settings(), 1)
    folded = msgspec.msgpack.decode(blob, type=Folded)
    assert len(folded.hosts) == 4 and folded.bad == []
    full = len((fleet_dir / "a.json").read_bytes())
    assert len(blob) * 4 < full * len(folded.hosts)
    assert max(len(row[-1]) for row in folded.hosts) * 4 < full


def test_json_lines_files_in_a_folder_and_by_name(tmp_path: Path) -> None:
    lines = [json.dumps(json.loads(report_text(node(f"l{n}")))) for n in range(3)]
    (tmp_path / "day1.jsonl").write_text("\n".join(lines[:2]) + "\n\n")
    (tmp_path / "day2.jsonl").write_text(lines[2] + "\n{\n")
    fleet = summarise(tmp_path, tmp_path / "missing.jsonl")
    assert [h.hostname for h in fleet.hosts] == ["l0", "l1", "l2"]
    assert [h.source.rsplit("/", 1)[-1] for h in fleet.hosts] == [
        "day1.jsonl:1",
        "day1.jsonl:2",
        "day2.jsonl:1",
    ]
    assert [(Path(b.source).name, b.reason) for b in fleet.bad_reports] == [
        ("day2.jsonl:2", "not valid JSON: input data was truncated"),
        ("missing.jsonl", "no such file or folder"),
    ]


def test_recheck_keeps_the_report_s_strictness(tmp_path: Path) -> None:
    snap = node("node-w")
    snap.nvml.gpus[0].persistence_mode = False  # driver.persistence-mode warns
    report = Report(snap, run_checks(snap), strict=True)
    (tmp_path / "w.json").write_text(to_json(report.to_dict()).decode())
    (host,) = summarise(tmp_path, recheck=True).hosts
    assert [p.status for p in host.problems] == ["warn"]
    assert (host.exit_code, host.ready) == (1, False)


def test_a_wrongly_typed_head_is_named(tmp_path: Path) -> None:
    (tmp_path / "n.json").write_text('{"schema_version": 2, "findings": []}')
    (bad,) = summarise(tmp_path).bad_reports
    assert (
        bad.reason
        == "not a gpucheck report or snapshot: schema_version: expected string, got integer"
    )


def test_cli_recheck_and_a_bad_compat_dir(tmp_path: Path) -> None:
    report = json.loads(report_text(node("node-r")))
    report["snapshot"]["nvml"]["gpus"][1]["ecc_uncorrected_volatile"] = 7
    (tmp_path / "r.json").write_text(json.dumps(report))
    assert run_gpucheck("fleet", str(tmp_path), "-f", "csv").returncode == 0
    result = run_gpucheck("fleet", str(tmp_path), "-f", "csv", "--recheck", "--jobs", "2")
    assert result.returncode == 1
    (row,) = csv.DictReader(io.StringIO(result.stdout))
    assert row["problems"] == "gpus.ecc-errors"
    bad = run_gpucheck("fleet", str(tmp_path), "--compat-dir", str(tmp_path / "nope"))
    assert bad.returncode == 2 and bad.stderr.startswith("gpucheck: compat data:")


@pytest.mark.slow
def test_ctrl_c_stops_the_workers_without_tracebacks() -> None:
    # Snapshots on stdin, each diagnosed in a worker (--recheck), fed from a thread and the
    # stream left open; Ctrl-C (SIGINT to the whole process group, as a terminal sends it)
    # arrives while the workers are busy.
    line = json.dumps(json.loads(dumps(builders.no_gpu_machine()))).encode() + b"\n"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "fleet", "-", "--recheck"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    stdin = proc.stdin
    assert stdin is not None

    def feed() -> None:
        with contextlib.suppress(OSError):  # the command is gone: the pipe is closed
            for _ in range(20_000):
                stdin.write(line)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    # (Counted from the workers' start: a fixed 2 s once landed in the interpreter's start.)
    wait_for_children(proc, 2)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=60)  # a worker left behind would keep the command from ending
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert proc.returncode == 130
    assert b"Traceback" not in err, err.decode()[-2000:]


def test_control_characters_from_reports_never_reach_the_terminal(tmp_path: Path) -> None:
    evil = node("node-\x1b]0;owned\x07")
    evil.nvml.gpus[0].ecc_uncorrected_volatile = 1
    evil.nvml.gpus[0].name = "H100\x1b[2J"
    (tmp_path / "e.json").write_text(report_text(evil))
    out = run_gpucheck("fleet", str(tmp_path)).stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "node-\\x1b]0;owned\\x07" in out
