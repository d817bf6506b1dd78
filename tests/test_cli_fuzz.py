"""The command line itself, fuzzed: any mix of options, values and orders ends with a
documented exit code, and every error is one line on stderr, never a traceback.

Runs in-process (gpucheck.cli.run) so hypothesis can try hundreds of command lines quickly;
every doctor run reads a saved snapshot, so nothing probes this machine.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

import builders
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucheck import cli
from gpucheck.model.snapshot import dumps

DOCUMENTED = {0, 1, 2, 4}  # 3 is a gpucheck bug; 130 needs a Ctrl-C


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("fuzz")
    good = root / "snap.json"
    good.write_text(dumps(builders.h100_node(2)))
    bad = root / "garbage.json"
    bad.write_bytes(b"\xff{not json")
    compat_bad = root / "compat-bad"
    compat_bad.mkdir()
    (compat_bad / "torch.toml").write_text("[[release]]\nversion = 'x'\n")
    (root / "out").mkdir()
    return {
        "snap": str(good),
        "garbage": str(bad),
        "missing": str(root / "missing.json"),
        "dir": str(root),
        "compat_bad": str(compat_bad),
        "out_file": str(root / "out" / "report.txt"),
        "out_dir": str(root / "out"),
    }


def values(files: dict[str, str]) -> st.SearchStrategy[str]:
    return st.sampled_from(
        [
            "",
            "0",
            "-1",
            "8",
            "1e9",
            "80GB",
            "40GiB",
            "8.0",
            "x.y",
            "gpus",
            "gpu.",
            "gpu.ecc-errors",
            "nope",
            "text",
            "json",
            "junit",
            "\u00b2",
            "--",
            "\x1b[2J",
            files["snap"],
            files["garbage"],
            files["missing"],
            files["dir"],
            files["compat_bad"],
            files["out_file"],
            files["out_dir"],
            "/dev/null",
        ]
    )


DOCTOR_OPTIONS = [
    "--json",
    "--format",
    "-f",
    "-o",
    "--output",
    "-v",
    "--strict",
    "--from",
    "--only",
    "--skip",
    "--min-gpus",
    "--min-memory",
    "--min-compute-capability",
    "--timeout",
    "--compat-dir",
    "--deep",
    "--python",
    "--help",
    "--bogus",
]
COMPAT = ["torch", "tensorflow", "jax", "cudnn", "driver", "cuda", "gpu", "--about", "--json"]


@st.composite
def command_lines(draw: st.DrawFn, files: dict[str, str]) -> list[str]:
    kind = draw(st.sampled_from(["doctor", "compat", "checks", "schema", "top"]))
    words = st.one_of(st.sampled_from(DOCTOR_OPTIONS), values(files))
    if kind == "doctor":
        argv = ["doctor", *draw(st.lists(words, max_size=8))]
        if "--from" not in argv:  # never probe this machine
            argv += ["--from", files["snap"]]
        return argv
    if kind == "compat":
        tail = st.lists(
            st.one_of(st.sampled_from([*COMPAT, "--windows", "--compat-dir"]), values(files)),
            max_size=5,
        )
        return ["compat", *draw(tail)]
    if kind in ("checks", "schema"):
        return [kind, *draw(st.lists(st.sampled_from(["--help", "-x", "extra"]), max_size=2))]
    return draw(st.lists(st.sampled_from(["--version", "--help", "nope", "-", ""]), max_size=2))


def run(argv: list[str], stdin: bytes = b"", cwd: str | None = None) -> tuple[int, str, str]:
    """cli.run in `cwd` (an option value may name a relative file: it lands there)."""
    out, err = io.StringIO(), io.StringIO()
    real_stdin, real_cwd = sys.stdin, os.getcwd()
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.run(argv)
    finally:
        sys.stdin = real_stdin
        os.chdir(real_cwd)
    return code, out.getvalue(), err.getvalue()


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_command_line_ends_documented_and_in_one_line(
    files: dict[str, str], data: st.DataObject
) -> None:
    argv = data.draw(command_lines(files))
    before = Path(files["snap"]).read_bytes()
    code, out, err = run(argv, stdin=before, cwd=files["out_dir"])
    assert code in DOCUMENTED, (argv, code, err)
    assert "Traceback" not in err + out, (argv, err)
    lines = err.strip().splitlines()
    if code in (2, 4):
        if lines:
            assert len(lines) == 1 and lines[0].startswith("gpucheck: "), (argv, err)
        else:  # a command group asked for without its command prints its help
            assert "Usage" in out, (argv, out)
    else:
        assert not lines, (argv, err)
    to_stdout = not {"-o", "--output", "--help"} & set(argv)
    if code in (0, 1) and argv[0] == "doctor" and "--json" in argv and to_stdout:
        json.loads(out)
    assert Path(files["snap"]).read_bytes() == before, argv  # the input is never touched
    assert os.path.isdir(files["out_dir"])
    assert Path(files["dir"], "snap.json").read_bytes() == before


def test_the_fuzzer_reaches_every_documented_ending(files: dict[str, str]) -> None:
    """The grammar can produce each ending, so the property above is not vacuous."""
    assert run(["doctor", "--from", files["snap"]])[0] == 0
    assert run(["doctor", "--from", files["snap"], "--min-gpus", "8"])[0] == 1
    assert run(["doctor", "--from", files["garbage"]])[0] == 2
    assert run(["compat", "torch", "nope"])[0] == 2
