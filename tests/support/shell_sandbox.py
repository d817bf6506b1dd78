"""The sandbox and the hostile snapshots of the shell-safety tests (test_shell_safety.py):
a folder whose PATH holds only stub programs that log their arguments and exit 0 (`pwned` and
`touch` also leave a marker), the hostile values, and every output of the doctor and of fix
for a snapshot, run and checked."""

from __future__ import annotations

import functools
import io
import json
import re
import shlex
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import strategies as st

from gpucheck.compat import load
from gpucheck.fixplan import diagnose, plan_for
from gpucheck.fixplan.render import render_json, render_sh, render_text
from gpucheck.model.snapshot import DeviceNode, NvccFacts, Snapshot
from gpucheck.report.core import Report
from gpucheck.report.formats import FORMATS
from support import builders
from support import framework_builders as fb

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


# --- the snapshots -----------------------------------------------------------------------------


def two_envs(root: Path, h: str) -> tuple[Snapshot, list[str]]:
    """A CPU torch beside a CUDA one on an H100: each environment's fix names its own
    interpreter, whose path holds the hostile value."""
    cpu = fb.torch_cpu(fb.environment(f"{root}/env{h}"))
    cuda = fb.torch_cu124(fb.environment(f"{root}/other"))
    snap = fb.on(builders.h100_node(1), cpu, cuda)
    return snap, [cpu.python]


def unversioned_nvcc(root: Path, h: str) -> tuple[Snapshot, list[str]]:
    """An nvcc that does not say its version: the fix runs it by its path."""
    snap = builders.h100_node(1)
    path = f"{root}/cuda{h}/bin/nvcc"
    snap.cuda.nvcc = NvccFacts(path=path, version=None, error="exit 1")
    return snap, [path]


def broken_cudnn(root: Path, h: str) -> tuple[Snapshot, list[str]]:
    """A cuDNN copy that does not load, from a wheel: the fix reinstalls name==version."""
    snap = builders.h100_node(1)
    copy = builders.library("cudnn", f"/opt/lib{h}/libcudnn.so.9", "9.1.0")
    copy.load_error = "cannot open"
    copy.package = f"nvidia-cudnn-cu12 9.1.0{h}"
    snap.cudnn.libraries = [copy]
    return snap, [f"nvidia-cudnn-cu12==9.1.0{h}"]


def closed_device_nodes(root: Path, h: str) -> tuple[Snapshot, list[str]]:
    """Device nodes this user cannot open: the fix adds the user to their group."""
    snap = builders.h100_node(1)
    snap.system.device_nodes[0] = DeviceNode(
        "/dev/nvidiactl", True, False, False, "crw-rw----", f"video{h}"
    )
    return snap, [f"video{h}"]


def hostile_host(root: Path, h: str) -> tuple[Snapshot, list[str]]:
    """The user's report: a host name that ends the plan's header comment."""
    snap, _ = two_envs(root, "")
    snap.system.hostname = f"node7{h}"
    return snap, []


TARGETED = {
    "env": two_envs,
    "nvcc": unversioned_nvcc,
    "cudnn": broken_cudnn,
    "group": closed_device_nodes,
    "host": hostile_host,
}


def case_snapshot(case: dict[str, Any], root: Path) -> Snapshot:
    from support.real_cases import snapshot_for

    return msgspec.convert(snapshot_for(case), Snapshot)


def case_snapshots() -> list[Callable[[Path], Snapshot]]:
    """Every real case's snapshot (tests/cases), as test_cases builds it."""
    from support.real_cases import load_cases

    return [functools.partial(case_snapshot, case) for case in load_cases()]


BASES: list[Callable[[Path], Snapshot]] = [
    lambda root: two_envs(root, "")[0],
    lambda root: unversioned_nvcc(root, "")[0],
    lambda root: broken_cudnn(root, "")[0],
    lambda root: closed_device_nodes(root, "")[0],
    *case_snapshots(),
]


def rooted(snap: Snapshot, root: Path) -> None:
    """Interpreters and nvcc inside the sandbox, so a fix that runs one by path finds a stub."""
    for n, env in enumerate(snap.environments):
        if not env.python.startswith(str(root)):
            env.python = f"{root}/py{n}/bin/python"
    nvcc = snap.cuda.nvcc
    if nvcc is not None and not nvcc.path.startswith(str(root)):
        nvcc.path = f"{root}/cuda/bin/nvcc"


def every_string(obj: Any, change: Callable[[str], str]) -> None:
    """Apply `change` to every plain string field of a snapshot, at any depth."""
    if isinstance(obj, msgspec.Struct):
        for name in obj.__struct_fields__:
            value = getattr(obj, name)
            if type(value) is str:
                setattr(obj, name, change(value))
            else:
                every_string(value, change)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            if type(value) is str:
                obj[i] = change(value)
            else:
                every_string(value, change)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if type(value) is str:
                obj[key] = change(value)
            else:
                every_string(value, change)


# --- the outputs ---------------------------------------------------------------------------


def outputs_of(snap: Snapshot) -> dict[str, str]:
    """Every output a person reads or runs, of the doctor and of fix, as text."""
    findings = diagnose(snap, COMPAT)
    report = Report(snap, findings, from_file="node7.json")
    out = {}
    for name, renderer in FORMATS.items():
        stream = io.StringIO()
        renderer.write(report, stream, True)
        out[f"doctor {name}"] = stream.getvalue()
    plan = plan_for(snap, findings, "node7.json")
    for name, plan_renderer in (("sh", render_sh), ("text", render_text), ("json", render_json)):
        stream = io.StringIO()
        plan_renderer(plan, stream)
        out[f"fix {name}"] = stream.getvalue()
    return out


def commands_of(doctor_json: str) -> list[str]:
    """Every fix command of a doctor report, of every option (the `fix:` lines show them)."""
    return [
        step["command"]
        for finding in json.loads(doctor_json)["findings"]
        for step in ((finding.get("fix") or {}).get("steps") or [])
        if step.get("command")
    ]


def check_everything(box: Sandbox, snap: Snapshot) -> tuple[dict[str, str], list[list[str]]]:
    """Run everything; assert nothing ran and nothing raw reaches a terminal. Returns the
    outputs and the stubs' calls from the sh plan."""
    outputs = outputs_of(snap)
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
    doctor_commands = commands_of(outputs["doctor json"])
    for command in doctor_commands:
        assert escaped(command) in outputs["doctor text"], f"the doctor does not show {command!r}"
    for command in [*printed, *doctor_commands]:
        box.provide(command)
        box.assert_nothing_ran(command, box.run(["/bin/sh", "-c", command]))
    for name in ("doctor json", "fix json"):
        json.loads(outputs[name])  # valid whatever the values hold
        assert not UNSAFE.search(outputs[name].replace("\n", ""))
    return outputs, plan_calls
