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

import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import builders
from support import framework_builders as fb
from support.shell_sandbox import (
    BASES,
    TARGETED,
    Sandbox,
    check_everything,
    commands_of,
    every_string,
    hostile,
    rooted,
    two_envs,
)


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
    outputs, calls = check_everything(box, snap)
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
    rooted(snap, box.root)
    share = which.choice([0.1, 0.5, 1.0])
    every_string(snap, lambda value: value + h if which.random() < share else value)
    check_everything(box, snap)


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
    outputs, calls = check_everything(box, snap)
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
    snap, _ = two_envs(box.root, h)
    snap.system.hostname = f"node7{h}"
    path = tmp_path / "node7.json"
    path.write_text(dumps(snap))
    doctor = run_command(doctor_argv(str(path), None, False, False, []))
    plan = run_command(fix_plan_argv(str(path), None))
    commands = commands_of(json.dumps(doctor)) + [
        s["command"] for s in plan["steps"] if s["command"]
    ]
    assert any(f"{box.root}/env{h}/bin/python" in c or "env" in c for c in commands)
    for command in commands:
        box.provide(command)
        box.assert_nothing_ran(command, box.run(["/bin/sh", "-c", command]))
    interpreters = {call[0] for call in box.calls()}
    assert f"{box.root}/env{h}/bin/python" in interpreters
    assert box.log.exists()


def test_the_user_s_command_line_writes_a_plan_that_runs_nothing(
    sandbox: Callable[[], Sandbox], tmp_path: Path
) -> None:
    """`gpucheck fix --from node7.json --format sh -o fix.sh`, as reported, then `sh fix.sh`;
    and the text plan on stdout carries no raw escape sequence."""
    from conftest import run_gpucheck

    from gpucheck.model.snapshot import dumps

    box = sandbox()
    snap, _ = two_envs(box.root, "$(touch PWNED2)\x1b]0;x\x07")
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
