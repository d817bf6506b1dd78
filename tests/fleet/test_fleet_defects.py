"""`gpucheck fleet` on damaged and hostile input, each end to end: a cut-off JSON line loses nothing
after it, --recheck keeps the report's requirements, hosts that share a hostname stay apart,
the output is never one of the inputs nor a file the user could not write, and control
characters never reach any output raw."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
from conftest import run_gpucheck
from support import builders
from support import framework_builders as fb
from support.evaluate import run_checks

from gpucheck.checks.context import Requirements
from gpucheck.model.snapshot import HostIdentity, Snapshot, dumps
from gpucheck.report.core import Report


def node(name: str, host_id: str, gpus: int = 4) -> Snapshot:
    snap = fb.on(builders.h100_node(gpus), fb.torch_cu124())
    snap.system.hostname = name
    snap.system.host = HostIdentity(host_id=host_id, host_id_source="machine-id")
    return snap


def line(snap: Snapshot, requirements: Requirements | None = None) -> str:
    """The report as one JSON line, as `jq -c .` writes it."""
    req = requirements or Requirements()
    report = Report(snap, run_checks(snap, req), requirements=req)
    text = msgspec.json.encode(report.to_dict()).decode()
    assert "\n" not in text
    return text


# --- 1. JSON lines: a bad line is one bad report --------------------------------------------


def test_a_cut_off_json_line_swallows_no_later_report(tmp_path: Path) -> None:
    good = [line(node(f"n{n}", f"mid-{n}")) for n in range(4)]
    cut = good[0][: len(good[0]) // 2]
    (tmp_path / "day.jsonl").write_text("\n".join([cut, *good[1:]]) + "\n")
    for args, stdin in (
        ([str(tmp_path / "day.jsonl")], None),
        (["-"], "\n".join([cut, *good[1:]])),
    ):
        result = run_gpucheck("fleet", *args, "-f", "json", stdin=stdin)
        data = json.loads(result.stdout)
        assert data["summary"]["reports"] == 4 and data["summary"]["hosts"] == 3, args
        assert [h["hostname"] for h in data["hosts"]] == ["n1", "n2", "n3"]
        (bad,) = data["bad_reports"]
        assert bad["source"].endswith(":1")
        assert bad["reason"] == "not valid JSON: input data was truncated"


def test_a_line_opening_an_object_does_not_start_a_multi_line_document(tmp_path: Path) -> None:
    good = [line(node(f"n{n}", f"mid-{n}")) for n in range(2)]
    (tmp_path / "day.jsonl").write_text("\n".join([good[0], "{", good[1]]) + "\n")
    data = json.loads(run_gpucheck("fleet", str(tmp_path), "-f", "json").stdout)
    assert [h["hostname"] for h in data["hosts"]] == ["n0", "n1"]
    assert [(Path(b["source"]).name, b["reason"]) for b in data["bad_reports"]] == [
        ("day.jsonl:2", "not valid JSON: input data was truncated")
    ]


def test_indented_documents_on_stdin_a_cut_off_one_loses_only_itself() -> None:
    texts = [json.dumps(json.loads(line(node(f"s{n}", f"mid-{n}"))), indent=2) for n in range(3)]
    cut = texts[0][: len(texts[0]) // 2]
    result = run_gpucheck("fleet", "-", "-f", "json", stdin="\n".join([cut, *texts[1:]]) + "\n")
    data = json.loads(result.stdout)
    assert [h["hostname"] for h in data["hosts"]] == ["s1", "s2"]
    assert [b["source"] for b in data["bad_reports"]] == ["<stdin>:1"]


# --- 2. --recheck keeps requirements ---------------------------------------------------------


def test_recheck_judges_the_report_s_requirements_again(tmp_path: Path) -> None:
    needs_eight = Requirements(min_gpus=8)
    (tmp_path / "r.json").write_text(line(node("node-r", "mid-r"), needs_eight))
    for recheck in ([], ["--recheck"]):
        result = run_gpucheck("fleet", str(tmp_path), "-f", "csv", *recheck)
        assert result.returncode == 1, (recheck, result.stdout)
        (row,) = csv.DictReader(io.StringIO(result.stdout))
        assert (row["ready"], row["problems"]) == ("no", "requirements.min-gpus"), recheck


def test_doctor_records_its_requirements_and_recheck_judges_them(tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(dumps(node("node-d", "mid-d", gpus=1)))
    report = tmp_path / "reports" / "d.json"
    report.parent.mkdir()
    made = run_gpucheck(
        "doctor",
        "--from",
        str(snap),
        "--min-gpus",
        "2",
        "--min-memory",
        "40GiB",
        "--json",
        "-o",
        str(report),
    )
    assert made.returncode == 1, made.stderr
    assert json.loads(report.read_text())["summary"]["requirements"] == {
        "min_gpus": 2,
        "min_memory_bytes": 40 * 2**30,
        "min_memory_text": "40GiB",
        "min_compute_capability": None,
        "job_pids": None,
    }
    result = run_gpucheck("fleet", str(report.parent), "--recheck", "-f", "csv")
    (row,) = csv.DictReader(io.StringIO(result.stdout))
    assert (row["ready"], row["problems"], row["rechecked"]) == (
        "no",
        "requirements.min-gpus",
        "yes",
    )


def test_recheck_of_a_report_without_recorded_requirements_keeps_their_findings(
    tmp_path: Path,
) -> None:
    # A 2.0 report (before requirements were recorded): its require.* findings stand as
    # written, under their 4.0 ids.
    report = json.loads(line(node("node-o", "mid-o"), Requirements(min_gpus=8)))
    report["schema_version"] = "2.0"
    for finding in report["findings"]:
        finding["id"] = finding["id"].replace("requirements.", "require.")
    assert "require.min-gpus" in [f["id"] for f in report["findings"]]
    del report["summary"]["requirements"]
    (tmp_path / "o.json").write_text(json.dumps(report))
    result = run_gpucheck("fleet", str(tmp_path), "-f", "csv", "--recheck")
    (row,) = csv.DictReader(io.StringIO(result.stdout))
    assert (row["ready"], row["problems"], row["rechecked"]) == (
        "no",
        "requirements.min-gpus",
        "yes",
    )


def test_a_3_x_report_keeps_its_own_findings_under_their_4_0_ids(tmp_path: Path) -> None:
    # Report schema 3.x named checks by their old ids (gpu.*, torch.*, require.*): its own
    # verdicts stand (nothing is judged again), each under the id 4.0 gives it.
    report = json.loads(line(node("node-3", "mid-3"), Requirements(min_gpus=8)))
    report["schema_version"] = "3.1"
    for finding in report["findings"]:
        finding["id"] = finding["id"].replace("requirements.", "require.")
    assert "require.min-gpus" in [f["id"] for f in report["findings"]]
    (tmp_path / "r.json").write_text(json.dumps(report))
    result = run_gpucheck("fleet", str(tmp_path), "-f", "csv")
    (row,) = csv.DictReader(io.StringIO(result.stdout))
    assert (row["ready"], row["problems"], row["rechecked"]) == (
        "no",
        "requirements.min-gpus",
        "no",
    )


# --- 3. hosts that share a hostname ----------------------------------------------------------


def test_hosts_sharing_a_hostname_are_told_apart(tmp_path: Path) -> None:
    for n, host_id in enumerate(
        ("mid-3f2a9c1b0000000000000000000000aa", "mid-77e01d4c0000000000000000000000bb")
    ):
        snap = node("vm", host_id)
        snap.nvml.gpus[1].ecc_uncorrected_volatile = 2
        (tmp_path / f"{n}.json").write_text(line(snap))
    (tmp_path / "other.json").write_text(line(node("solo", "mid-5555")))
    out = run_gpucheck("fleet", str(tmp_path)).stdout
    assert "      vm (mid-3f2a9c1b), vm (mid-77e01d4c)\n" in out
    inventory = [row.split()[0:2] for row in out.splitlines() if row.startswith("  vm ")]
    assert inventory[:2] == [["vm", "(mid-3f2a9c1b)"], ["vm", "(mid-77e01d4c)"]]
    assert "  solo " in out  # a unique hostname stays as it is
    rows = list(
        csv.DictReader(io.StringIO(run_gpucheck("fleet", str(tmp_path), "-f", "csv").stdout))
    )
    assert [r["host"] for r in rows] == ["vm (mid-3f2a9c1b)", "vm (mid-77e01d4c)", "solo"]
    data = json.loads(run_gpucheck("fleet", str(tmp_path), "-f", "json").stdout)
    (group,) = data["problems"]
    assert group["hosts"] == ["vm (mid-3f2a9c1b)", "vm (mid-77e01d4c)"]


def test_colliding_short_ids_fall_back_to_the_whole_id(tmp_path: Path) -> None:
    for n, host_id in enumerate(("mid-1234567890-a", "mid-1234567890-b")):
        (tmp_path / f"{n}.json").write_text(line(node("vm", host_id)))
    rows = list(
        csv.DictReader(io.StringIO(run_gpucheck("fleet", str(tmp_path), "-f", "csv").stdout))
    )
    assert [r["host"] for r in rows] == ["vm (mid-1234567890-a)", "vm (mid-1234567890-b)"]


# --- 11. the output is never an input, never a file the user could not write ------------------


def test_output_onto_an_input_is_refused(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.write_text(line(node("node-a", "mid-a")))
    before = a.read_bytes()
    (tmp_path / "sub").mkdir()
    os.link(a, tmp_path / "sub" / "hard.json")
    (tmp_path / "alias.json").symlink_to(a)
    for args in (
        [str(tmp_path), "-o", str(a)],  # a file of a folder that is read
        [str(a), "-o", str(tmp_path / "alias.json")],  # a link to it
        [str(tmp_path / "sub"), "-o", str(a)],  # another name of the same inode
    ):
        result = run_gpucheck("fleet", *args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("gpucheck: --output: ") and "is one of the inputs" in (
            result.stderr
        )
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
        assert a.read_bytes() == before


def test_output_onto_stdin_s_file_is_refused(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    a.write_text(line(node("node-a", "mid-a")) + "\n")
    before = a.read_bytes()
    with open(a, "rb") as stdin:
        result = subprocess.run(
            [sys.executable, "-m", "gpucheck", "fleet", "-", "-o", str(a)],
            stdin=stdin,
            capture_output=True,
            text=True,
            check=False,
        )
    assert result.returncode == 2 and "is one of the inputs" in result.stderr
    assert a.read_bytes() == before


def test_output_never_replaces_a_file_the_user_could_not_write(tmp_path: Path) -> None:
    # A read-only file in a writable folder: replacing it would work (a rename), but the shell
    # refuses `>` onto it, and so must -o. As root, run without the capabilities that let root
    # write anything (setpriv, util-linux), as any other user is.
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("setpriv is missing: apt-get install util-linux")
    report = tmp_path / "r.json"
    report.write_text(line(node("node-a", "mid-a")))
    theirs = tmp_path / "kept.csv"
    theirs.write_text("not yours to replace\n")
    theirs.chmod(0o444)
    drop = ["--bounding-set", "-dac_override,-dac_read_search,-fowner"] if os.getuid() == 0 else []
    command = [sys.executable, "-m", "gpucheck", "fleet", str(report), "-o", str(theirs)]
    result = subprocess.run(
        [setpriv, *drop, *command],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert (
        result.stderr == f"gpucheck: --output: {theirs}: Permission denied (it is not replaced)\n"
    )
    assert theirs.read_text() == "not yours to replace\n"


# --- 10. control characters in every output ------------------------------------------------


def test_control_characters_are_escaped_in_csv_and_json(tmp_path: Path) -> None:
    evil = node("node-\x1b]0;owned\x07", "mid-\x1b[2J")
    evil.nvml.gpus[0].name = "H100\x1b[2J"
    evil.nvml.gpus[1].name = "H100\x9b31m\u202e"  # a C1 CSI and a right-to-left override
    evil.nvml.gpus[0].ecc_uncorrected_volatile = 1
    (tmp_path / "e\x1b.json").write_text(line(evil))
    csv_out = run_gpucheck("fleet", str(tmp_path), "-f", "csv").stdout
    assert "\x1b" not in csv_out and "\x07" not in csv_out
    (row,) = csv.DictReader(io.StringIO(csv_out))
    assert row["host"] == "node-\\x1b]0;owned\\x07"
    assert row["host_id"] == "mid-\\x1b[2J"
    assert row["gpus"] == "1x H100\\x1b[2J, 1x H100\\x9b31m\\u202e, 2x NVIDIA H100 80GB HBM3"
    assert row["source"].endswith("/e\\x1b.json")
    json_out = run_gpucheck("fleet", str(tmp_path), "-f", "json").stdout
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in json_out and raw not in csv_out
    assert "H100\\u009b31m\\u202e" in json_out
    data = json.loads(json_out)  # escaped as \u001b, the values stay exact
    assert data["hosts"][0]["hostname"] == "node-\x1b]0;owned\x07"
    assert data["hosts"][0]["gpus"][1] == "H100\x9b31m\u202e"


# --- reading: a named pipe is read to its end -----------------------------------------------


def test_a_report_named_as_a_pipe_is_read_to_its_end(tmp_path: Path) -> None:
    # `gpucheck fleet <(ssh node cat report.json)`: the report arrives in pieces; a file is read
    # with one plain read, a pipe must be read until its writer closes it.
    text = line(node("node-p", "mid-p")).encode()
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "fleet", str(fifo), "-f", "csv"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with open(fifo, "wb") as writer:
        writer.write(text[:5000])
        writer.flush()
        time.sleep(0.5)
        writer.write(text[5000:])
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    (row,) = csv.DictReader(io.StringIO(out))
    assert (row["host"], row["ready"]) == ("node-p", "yes")


# --- paths that do not exist ----------------------------------------------------------------


def test_paths_that_do_not_exist_are_an_input_error_not_a_failed_host(tmp_path: Path) -> None:
    # Exit 1 says a host is not ready; a mistyped path is the caller's mistake (2, as for
    # a folder with no report in it), named in one line.
    nope, gone = tmp_path / "nope", tmp_path / "gone.json"
    result = run_gpucheck("fleet", str(nope), str(gone))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"gpucheck: no such file or folder: {nope} {gone}\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_gpucheck("fleet", str(empty), str(nope))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"gpucheck: no reports found in {empty} (looked for *.json files); "
        f"no such file or folder: {nope}\n"
    )
    # With a report read, the missing path is a bad report named in the output, as before.
    (empty / "a.json").write_text(line(node("node-a", "mid-a")))
    result = run_gpucheck("fleet", str(empty), str(nope))
    assert result.returncode == 1, result.stderr
    assert "node-a" in result.stdout and f"{nope}: no such file or folder" in result.stdout
