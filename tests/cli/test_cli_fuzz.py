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
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import builders

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
            "gpus.ecc-errors",
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


# -- every command and option, with hostile values -------------------------------------------------

# Values no option should choke on: numbers that are not (NaN, infinities, too many digits),
# out of range, empty, control characters, a bidi override, very long, option-like, digits
# from another script. Each ends in a documented code with one line, never a traceback.
HOSTILE = [
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e999",
    "-1",
    "0",
    "9" * 40,
    "",
    " ",
    "\n",
    "a\tb",
    "\x1b[2J",
    "\u202eevil",
    "x" * 3000,
    "--",
    "-",
    "\u0663",
    "80GB",
    "1,2",
]
# Options that run code or end processes: left to their own tests (test_procs_kill, fit's).
NEVER = {
    "--yes",
    "-y",
    "--force",
    "--torch-module",
    "--measure",
    "--python",
    "--help",
    "--install-completion",
    "--show-completion",
}


def options_of(command: str) -> list[str]:
    """Every option name of `command` ("compat torch" for a subcommand), from the command."""
    import typer

    group = typer.main.get_command(cli.build_app())
    found = group.commands[command.split()[0]]  # type: ignore[attr-defined]
    for word in command.split()[1:]:
        found = found.commands[word]
    return [
        name
        for param in found.params
        for name in (*param.opts, *param.secondary_opts)
        if name.startswith("-") and name not in NEVER
    ]


@pytest.fixture(scope="module")
def hostile_files(files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Paths as a user may give them: a snapshot behind a name that is not UTF-8 (Python
    decodes those bytes to lone surrogates), a watch log, a folder of reports, a control
    character in a name."""
    root = tmp_path_factory.mktemp("hostile")
    odd = os.fsdecode(os.path.join(os.fsencode(str(root)), b"snap-\xff.json"))
    Path(odd).write_bytes(Path(files["snap"]).read_bytes())
    log = root / "gpus.csv"
    shutil.copyfile(Path(__file__).parents[1] / "fixtures" / "nvsmi-h100-query-gpu.csv", log)
    escape = root / "a\x1b[2Jb.json"
    escape.write_bytes(Path(files["snap"]).read_bytes())
    return [odd, str(log), str(escape), files["snap"], files["garbage"], files["dir"]]


def hostile_line(draw: st.DrawFn, command: str, paths: list[str], extra: int = 8) -> list[str]:
    words = st.one_of(
        st.sampled_from(options_of(command)), st.sampled_from(HOSTILE), st.sampled_from(paths)
    )
    return [*command.split(), *draw(st.lists(words, max_size=extra))]


@st.composite
def offline_command_lines(draw: st.DrawFn, paths: list[str]) -> list[str]:
    """Commands that read only what they are given (a --from snapshot, a log, reports):
    nothing here probes this machine."""
    kind = draw(st.sampled_from(["doctor", "fleet", "watch", "fit", "compat", "schema"]))
    if kind == "compat":
        kind = f"compat {draw(st.sampled_from(['torch', 'cuda', 'driver', 'gpu', 'cudnn']))}"
    argv = hostile_line(draw, kind, paths)
    # First, so that a drawn value of the same option wins and "--" cannot hide it.
    first = {
        "doctor": ["--from", paths[3]],  # a saved snapshot: never this machine
        "watch": ["--from", paths[1]],  # a saved log: never a live watch
        "fit": ["--gpu-memory", "80GiB"],  # judged against a size: NVML is not asked
        "fleet": [draw(st.sampled_from(paths))],
    }
    return [argv[0], *first.get(kind, []), *argv[1:]]


def assert_documented(argv: list[str], code: int, out: str, err: str) -> None:
    assert code in DOCUMENTED, (argv, code, err)
    assert "Traceback" not in err + out, (argv, err)
    lines = err.strip().splitlines()
    if code in (2, 4) and lines:
        assert lines[-1].startswith("gpucheck: "), (argv, err)
    if argv[0] != "procs":  # (procs says what it will and will not end on stderr with --json)
        assert len(lines) <= 1, (argv, err)
        assert all(line.startswith("gpucheck") for line in lines), (argv, err)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_offline_command_and_option_with_hostile_values(
    files: dict[str, str], hostile_files: list[str], data: st.DataObject
) -> None:
    argv = data.draw(offline_command_lines(hostile_files))
    before = Path(files["snap"]).read_bytes()
    code, out, err = run(argv, stdin=before, cwd=files["out_dir"])
    assert_documented(argv, code, out, err)
    # An input is never changed; a file the command line names as its output may be.
    outputs = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-o", "--output")}
    if files["snap"] not in outputs:
        assert Path(files["snap"]).read_bytes() == before, argv
    else:  # the next examples (and tests) read it as the snapshot it was
        Path(files["snap"]).write_bytes(before)


@st.composite
def probing_command_lines(draw: st.DrawFn, paths: list[str]) -> list[str]:
    """Commands that ask this machine (the probes, NVML), each bounded: watch takes one
    sample, bench the quick sizes, procs never ends anything (no --yes on a non-terminal)."""
    kind = draw(st.sampled_from(["snapshot", "procs", "watch", "bench", "fit"]))
    argv = hostile_line(draw, kind, paths, extra=6)
    first = {"watch": ["--count", "1"], "bench": ["--quick"], "fit": ["--params", "7B"]}
    if kind == "watch" and "--count" in argv:  # (a drawn count: one sample still)
        argv = [a for a in argv if a not in ("--count", "-c")]
    return [argv[0], *first.get(kind, []), *argv[1:]]


@pytest.mark.slow
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_probing_command_and_option_with_hostile_values(
    files: dict[str, str], hostile_files: list[str], data: st.DataObject
) -> None:
    argv = data.draw(probing_command_lines(hostile_files))
    code, out, err = run(argv, cwd=files["out_dir"])
    assert_documented(argv, code, out, err)


@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--from", "{odd}"],
        ["doctor", "--from", "{odd}", "-o", "report.txt"],
        ["doctor", "--from", "{odd}", "--format", "junit", "-o", "report.xml"],
        ["fleet", "{odd}", "-f", "csv", "-o", "fleet.csv"],
    ],
)
def test_a_path_that_is_not_utf8_is_shown_escaped_and_written(
    files: dict[str, str], tmp_path: Path, argv: list[str]
) -> None:
    """Before: `doctor --from $'snap-\\xff.json' -o report.txt` was an internal error (exit 3):
    the header quotes the path, and UTF-8 cannot hold its undecodable byte."""
    # A snapshot of its own: the fuzz tests above may have written a report over the shared one.
    odd = os.fsdecode(os.path.join(os.fsencode(str(tmp_path)), b"snap-\xff.json"))
    Path(odd).write_text(dumps(builders.h100_node(2)))
    argv = [a.replace("{odd}", odd) for a in argv]
    code, out, err = run(argv, cwd=files["out_dir"])
    assert code == 0, (code, err)
    assert err == ""
    written = Path(files["out_dir"], argv[-1]) if "-o" in argv else None
    text = written.read_text(encoding="utf-8") if written else out
    if argv[0] == "doctor" and "junit" not in argv:
        assert "snap-\\udcff.json" in text, text[:300]
