"""Text from a snapshot is data, never code: a host name, an interpreter's path, a package's
name or version, a library folder or a device's group from another machine's file may hold
line breaks, `$(...)`, backticks, `;`, `|`, `&`, quotes, `${IFS}`, escape sequences or bidi
controls. Whatever it holds, every command gpucheck prints or writes must pass it as ONE
argument and run nothing, and no output a terminal shows may carry a raw control character.

The proof runs what a person would run: the `fix --format sh` plan under `sh`, and each fix
command (the plan's, the doctor's) under `sh -c`, in a temporary folder whose PATH holds only
stub programs that log their arguments and exit 0; a hostile value's payload calls `pwned`,
whose stub leaves a marker file. Snapshots come from the test builders and the real cases.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
import shlex
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import builders
import framework_builders as fb
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucheck.compat import load
from gpucheck.fixplan import diagnose, plan_for
from gpucheck.fixplan.render import render_json, render_sh, render_text
from gpucheck.model.snapshot import DeviceNode, NvccFacts, Snapshot
from gpucheck.report.core import Report
from gpucheck.report.formats import FORMATS

COMPAT = load()

# What may never reach a terminal raw: C0 and C1 controls, DEL, the bidi marks, embeddings,
# overrides and isolates, and the line and paragraph separators.
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")

# The pieces a hostile value is made of. Each payload calls `pwned` (or `touch`): either stub
# leaves the marker. No "/" (a value may be a path's one component) and no NUL (no file holds
# one).
PARTS = [
    "\n",
    "\r",
    "\npwned #",
    "$(pwned)",
    "`pwned`",
    ";pwned;",
    "|pwned",
    "&pwned&",
    "&& pwned",
    "|| pwned",
    "'",
    '"',
    "'$(pwned)'",
    '"$(pwned)"',
    "${IFS}pwned${IFS}",
    "$(touch${IFS}PWNED)",
    "\x1b[31m",
    "\x1b]0;title\x07",
    "\x9b2J",
    "\x7f",
    "\u202e",
    "\u2066",
    "\u200f",
    "\u2028",
    " ",
    "\t",
    "\\",
    "#",
    "*",
    "~",
    "<x",
    ">x",
    "(",
    ")",
    "{",
    "}",
    "!",
    "=",
    "-",
    "x",
]
hostile = st.lists(st.sampled_from(PARTS), min_size=1, max_size=6).map("".join)

STUB = '#!/bin/sh\nprintf \'%s\\0\' "$#" "$0" "$@" >> "$STUB_LOG"\nexit 0\n'
MARKER_STUB = '#!/bin/sh\n: > "$PWNED_MARKER"\n' + STUB.split("\n", 1)[1]
# The programs fix commands start with (a name not here fails the run: "not found").
PROGRAMS = [
    "sudo",
    "pip",
    "pip3",
    "python",
    "python3",
    "conda",
    "uv",
    "apt",
    "apt-get",
    "apt-cache",
    "dnf",
    "nvidia-smi",
    "modprobe",
    "rmmod",
    "systemctl",
    "usermod",
    "tee",
    "ldconfig",
    "ps",
    "gpucheck",
    "git",
    "make",
    "curl",
    "lsof",
    "dkms",
    "update-initramfs",
    "dracut",
    "nvidia-ctk",
    "nvidia-container-cli",
    "nvidia-modprobe",
    "docker",
    "podman",
    "mokutil",
    "reboot",
    "nvidia-persistenced",
    "ubuntu-drivers",
    "grep",
    "dmesg",
    "journalctl",
    "ls",
    "cat",
    "find",
    "dcgmi",
    "nvcc",
    "env",
]
SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")"}


def escaped(text: str) -> str:
    """The escape the house rule asks for, written out here: \\xNN below U+0100, else
    \\uNNNN."""
    return UNSAFE.sub(
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"
        ),
        text.replace("\n", "\\x0a"),
    )


# --- the sandbox ---------------------------------------------------------------------------


class Sandbox:
    """A folder to run commands in: PATH with stubs only, HOME and the cwd inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.home = root / "home"
        self.work = root / "work"
        self.log = root / "stub.log"
        self.marker = root / "PWNED-MARKER"
        for folder in (self.bin, self.home, self.work):
            folder.mkdir()
        for name in PROGRAMS:
            self._write(self.bin / name, STUB)
        for name in ("pwned", "touch"):
            self._write(self.bin / name, MARKER_STUB)

    @staticmethod
    def _write(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def provide(self, command: str) -> None:
        """A stub for each program `command` runs by path (an interpreter, ~/venvs/X/bin/pip,
        ./nccl-tests/...), found by Python's own shell lexer."""
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:
            return  # unbalanced quotes: sh will say so, and the run fails
        first = True
        for word in words:
            if word in SEPARATORS:
                first = True
                continue
            if first and re.fullmatch(r"(python|pip)[0-9.]*", word):
                self._write(self.bin / word, STUB)  # python3.12 -m venv ...
            elif first and "/" in word:
                if word.startswith("~/"):
                    path = self.home / word[2:]
                elif word.startswith("/"):
                    path = Path(word)
                else:
                    path = self.work / word
                if self.root in path.parents and not path.exists():
                    self._write(path, STUB)
            first = False

    def run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": str(self.bin),
            "HOME": str(self.home),
            "USER": "someone",
            "STUB_LOG": str(self.log),
            "PWNED_MARKER": str(self.marker),
        }
        return subprocess.run(
            argv, cwd=self.work, env=env, capture_output=True, text=True, timeout=30, check=False
        )

    def calls(self) -> list[list[str]]:
        """Every stub call: [$0, arguments...]."""
        if not self.log.exists():
            return []
        fields = self.log.read_bytes().split(b"\0")
        out, i = [], 0
        while i < len(fields) - 1:
            count = int(fields[i])
            out.append(
                [f.decode("utf-8", "surrogateescape") for f in fields[i + 1 : i + count + 2]]
            )
            i += count + 2
        return out

    def assert_nothing_ran(self, what: str, result: subprocess.CompletedProcess[str]) -> None:
        assert not self.marker.exists(), f"{what}: a payload ran\n{result.stderr}"
        ran = [c for c in self.calls() if Path(c[0]).name in ("pwned", "touch")]
        assert not ran, f"{what}: a payload ran: {ran}"
        assert result.returncode == 0, f"{what}: exit {result.returncode}: {result.stderr}"


