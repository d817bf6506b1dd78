"""NumPy's C ABI, per Python environment: a framework built against NumPy 1 cannot be imported
(or loses its NumPy interop) under NumPy 2 ("A module that was compiled using NumPy 1.x cannot
be run in NumPy 2...", "_ARRAY_API not found"). Which releases are built against NumPy 2 is
compat data (compat/extensions.toml, [[numpy_abi]]); the deep pass's import errors are mapped
here too (`numpy_cause`)."""

from __future__ import annotations

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.per_environment import (
    change,
    env_os,
    environment_check,
    merge,
    pip_step,
)
from gpucheck.compat import parse_version
from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.frameworks import FRAMEWORKS

# What an extension built against NumPy 1 prints when NumPy 2 is installed.
NUMPY1_ERRORS = (
    "compiled using numpy 1.x cannot be run in numpy 2",
    "_array_api not found",
    "numpy.core.multiarray failed to import",
    "numpy.dtype size changed, may indicate binary incompatibility",
)
# Distributions whose wheels link against NumPy's C API -> the package the [[numpy_abi]] rows
# name (the framework's key).
ABI_DISTS = {d: fw.key for fw in FRAMEWORKS for d in fw.numpy_abi_dists}


def _numpy1(ctx: Context, env: PythonEnvironment) -> Step:
    return pip_step(
        ctx,
        env,
        "go back to NumPy 1",
        "pip install 'numpy<2'",
        [change(env, "numpy", requirement="<2")],
    )


def _keep_numpy2(ctx: Context, env: PythonEnvironment, upgrades: list[tuple[str, str]]) -> Step:
    """One pip command for every distribution that needs a build made for NumPy 2."""
    return pip_step(
        ctx,
        env,
        "keep NumPy 2 and install builds made for it",
        "pip install " + " ".join(f"'{name}{spec}'" for name, spec in upgrades),
        [change(env, name, requirement=spec) for name, spec in upgrades],
    )


def numpy_cause(ctx: Context, env: PythonEnvironment, error: str) -> tuple[str, Fix] | None:
    """(what happened, the fix) for an import error that is NumPy's ABI; None otherwise."""
    low = error.lower()
    if not any(marker in low for marker in NUMPY1_ERRORS):
        return None
    numpy = env.dist("numpy")
    have = f"NumPy {numpy.version}" if numpy else "NumPy 2"
    upgrades = [u for d in env.distributions if (u := _upgrade(ctx, env, d)) is not None]
    fix = Fix.of(_numpy1(ctx, env), OR, _keep_numpy2(ctx, env, upgrades) if upgrades else None)
    return f"a module built against NumPy 1 cannot run under {have}", fix


def _row_says_numpy1(ctx: Context, env: PythonEnvironment, dist: Distribution) -> str | None:
    """Why this release is built against NumPy 1 (the compat row), or None."""
    package = ABI_DISTS.get(dist.name)
    row = ctx.compat.extensions.numpy_abi(package, env_os(ctx, env)) if package else None
    version = parse_version(dist.version.split("+", 1)[0])
    if row is None or version is None:
        return None
    release = ".".join(map(str, version.release[:3]))
    if version < row.numpy2_from:
        return (
            f"{dist.name} {dist.version} predates {package} {row.numpy2_from}, the first "
            f"built against NumPy 2 ({row.source})"
        )
    if release in row.numpy1_builds:
        return (
            f"{dist.name} {dist.version} on {row.platform} is built against NumPy 1 ({row.source})"
        )
    return None


def _upgrade(ctx: Context, env: PythonEnvironment, dist: Distribution) -> tuple[str, str] | None:
    """(distribution, requirement) of the first build of it made for NumPy 2."""
    if _row_says_numpy1(ctx, env, dist) is None:
        return None
    package = ABI_DISTS[dist.name]
    row = ctx.compat.extensions.numpy_abi(package, env_os(ctx, env))
    if row is None:
        return None
    floor = row.numpy2_from
    current = parse_version(dist.version.split("+", 1)[0])
    if current is not None and current >= floor:  # a NumPy-1 build of a later release
        floor = parse_version(f"{current.major}.{current.minor}.{current.micro + 1}") or floor
    return dist.name, f">={floor}"


@environment_check("frameworks.numpy-abi", "frameworks are built for the installed NumPy's C ABI")
def numpy_abi(ctx: Context, env: PythonEnvironment) -> Outcome | None:
    numpy = env.dist("numpy")
    have = parse_version(numpy.version) if numpy else None
    users = [d for d in env.distributions if d.name in ABI_DISTS]
    if numpy is None or have is None or not users:
        return None
    if have.major < 2:
        return Outcome.passed(
            f"NumPy {numpy.version}: NumPy 1 runs builds made for NumPy 1 and 2",
            ", ".join(f"{d.name} {d.version}" for d in users),
        )
    items: list[tuple[str | None, Outcome | None]] = []
    for dist in users:
        why = _row_says_numpy1(ctx, env, dist)
        if why is None:
            items.append((None, Outcome.passed(f"{dist.name} {dist.version} runs on NumPy 2")))
            continue
        upgrade = _upgrade(ctx, env, dist)
        fix = Fix.of(_numpy1(ctx, env), OR, _keep_numpy2(ctx, env, [upgrade]) if upgrade else None)
        items.append(
            (
                None,
                Outcome.fail(
                    f"{dist.name} {dist.version} is built against NumPy 1 and NumPy "
                    f"{numpy.version} is installed: importing it fails ('_ARRAY_API not found', "
                    "'compiled using NumPy 1.x cannot be run in NumPy 2')",
                    why,
                    fix=fix,
                ),
            )
        )
    return merge(items)
