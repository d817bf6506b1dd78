"""Python environments and the per-environment verdict: which interpreter, OS and Python an
environment has, and how one verdict per environment becomes one finding (`framework_check`).

An environment is one interpreter (`Snapshot.environments`). Every framework check judges each
environment that has its framework and names it (in `subjects`, and in the evidence when there
are several); a check with no environment holding its framework has nothing to say.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

from packaging.version import Version

from gpucheck.checks.context import Context, interpreter_pip, on_windows
from gpucheck.checks.registry import check
from gpucheck.compat import parse_version
from gpucheck.compat.frameworks import TfRelease, TorchRelease, major_minor
from gpucheck.model.environments import FrameworkRuntime, PythonEnvironment
from gpucheck.model.finding import Outcome, Subjects, severity
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.layers import Layer

# --- environments ------------------------------------------------------------------------------


def many_envs(ctx: Context) -> bool:
    return len(ctx.snapshot.environments) > 1


def env_os(ctx: Context, env: PythonEnvironment) -> str:
    """linux | windows | darwin | ...: the environment's sys.platform, else the machine's OS."""
    platform = (env.platform or "").lower()
    if platform.startswith("win"):
        return "windows"
    if platform.startswith("linux"):
        return "linux"
    if platform:
        return platform
    return (ctx.snapshot.system.os or "linux").lower()


def compat_os(ctx: Context, env: PythonEnvironment) -> str:
    """The OS column of the driver tables: windows or linux."""
    return "windows" if env_os(ctx, env) == "windows" else "linux"


def linux_x86_64(ctx: Context, env: PythonEnvironment) -> bool:
    """The compat data's per-wheel facts (compiled architectures, pip pins) are for these."""
    return env_os(ctx, env) == "linux" and ctx.snapshot.system.arch.lower() in ("x86_64", "amd64")


def python_mm(env: PythonEnvironment) -> Version | None:
    return major_minor(env.version) if env.version else None


def in_range(py: Version, low: Version | None, high: Version | None) -> bool:
    lo, hi = major_minor(low), major_minor(high)
    return (lo is None or py >= lo) and (hi is None or py <= hi)


def python_support(
    name: str,
    env: PythonEnvironment,
    version: str | None,
    release: Callable[[str], TorchRelease | TfRelease | None],
    says: str,
    package: str,
    other: Callable[[Version], Step | None],
) -> Outcome:
    """A framework's verdict on the environment's Python: the framework's `version` against
    its row in the compat data (`release` finds it). `says` words the span of Pythons the row
    supports ({version}, {low}, {high}); `other` is the step that installs a release that
    supports this Python, if any (see python_unsupported)."""
    py = python_mm(env)
    if py is None or version is None:
        return Outcome.skip(f"{name}: the environment's Python version is not known")
    rel = release(version)
    if rel is None or (rel.python_min is None and rel.python_max is None):
        return Outcome.skip(f"{name}: its supported Pythons are not in the compat data")
    low, high = rel.python_min or "?", rel.python_max or "?"
    span = says.format(version=rel.version, low=low, high=high)
    if in_range(py, rel.python_min, rel.python_max):
        return Outcome.passed(f"{name} supports Python {py}", span)
    return python_unsupported(name, env, py, span, (low, high), package, other(py))


def python_unsupported(
    name: str,
    env: PythonEnvironment,
    py: Version,
    span: str,
    supported: tuple[object, object],
    package: str,
    other: Step | None,
) -> Outcome:
    """A framework on a Python it has no build for: make a venv with the newest Python it
    supports (`supported`: lowest, highest), or `other` (a release that supports this one)."""
    low, high = supported
    return Outcome.fail(
        f"{name} does not support this environment's Python {py}",
        f"{span} (compat data); this environment runs {env.version} ({env.python})",
        fix=Fix.of(
            Step.run(
                f"create the environment with a Python {low} to {high}, then reinstall "
                f"{package} there",
                f"python{high} -m venv .venv",
            ),
            OR,
            other,
        ),
    )


# (Patterns as text: re compiles one on first use, not at every start-up.)
_PIP = r"(?<![\w./\\-])(?<!-m )pip (?=install|uninstall)"


def pip(ctx: Context, env: PythonEnvironment, command: str) -> str:
    """A pip command as the user types it for this environment: plain `pip` when it is the only
    one (the active one), else that interpreter's own pip, so the fix lands where it should.
    Only a `pip` that is a command word is replaced: one inside a quoted word is a value (a
    package string from the snapshot may hold " pip install"), and rewriting it would put
    the interpreter's own quotes inside another word's."""
    if not (many_envs(ctx) or env.origin == "--python"):
        return command
    return rewrite_pip(command, interpreter_pip(env.python, on_windows(ctx)))


def rewrite_pip(command: str, own_pip: str) -> str:
    """`command` with each `pip` that is a command word (not inside a quoted value) spelt
    `own_pip`."""
    outside = unquoted(command)
    return re.sub(_PIP, lambda m: own_pip + " " if m.start() in outside else m.group(), command)


