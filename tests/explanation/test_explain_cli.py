"""`gpucheck explain` on the command line: where the text comes from (FILE, -, --text), its
bounds (16 MiB, any bytes), the exit codes, --json against its published schema, --from, and
its speed on a large log."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
from support.framework_builders import blackwell_workstation, on, torch_cu124

from gpucheck.cli import run
from gpucheck.cli.schema import schema_text
from gpucheck.compat import load
from gpucheck.explanation import explain
from gpucheck.model.snapshot import dumps

OOM = "RuntimeError: CUDA error: out of memory\n"
TRT = "W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not find TensorRT\n"


def gpucheck(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gpucheck", "explain", *args],
        input=stdin,
        capture_output=True,
        check=False,
        timeout=120,
    )


def test_exit_codes_failure_harmless_nothing(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("epoch 1\n" + OOM)
    assert run(["explain", str(log)]) == 1
    assert run(["explain", "--text", TRT]) == 0
    assert run(["explain", "--text", "all good"]) == 0


def test_standard_input_and_the_text_in_json_match_the_schema() -> None:
    done = gpucheck("-", "--json", stdin=(OOM + TRT).encode())
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    jsonschema.validate(document, json.loads(schema_text("explain")))
    assert [f["id"] for f in document["findings"]] == [
        "explain.cuda.out-of-memory",
        "explain.tensorflow.tensorrt-missing",
    ]
    # No finding needs a fact: nothing was probed, no fact joined.
    assert document["source"] == {
        "name": "-",
        "lines": 2,
        "bytes": 136,
        "facts_from": None,
        "facts": [],
    }
    assert document["summary"]["counts"] == {"fail": 1, "warn": 0, "info": 1}


def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    big = tmp_path / "huge.log"
    big.write_bytes(b"x" * (16 * 1024 * 1024 + 1))
    cases = {
        (str(big),): f"gpucheck: FILE: {big} is larger than 16 MiB: give the part of the log "
        "around the error",
        (): "gpucheck: explain: give the text one way: FILE, - (standard input) or --text TEXT",
        ("-", "--text", "x"): "gpucheck: explain: give the text one way: FILE, - (standard "
        "input) or --text TEXT",
        (str(tmp_path / "missing.log"),): f"gpucheck: FILE: {tmp_path / 'missing.log'}: no such "
        "file",
        (
            "--text",
            "x",
            "--format",
            "xml",
        ): "gpucheck: --format: 'xml' is not one of text, json, junit, html",
        ("--text", "x", "--from", "s.json", "--no-probe"): "gpucheck: explain: --from and "
        "--no-probe: give one",
    }
    for args, message in cases.items():
        done = gpucheck(*args)
        assert done.returncode == 2, args
        assert done.stdout == b""
        assert done.stderr.decode() == message + "\n", args


def test_any_bytes_are_read_and_nothing_unprintable_is_printed() -> None:
    raw = (
        b"\x00\xff\xfe\x1b]0;pwned\x07" + OOM.encode("utf-16-le")[:10] + b"\n\x1b[2J" + OOM.encode()
    )
    done = gpucheck("-", stdin=raw)
    assert done.returncode == 1
    out = done.stdout.decode()
    assert "\x1b" not in out and "\x07" not in out and "\x00" not in out
    assert "line 2: \\x1b[2JRuntimeError: CUDA error: out of memory" in out


def test_from_a_snapshot_the_facts_decide(tmp_path: Path) -> None:
    snap = tmp_path / "host.json"
    snap.write_text(dumps(on(blackwell_workstation(), torch_cu124())))
    done = gpucheck(
        "--from", str(snap), "--json", "--text",
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    )  # fmt: skip
    assert done.returncode == 1
    finding = json.loads(done.stdout)["findings"][0]
    assert (
        "GPU 0 (NVIDIA GeForce RTX 5090): compute capability 12.0, Blackwell; torch "
        "2.5.1+cu124 carries sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90: has no code for it "
        "(newer than every architecture in this build)"
    ) in finding["evidence"]
    assert finding["fix"]["steps"][0]["tool"] == "pip"


def test_a_one_mib_log_is_explained_in_well_under_a_second() -> None:
    noise = "2026-11-28 08:00:00,123 INFO trainer.py:412] step 1200 loss=2.3141 lr=3.0e-4\n"
    lines = [noise] * 14000
    lines[6500] = "kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
    text = "".join(lines)
    assert len(text) > 1024 * 1024
    compat = load()
    explain("warm", compat)  # the catalog read and compiled, as once per command
    start = time.perf_counter()
    result = explain(text, compat)
    took = time.perf_counter() - start
    assert [f.id for f in result.findings] == ["explain.xid.79"]
    assert result.findings[0].evidence[0].startswith("line 6501: kernel: NVRM: Xid")
    assert took < 0.75, f"{took:.3f} s"  # ~0.1 s here; the bound leaves room for a busy CI


def test_a_compat_folder_adds_a_message_of_a_sites_own(tmp_path: Path) -> None:
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "messages.toml").write_text(
        '[[message]]\nid = "site.scratch-full"\nlayer = "system"\nseverity = "fail"\n'
        "pattern = 'No space left on device'\ntitle = \"The scratch disk is full\"\n"
        'cause = "The job wrote its checkpoints to a full disk."\n'
        'fix = "Clean /scratch."\nstep = "manual"\n'
        'examples = ["OSError: [Errno 28] No space left on device"]\n'
        'source = "https://wiki.example.org/scratch"\n'
    )
    done = gpucheck(
        "--compat-dir",
        str(folder),
        "--json",
        "--text",
        "OSError: [Errno 28] No space left on device",
    )
    assert done.returncode == 1, done.stderr
    assert [f["id"] for f in json.loads(done.stdout)["findings"]] == ["explain.site.scratch-full"]


def test_html_is_one_page_with_each_finding_and_the_text_escaped() -> None:
    done = gpucheck("-", "--format", "html", stdin=("<b>\x1b[31m\n" + OOM).encode())
    assert done.returncode == 1, done.stderr
    page = done.stdout.decode()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "<title>gpucheck explain: standard input</title>" in page
    assert '<span class="st st-fail"><span aria-hidden="true">✗</span> fail</span>' in page
    assert "RuntimeError: CUDA error: out of memory" in page
    assert "<b>" not in page and "\x1b" not in page