@pytest.fixture
def sandbox() -> Iterator[Callable[[], Sandbox]]:
    """A fresh sandbox per call (hypothesis runs many examples in one test call)."""
    folders: list[tempfile.TemporaryDirectory[str]] = []

    def make() -> Sandbox:
        folders.append(tempfile.TemporaryDirectory(prefix="gpucheck-shellsafe-"))
        return Sandbox(Path(folders[-1].name).resolve())

    yield make
    for folder in folders:
        folder.cleanup()


# --- the snapshots -----------------------------------------------------------------------------


def _two_envs(root: Path, h: str) -> tuple[Snapshot, list[str]]:
    """A CPU torch beside a CUDA one on an H100: each environment's fix names its own
    interpreter, whose path holds the hostile value."""
    cpu = fb.torch_cpu(fb.environment(f"{root}/env{h}"))
    cuda = fb.torch_cu124(fb.environment(f"{root}/other"))
    snap = fb.on(builders.h100_node(1), cpu, cuda)
    return snap, [cpu.python]


def _nvcc(root: Path, h: str) -> tuple[Snapshot, list[str]]:
    """An nvcc that does not say its version: the fix runs it by its path."""
    snap = builders.h100_node(1)
    path = f"{root}/cuda{h}/bin/nvcc"
    snap.cuda.nvcc = NvccFacts(path=path, version=None, error="exit 1")
    return snap, [path]


def _cudnn(root: Path, h: str) -> tuple[Snapshot, list[str]]:
    """A cuDNN copy that does not load, from a wheel: the fix reinstalls name==version."""
    snap = builders.h100_node(1)
    copy = builders.library("cudnn", f"/opt/lib{h}/libcudnn.so.9", "9.1.0")
    copy.load_error = "cannot open"
    copy.package = f"nvidia-cudnn-cu12 9.1.0{h}"
    snap.cudnn.libraries = [copy]
    return snap, [f"nvidia-cudnn-cu12==9.1.0{h}"]


def _group(root: Path, h: str) -> tuple[Snapshot, list[str]]:
    """Device nodes this user cannot open: the fix adds the user to their group."""
    snap = builders.h100_node(1)
    snap.system.device_nodes[0] = DeviceNode(
        "/dev/nvidiactl", True, False, False, "crw-rw----", f"video{h}"
    )
    return snap, [f"video{h}"]


def _host(root: Path, h: str) -> tuple[Snapshot, list[str]]:
    """The user's report: a host name that ends the plan's header comment."""
    snap, _ = _two_envs(root, "")
    snap.system.hostname = f"node7{h}"
    return snap, []


