"""Applying a plan's local steps, with a record that makes it undoable.

The record is a folder: `plan.json` (the plan), `before/<n>.txt` (each environment's
`pip freeze --all`, taken before the first step), `journal.json` (every step's state, rewritten
atomically before and after each step, so an interrupted apply leaves a true account) and
`env.sh` (the environment variables the plan sets, for the user to source). `undo` brings each
environment back to its frozen list: what was added is removed, what changed is reinstalled at
its old version.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from msgspec import Struct, field

from gpucheck.fixplan.plan import Plan, PlanStep, installer_commands
from gpucheck.fixplan.render import loads_plan, render_json
from gpucheck.model.fix import Tool
from gpucheck.model.plural import counted, plural
from gpucheck.outputs import replace_atomically


class ApplyError(Exception):
    """A step failed or an input is wrong: one line for the user."""


class RecordError(ApplyError):
    """An apply record (or plan) that cannot be read: bad input, nothing was changed."""


class StepRecord(Struct):
    number: int
    command: str | None
    state: str  # pending | running | done | failed | interrupted | written
    argv: list[str] = field(default_factory=list)  # the commands run, each a shell line
    detail: str | None = None  # a failure's last line of output


class Journal(Struct):
    record: str
    state: str = "started"  # started | done | failed | interrupted | undone
    environments: dict[str, str] = field(default_factory=dict)  # python -> before/<n>.txt
    # those recorded, and so restored, with `uv pip` (a uv-made venv may have no pip)
    uv_environments: list[str] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)


def _write_atomically(path: Path, text: str) -> None:
    # A character UTF-8 cannot hold fails the write (strict), never lands escaped in env.sh.
    replace_atomically(str(path), lambda out: out.write(text), errors="strict")


def save_journal(folder: Path, journal: Journal) -> None:
    from gpucheck.model.decoding import to_dict

    _write_atomically(folder / "journal.json", json.dumps(to_dict(journal), indent=2) + "\n")


def pip_argv(python: str, uv: bool, *args: str) -> list[str]:
    """`PYTHON -m pip ARGS`, or with `uv`, `uv pip ARGS[0] --python PYTHON ARGS[1:]`: the
    environment's own installer (a venv uv made has no pip unless asked for one)."""
    if not uv:
        return [python, "-m", "pip", *args]
    if shutil.which("uv") is None:
        raise ApplyError(
            f"uv is not on PATH: {python}'s environment is recorded and restored with uv pip"
        )
    return ["uv", "pip", args[0], "--python", python, *args[1:]]


def freeze(python: str, uv: bool = False) -> str:
    """The environment's installed distributions, exactly (`pip freeze --all`; uv's freeze
    lists every distribution without it)."""
    args = ("freeze",) if uv else ("freeze", "--all", "--disable-pip-version-check")
    argv = pip_argv(python, uv, *args)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError as exc:  # the interpreter is gone (or never was)
        done = subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: {exc.strerror}")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        how = "uv pip freeze" if uv else "pip freeze"
        raise ApplyError(f"cannot record {python}'s packages ({how}): {last}")
    return done.stdout


def record_refused(folder: Path) -> str | None:
    """Why `folder` cannot take a new apply record (--record), in one line: a file or other
    non-folder, or a folder with something in it; None where it can."""
    try:
        if folder.exists() and not folder.is_dir():
            return f"--record: {folder} is not a folder: name a new folder"
        if folder.is_dir() and any(folder.iterdir()):
            return f"--record: {folder} is not empty: name a new folder"
    except OSError as exc:
        return f"--record: cannot use {folder}: {exc.strerror}"
    return None


def step_argvs(step: PlanStep, default_python: str | None) -> list[list[str]]:
    """The commands a local installer step runs, each aimed at its environment's interpreter."""
    assert step.command is not None
    commands = installer_commands(step.command)
    python = step.environment or default_python
    if commands is None or python is None:
        raise ApplyError(f"step {step.number}: cannot tell which interpreter it is for")
    return [_argv(args, step.tool, python) for args in commands]