def unquoted(command: str) -> set[int]:
    """The offsets of `command` outside any sh quoting ('...', "...", a backslash's next
    character): where a word of the command itself, not of a value, may start."""
    found: set[int] = set()
    quote = ""
    escaped = False
    for i, char in enumerate(command):
        if escaped:
            escaped = False
        elif quote:
            if char == quote or (quote == '"' and char == "\\"):
                quote = "" if char == quote else quote
                escaped = char == "\\"
        elif char in "'\"":
            quote = char
        elif char == "\\":
            escaped = True
        else:
            found.add(i)
    return found


def pip_step(
    ctx: Context,
    env: PythonEnvironment,
    text: str,
    command: str,
    changes: Iterable[Change] = (),
    layer: Layer | None = None,
) -> Step:
    """A pip command for this environment (see pip) as a fix step, naming the interpreter it
    is for and the distributions it changes."""
    return Step.run(
        text, pip(ctx, env, command), Tool.PIP, changes=changes, environment=env.python, layer=layer
    )


def change(
    env: PythonEnvironment,
    name: str,
    to_version: str | None = None,
    *,
    requirement: str | None = None,
    remove: bool = False,
) -> Change:
    """A distribution this environment's step changes, from the version installed here."""
    dist = env.dist(name)
    return Change(name, dist.version if dist else None, to_version, requirement, remove)


def runtime(env: PythonEnvironment, framework: str) -> FrameworkRuntime | None:
    """What the deep pass saw when importing `framework` here (None: not imported)."""
    found = [r for r in env.runtimes if r.framework == framework]
    return found[-1] if found else None


def version_key(text: str | None) -> Version:
    return parse_version(text or "") or Version("0")


# --- one verdict per environment, one finding per check -------------------------------------------


def merge(items: Iterable[tuple[str | None, Outcome | None]]) -> Outcome | None:
    """The worst outcome decides status, title, fix and subjects; the others' titles and
    everyone's evidence follow, each line prefixed with its label (where there is one)."""
    found = [(label, v) for label, v in items if v is not None]
    if not found:
        return None

    def tag(label: str | None, line: str) -> str:
        return f"{label}: {line}" if label else line

    found.sort(key=lambda item: -severity(item[1].status))
    worst = found[0][1].status
    top = [v for _, v in found if v.status is worst]
    title = top[0].title + (f" (and {len(top) - 1} more)" if len(top) > 1 else "")
    first_label, first = found[0]
    evidence = [tag(first_label, line) for line in first.evidence]
    for label, v in found[1:]:
        evidence += [tag(label, v.title), *(tag(label, line) for line in v.evidence)]
    subjects = Subjects()
    for v in top:
        subjects = subjects.merged(v.subjects)
    fix = Fix.joined([v.fix for v in top if v.fix])
    return Outcome(worst, title, evidence, fix, subjects)


def env_label(ctx: Context, env: PythonEnvironment) -> str | None:
    return env.python if many_envs(ctx) else None


def combine(
    ctx: Context, verdicts: Iterable[tuple[PythonEnvironment, Outcome | None]]
) -> Outcome | None:
    """One finding from one verdict per environment (see merge); the interpreter is a subject
    of its verdict, and named on every evidence line when there is more than one."""

    def named(env: PythonEnvironment, v: Outcome | None) -> Outcome | None:
        if v is not None:
            v.subjects = v.subjects.merged(Subjects(environments=[env.python]))
        return v

    return merge((env_label(ctx, env), named(env, v)) for env, v in verdicts)


F = TypeVar("F")
EnvCheck = Callable[[Context, PythonEnvironment, F], "Outcome | None"]


def framework_check(
    id: str, summary: str, facts: Callable[[PythonEnvironment], F | None]
) -> Callable[[EnvCheck[F]], EnvCheck[F]]:
    """Register a framework check written for one environment: it runs for every environment
    where `facts` finds its framework, and the verdicts combine into one finding."""

    def register(func: EnvCheck[F]) -> EnvCheck[F]:
        def run(ctx: Context) -> Outcome | None:
            verdicts = []
            for env in ctx.snapshot.environments:
                found = facts(env)
                if found is not None:
                    verdicts.append((env, func(ctx, env, found)))
            return combine(ctx, verdicts)

        run.__module__ = func.__module__  # the module that registers it (registry.select)
        check(id, summary)(run)
        return func

    return register


def environment_check(
    id: str, summary: str
) -> Callable[[Callable[[Context, PythonEnvironment], Outcome | None]], object]:
    """Register a check of every environment, whatever frameworks it holds."""

    def register(func: Callable[[Context, PythonEnvironment], Outcome | None]) -> object:
        def judge(ctx: Context, env: PythonEnvironment, _: PythonEnvironment) -> Outcome | None:
            return func(ctx, env)

        judge.__module__ = func.__module__
        return framework_check(id, summary, _every)(judge)

    return register


def _every(env: PythonEnvironment) -> PythonEnvironment:
    return env