TARGETED = {"env": _two_envs, "nvcc": _nvcc, "cudnn": _cudnn, "group": _group, "host": _host}


def _case(case: dict[str, Any], root: Path) -> Snapshot:
    from test_cases import snapshot_for

    return msgspec.convert(snapshot_for(case), Snapshot)


def _case_snapshots() -> list[Callable[[Path], Snapshot]]:
    """Every real case's snapshot (tests/cases), as test_cases builds it."""
    from test_cases import load_cases

    return [functools.partial(_case, case) for case in load_cases()]


BASES: list[Callable[[Path], Snapshot]] = [
    lambda root: _two_envs(root, "")[0],
    lambda root: _nvcc(root, "")[0],
    lambda root: _cudnn(root, "")[0],
    lambda root: _group(root, "")[0],
    *_case_snapshots(),
]


def _rooted(snap: Snapshot, root: Path) -> None:
    """Interpreters and nvcc inside the sandbox, so a fix that runs one by path finds a stub."""
    for n, env in enumerate(snap.environments):
        if not env.python.startswith(str(root)):
            env.python = f"{root}/py{n}/bin/python"
    nvcc = snap.cuda.nvcc
    if nvcc is not None and not nvcc.path.startswith(str(root)):
        nvcc.path = f"{root}/cuda/bin/nvcc"


def _every_string(obj: Any, change: Callable[[str], str]) -> None:
    """Apply `change` to every plain string field of a snapshot, at any depth."""
    if isinstance(obj, msgspec.Struct):
        for name in obj.__struct_fields__:
            value = getattr(obj, name)
            if type(value) is str:
                setattr(obj, name, change(value))
            else:
                _every_string(value, change)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            if type(value) is str:
                obj[i] = change(value)
            else:
                _every_string(value, change)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if type(value) is str:
                obj[key] = change(value)
            else:
                _every_string(value, change)


# --- the outputs ---------------------------------------------------------------------------


def _outputs(snap: Snapshot) -> dict[str, str]:
    """Every output a person reads or runs, of the doctor and of fix, as text."""
    findings = diagnose(snap, COMPAT)
    report = Report(snap, findings, from_file="node7.json")
    out = {}
    for name, renderer in FORMATS.items():
        stream = io.StringIO()
        renderer(report, stream, True)
        out[f"doctor {name}"] = stream.getvalue()
    plan = plan_for(snap, findings, "node7.json")
    for name, plan_renderer in (("sh", render_sh), ("text", render_text), ("json", render_json)):
        stream = io.StringIO()
        plan_renderer(plan, stream)
        out[f"fix {name}"] = stream.getvalue()
    return out


def _commands(doctor_json: str) -> list[str]:
    """Every fix command of a doctor report, of every option (the `fix:` lines show them)."""
    return [
        step["command"]
        for finding in json.loads(doctor_json)["findings"]
        for step in ((finding.get("fix") or {}).get("steps") or [])
        if step.get("command")
    ]


def _check(box: Sandbox, snap: Snapshot) -> tuple[dict[str, str], list[list[str]]]:
    """Run everything; assert nothing ran and nothing raw reaches a terminal. Returns the
    outputs and the stubs' calls from the sh plan."""
    outputs = _outputs(snap)
    plan = outputs["fix sh"]
    commands = [s["command"] for s in json.loads(outputs["fix json"])["steps"] if s["command"]]
    assert not [c for c in commands if c.startswith("kill ")], "a plan that signals processes"
    for command in commands:
        box.provide(command)
    script = box.root / "plan.sh"
    script.write_text(plan)
    box.assert_nothing_ran("fix --format sh", box.run(["/bin/sh", str(script)]))
    plan_calls = box.calls()

    for name in ("doctor text", "doctor junit", "doctor prometheus", "fix text"):
        for line in outputs[name].split("\n"):
            assert not UNSAFE.search(line), f"{name}: raw control character in {line!r}"
    printed = [
        ln.removeprefix("    $ ")
        for ln in outputs["fix text"].splitlines()
        if ln.startswith("    $ ")
    ]
    doctor_commands = _commands(outputs["doctor json"])
    for command in doctor_commands:
        assert escaped(command) in outputs["doctor text"], f"the doctor does not show {command!r}"
    for command in [*printed, *doctor_commands]:
        box.provide(command)
        box.assert_nothing_ran(command, box.run(["/bin/sh", "-c", command]))
    for name in ("doctor json", "fix json"):
        json.loads(outputs[name])  # valid whatever the values hold
        assert not UNSAFE.search(outputs[name].replace("\n", ""))
    return outputs, plan_calls