def _argv(args: list[str], tool: Tool | None, python: str) -> list[str]:
    if args[0] == "conda":
        prefix = str(Path(python).parent.parent)
        return ["conda", args[1], "--yes", "--prefix", prefix, *args[2:]]
    if args[0] == "uninstall" and "-y" not in args and "--yes" not in args:
        args = [args[0], "-y", *args[1:]]
    if tool is Tool.UV:
        # the step's own --python (install names its environment) gives way to the step's
        rest = [a for i, a in enumerate(args[1:]) if "--python" not in (a, args[i])]
        return ["uv", "pip", args[0], "--python", python, *rest]
    return [python, "-m", "pip", *args, "--disable-pip-version-check"]


def _env_line(command: str) -> str:
    """`export X=Y` / `unset X` as a line for env.sh, quoted for the shell."""
    words = shlex.split(command)
    if words[:1] == ["unset"]:
        return "unset " + " ".join(shlex.quote(w) for w in words[1:])
    name, _, value = words[1].partition("=")
    return f"export {name}={shlex.quote(value)}"


def apply_plan(
    plan: Plan,
    folder: Path,
    default_python: str | None,
    say: Callable[[str], None],
) -> Journal:
    """Run the plan's local steps in order, recording as it goes. Stops at the first failure
    (ApplyError, the journal says what was done); Ctrl-C leaves the journal `interrupted`."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "before").mkdir(exist_ok=True)
    except OSError as exc:
        raise ApplyError(f"cannot make the record folder {folder}: {exc.strerror}") from None
    _write_atomically(folder / "plan.json", _plan_json(plan))
    journal = Journal(record=str(folder))
    local = plan.local_steps
    for step in local:
        journal.steps.append(StepRecord(step.number, step.command, "pending"))
    pythons = {s.environment or default_python for s in local if s.tool is not Tool.ENV}
    by_uv = {s.environment or default_python for s in local if s.tool is Tool.UV}
    for n, python in enumerate(sorted(p for p in pythons if p)):
        name = f"before/{n}.txt"
        (folder / name).write_text(freeze(python, python in by_uv), encoding="utf-8")
        journal.environments[python] = name
        if python in by_uv:
            journal.uv_environments.append(python)
    save_journal(folder, journal)
    try:
        _run_steps(local, journal, folder, default_python, say)
    except KeyboardInterrupt:
        for record in journal.steps:
            if record.state == "running":
                record.state = "interrupted"
        journal.state = "interrupted"
        save_journal(folder, journal)
        raise
    journal.state = "done"
    save_journal(folder, journal)
    return journal


def _run_steps(
    local: list[PlanStep],
    journal: Journal,
    folder: Path,
    default_python: str | None,
    say: Callable[[str], None],
) -> None:
    env_lines: list[str] = []
    for step, record in zip(local, journal.steps, strict=True):
        if step.tool is Tool.ENV:
            assert step.command is not None
            env_lines.append(_env_line(step.command))
            _write_atomically(folder / "env.sh", "\n".join(env_lines) + "\n")
            record.state = "written"
            save_journal(folder, journal)
            say(f"step {step.number}: written to {folder / 'env.sh'} (source it)")
            continue
        argvs = step_argvs(step, default_python)
        record.argv = [shlex.join(argv) for argv in argvs]
        record.state = "running"
        save_journal(folder, journal)
        for argv in argvs:
            say(f"step {step.number}: {shlex.join(argv)}")
            try:
                done = subprocess.run(argv, capture_output=True, text=True, check=False)
            except OSError as exc:
                done = subprocess.CompletedProcess(argv, 127, "", str(exc))
            if done.returncode != 0:
                finished = sum(r.state in ("done", "written") for r in journal.steps)
                lines = (done.stderr or done.stdout).strip().splitlines()
                record.state, record.detail = "failed", lines[-1] if lines else None
                journal.state = "failed"
                save_journal(folder, journal)
                raise ApplyError(
                    f"step {step.number} failed (exit {done.returncode}): "
                    f"{record.detail or 'no output'}; stopped, "
                    f"{counted(finished, 'step')} done "
                    f"(record: {folder}; undo: gpucheck fix --undo {folder})"
                )
        record.state = "done"
        save_journal(folder, journal)


def _plan_json(plan: Plan) -> str:
    import io

    out = io.StringIO()
    render_json(plan, out)
    return out.getvalue()


def read_record(path: str) -> tuple[Path, Plan, Journal]:
    """An apply record (its folder, or its plan.json)."""
    import msgspec

    folder = Path(path)
    if folder.name == "plan.json":
        folder = folder.parent
    try:
        plan = loads_plan((folder / "plan.json").read_bytes())
        journal = msgspec.json.decode((folder / "journal.json").read_bytes(), type=Journal)
    except (FileNotFoundError, NotADirectoryError):  # (a file that is not a record's plan.json)
        raise RecordError(f"{path}: not an apply record (no plan.json and journal.json)") from None
    except (OSError, msgspec.DecodeError) as exc:
        raise RecordError(f"{path}: cannot read the apply record: {exc}") from None
    except ValueError as exc:
        raise RecordError(f"{path}: {exc}") from None
    return folder, plan, journal


def _frozen(text: str) -> dict[str, str]:
    """name -> its freeze line (`name==1.0`, `name @ file://...`, `-e ...`)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-e "):
            name = line.rsplit("#egg=", 1)[-1] if "#egg=" in line else line
        else:
            name = line.split("==")[0].split(" @ ")[0]
        found[name.strip().lower().replace("_", "-")] = line
    return found