# --- the tests -------------------------------------------------------------------------------


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(h=hostile, target=st.sampled_from(sorted(TARGETED)))
def test_a_hostile_value_reaches_its_command_as_one_argument(
    sandbox: Callable[[], Sandbox], h: str, target: str
) -> None:
    """A value that reaches a command arrives whole, as one argument, and runs nothing."""
    box = sandbox()
    snap, expected = TARGETED[target](box.root, h)
    outputs, calls = _check(box, snap)
    arguments = [arg for call in calls for arg in call]
    for value in expected:
        assert value in arguments, f"{value!r} is not one argument of any call: {calls}"
    header = outputs["fix sh"].splitlines()[:4]
    assert header[0] == "#!/bin/sh" and header[3] == "set -e"
    assert all(line.startswith("# ") for line in header[1:3]), header


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    h=hostile,
    base=st.integers(0, len(BASES) - 1),
    which=st.randoms(use_true_random=False),
)
def test_hostile_strings_anywhere_in_a_snapshot_run_nothing(
    sandbox: Callable[[], Sandbox], h: str, base: int, which: Any
) -> None:
    """Any string field of a snapshot (from the builders or a real case), with the hostile
    value added: every output stays free of raw control characters, and the plan and every
    fix command run nothing but their programs."""
    _anywhere(sandbox(), h, base, which)


@pytest.mark.slow
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    h=hostile,
    base=st.integers(0, len(BASES) - 1),
    which=st.randoms(use_true_random=False),
)
def test_hostile_strings_anywhere_in_many_snapshots_run_nothing(
    sandbox: Callable[[], Sandbox], h: str, base: int, which: Any
) -> None:
    """The same, over many more examples."""
    _anywhere(sandbox(), h, base, which)


def _anywhere(box: Sandbox, h: str, base: int, which: Any) -> None:
    snap = BASES[base](box.root)
    _rooted(snap, box.root)
    share = which.choice([0.1, 0.5, 1.0])
    _every_string(snap, lambda value: value + h if which.random() < share else value)
    _check(box, snap)


def test_the_user_s_report_is_now_a_comment_and_a_quoted_argument(
    sandbox: Callable[[], Sandbox],
) -> None:
    """The report as filed: a hostname that ended the header comment, interpreter paths with
    $(...) and ${IFS}; the plan runs the interpreter by its exact path and nothing else."""
    box = sandbox()
    python = f"{box.root}/opt/env x/bin/python$(touch PWNED2)"
    other = f"{box.root}/opt/x;touch${{IFS}}PWNED3;/bin/python"
    cpu = fb.torch_cpu(fb.environment(python.removesuffix("/bin/python")))
    cpu.python = python
    cuda = fb.torch_cpu(fb.environment(other.removesuffix("/bin/python")))
    snap = fb.on(builders.h100_node(1), cpu, cuda)
    snap.system.hostname = "node7\ntouch PWNED\n#"
    outputs, calls = _check(box, snap)
    assert (
        "# gpucheck fix plan (from node7.json, host node7\\x0atouch PWNED\\x0a#,"
        in (outputs["fix sh"])
    )
    assert [python, "-m", "pip"] in [call[:3] for call in calls]
    assert [other, "-m", "pip"] in [call[:3] for call in calls]
    assert not list(box.work.glob("PWNED*"))


def test_mcp_answers_carry_commands_that_run_nothing(
    sandbox: Callable[[], Sandbox], tmp_path: Path
) -> None:
    """The MCP server's doctor and fix answers (the real commands, as the server runs them)
    on a hostile snapshot: their commands run nothing."""
    from gpucheck.mcp.commands import doctor_argv, fix_plan_argv, run_command
    from gpucheck.model.snapshot import dumps

    box = sandbox()
    h = "\n$(pwned)`pwned`;pwned;'\"${IFS}\x1b[2J\u202e"
    snap, _ = _two_envs(box.root, h)
    snap.system.hostname = f"node7{h}"
    path = tmp_path / "node7.json"
    path.write_text(dumps(snap))
    doctor = run_command(doctor_argv(str(path), None, False, False, []))
    plan = run_command(fix_plan_argv(str(path), None))
    commands = _commands(json.dumps(doctor)) + [s["command"] for s in plan["steps"] if s["command"]]
    assert any(f"{box.root}/env{h}/bin/python" in c or "env" in c for c in commands)
    for command in commands:
        box.provide(command)
        box.assert_nothing_ran(command, box.run(["/bin/sh", "-c", command]))
    interpreters = {call[0] for call in box.calls()}
    assert f"{box.root}/env{h}/bin/python" in interpreters
    assert os.path.exists(box.log)