def undo(path: str, say: Callable[[str], None]) -> Journal:
    """Each environment back to its frozen list of packages."""
    folder, _, journal = read_record(path)
    for python, name in journal.environments.items():
        uv = python in journal.uv_environments
        before = _frozen((folder / name).read_text(encoding="utf-8"))
        now = _frozen(freeze(python, uv))
        extra = sorted(set(now) - set(before))
        changed = [line for key, line in before.items() if now.get(key) != line]
        if extra:
            say(f"{python}: removing {', '.join(extra)}")
            _run(pip_argv(python, uv, "uninstall", *([] if uv else ["-y"]), *extra))
        if changed:
            say(f"{python}: reinstalling {', '.join(changed)}")
            _run(pip_argv(python, uv, "install", "--no-deps", *_install_args(changed)))
        if not extra and not changed:
            say(f"{python}: already as recorded")
    journal.state = "undone"
    save_journal(folder, journal)
    return journal


def _install_args(lines: list[str]) -> list[str]:
    args: list[str] = []
    for line in lines:
        args += ["-e", line[3:].strip()] if line.startswith("-e ") else [line]
    return args


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = ((done.stderr or done.stdout).strip().splitlines() or ["no output"])[-1]
        raise ApplyError(f"undo: {shlex.join(argv[:4])} ... failed: {last}")


def recheck_lines(plan: Plan, problems_now: set[str], folder: Path) -> list[str]:
    """What the doctor run again after --apply says: the plan's findings gone and remaining;
    and, for those an environment step repairs, that they remain until the written env.sh is
    sourced (the doctor ran in this process's environment, which a file cannot change)."""
    # (a finding the plan lists without planning it, written by a report, is not the plan's)
    ours = [f for f in plan.findings if f.not_planned is None]
    gone = [f.id for f in ours if f.id not in problems_now]
    remain = [f.id for f in ours if f.id in problems_now]
    lines = [
        f"Doctor again: gone: {', '.join(gone) or 'none'}; remain: {', '.join(remain) or 'none'}"
    ]
    by_env = {i for step in plan.local_steps if step.tool is Tool.ENV for i in step.findings}
    waiting = [i for i in remain if i in by_env]
    if waiting:
        source = f"source {shlex.quote(str(folder / 'env.sh'))}"
        lines.append(
            f"{', '.join(waiting)} {plural(len(waiting), 'remains', 'remain')} until the "
            f"environment is set: run `{source}` in your shell (the doctor ran without it)"
        )
    return lines