@pytest.mark.parametrize(
    ("python", "command"),
    [
        (r"C:\Users\me\venv\Scripts\python.exe", r"C:\Users\me\venv\Scripts\python.exe -m pip"),
        (r"C:\Program Files\Py\python.exe", r"& 'C:\Program Files\Py\python.exe' -m pip"),
        ("C:\\it\u2019s;$(x)\\python.exe", "& 'C:\\it\u2019\u2019s;$(x)\\python.exe' -m pip"),
        ("/opt/env x/bin/python$(touch P)", "'/opt/env x/bin/python$(touch P)' -m pip"),
        ("/opt/it's/bin/python", "'/opt/it'\"'\"'s/bin/python' -m pip"),
        ("/usr/bin/python3", "/usr/bin/python3 -m pip"),
    ],
)
def test_an_interpreter_is_one_word_of_its_own_shell(python: str, command: str) -> None:
    """POSIX paths by sh's rule; a Windows path by PowerShell's (a quote doubled, the
    typographic ones too, and `&` to run a quoted path)."""
    from gpucheck.checks.context import interpreter_pip

    assert interpreter_pip(python) == command


def test_a_pip_step_with_a_quoted_interpreter_is_still_an_installer_step() -> None:
    """--apply runs pip steps whose interpreter is quoted (sh's or PowerShell's way); a
    command with anything else in it stays printed only."""
    from gpucheck.fixplan.plan import installer_commands

    assert installer_commands(r"& 'C:\Program Files\Py\python.exe' -m pip install x==1") == [
        ["install", "x==1"]
    ]
    assert installer_commands("'/opt/env x/bin/python' -m pip install 'a<2'") == [
        ["install", "a<2"]
    ]
    assert installer_commands("'/opt/x;y/bin/python' -m pip install a; touch P") is None


def test_a_companion_pinned_with_the_new_torch_is_quoted_once() -> None:
    """torchvision beside a nightly torch on a Pascal GPU: the fix installs another release
    line with the torchvision paired to it, as one word of the command (not quoted twice)."""
    from more_builders import the

    env = fb.with_torch(fb.environment(), "2.10.0.dev20251101+cu130", "13.0")
    fb.add(env, "torchvision", "0.25.0.dev20251101+cu130", ["torch==2.10.0.dev20251101"])
    f = the(fb.on(fb.pascal_workstation(), env), "torch.arch-support")
    assert f.fix is not None
    words = shlex.split(f.fix.commands[0])
    assert words[:5] == ["pip", "uninstall", "-y", "torch", "&&"]
    assert [w for w in words if w.startswith("torchvision==0.")], words
    assert not [w for w in words if "'" in w], words


def test_the_user_s_command_line_writes_a_plan_that_runs_nothing(
    sandbox: Callable[[], Sandbox], tmp_path: Path
) -> None:
    """`gpucheck fix --from node7.json --format sh -o fix.sh`, as reported, then `sh fix.sh`;
    and the text plan on stdout carries no raw escape sequence."""
    from conftest import run_gpucheck

    from gpucheck.model.snapshot import dumps

    box = sandbox()
    snap, _ = _two_envs(box.root, "$(touch PWNED2)\x1b]0;x\x07")
    snap.system.hostname = "node7\ntouch PWNED\n#"
    source = tmp_path / "node7.json"
    source.write_text(dumps(snap))
    plan = box.root / "fix.sh"
    done = run_gpucheck("fix", "--from", str(source), "--format", "sh", "-o", str(plan))
    assert done.returncode == 0, done.stderr
    assert plan.read_text().splitlines()[3] == "set -e"
    for step in json.loads(run_gpucheck("fix", "--from", str(source), "--json").stdout)["steps"]:
        if step["command"]:
            box.provide(step["command"])
    box.assert_nothing_ran("sh fix.sh", box.run(["/bin/sh", str(plan)]))
    text = run_gpucheck("fix", "--from", str(source)).stdout
    assert "host node7\\x0atouch PWNED\\x0a#" in text
    assert "\x1b" not in text and "\\x1b]0;x\\x07" in text
