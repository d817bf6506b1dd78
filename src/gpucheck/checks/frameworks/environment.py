"""What concerns every framework of one environment: a cuDNN or CUDA runtime on
LD_LIBRARY_PATH that overrides the one the frameworks' wheels bring, and NVIDIA pip packages
two frameworks require in different versions."""

from __future__ import annotations

import posixpath
import shlex

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.environments import env_os, environment_check, pip
from gpucheck.checks.frameworks.packages import (
    GPU_EXTRAS,
    is_package_for,
    requirements_of,
    same_version,
    satisfies,
)
from gpucheck.model.distributions import TF_DISTS
from gpucheck.model.finding import Outcome
from gpucheck.model.snapshot import Distribution, LibraryCopy, PythonEnvironment

Needs = dict[str, list[tuple[Distribution, Requirement]]]  # package -> who requires what


# --- LD_LIBRARY_PATH shadowing pip's libraries ----------------------------------------------------


def _users(ctx: Context, env: PythonEnvironment, package: str) -> list[str]:
    """The distributions of this environment that require `package`."""
    return [
        f"{d.name} {d.version}"
        for d in env.distributions
        if d.requires
        and any(canonicalize_name(r.name) == package for r in requirements_of(ctx, env, d))
    ]


def _inside(env: PythonEnvironment, dist: Distribution, copy: LibraryCopy) -> bool:
    if copy.package and copy.package.split(" ")[0] == dist.name:
        return True
    folders = [*env.site_packages, *([dist.location] if dist.location else [])]
    return any(copy.realpath.startswith(f.rstrip("/") + "/") for f in folders if f)


@environment_check(
    "frameworks.library-shadowing",
    "no cuDNN or CUDA runtime on LD_LIBRARY_PATH overrides the one a framework's wheels bring",
)
def shadowing(ctx: Context, env: PythonEnvironment) -> Outcome | None:
    wheels = [
        (d, lib)
        for d in env.distributions
        for key, lib in (("cudnn", "cudnn"), ("cuda-runtime", "cudart"))
        if is_package_for(d.name, key)
    ]
    if not wheels or env_os(ctx, env) != "linux":
        return None
    run = ctx.snapshot.probe("libraries")
    if run is None or run.status != "ok":
        return Outcome.skip("Not judged: the library copies on this machine were not listed")
    ld = [
        c
        for c in [*ctx.snapshot.cudnn.libraries, *ctx.snapshot.cuda.runtimes]
        if c.origin == "ld_library_path" and c.version
    ]
    hits: list[tuple[Distribution, LibraryCopy]] = []
    for dist, lib in wheels:
        for c in ld:
            if c.name != lib or _inside(env, dist, c) or c.version is None:
                continue
            if c.version.split(".")[0] == dist.version.split(".")[0] and not same_version(
                c.version, dist.version
            ):
                hits.append((dist, c))
    names = ", ".join(f"{d.name} {d.version}" for d, _ in wheels)
    if not hits:
        return Outcome.passed(
            f"Nothing on LD_LIBRARY_PATH shadows the pip CUDA libraries ({names})"
        )
    evidence, confirmed, cleared = [], False, False
    for dist, c in hits:
        users = _users(ctx, env, dist.name)
        by = f" (required by {', '.join(users)})" if users else ""
        evidence.append(
            f"LD_LIBRARY_PATH: {c.path} ({c.name} {c.version}) comes before {dist.name} "
            f"{dist.version}{by}"
        )
        prefix = "libcudnn" if c.name == "cudnn" else "libcudart"
        for rt in env.runtimes:
            loaded = [
                p for p in rt.loaded_libraries if posixpath.basename(p).startswith(prefix + ".")
            ]
            for path in loaded:
                inside = any(path.startswith(f.rstrip("/") + "/") for f in env.site_packages)
                evidence.append(f"{rt.framework} loaded {path} (doctor --deep)")
                confirmed |= not inside
                cleared |= inside
    fix = _ld_fix(ctx, sorted({posixpath.dirname(c.path) for _, c in hits}))
    if cleared and not confirmed:
        return Outcome.info(
            "A different cuDNN/CUDA runtime is on LD_LIBRARY_PATH, but the frameworks loaded "
            "their own wheels' copies",
            *evidence,
            fix=fix,
        )
    return Outcome.warn(
        f"LD_LIBRARY_PATH puts another {hits[0][1].name} {hits[0][1].version} before "
        f"{hits[0][0].name} {hits[0][0].version}: LD_LIBRARY_PATH takes precedence over the "
        "wheels' RUNPATH" + (" (confirmed by what was loaded)" if confirmed else ""),
        *evidence,
        fix=fix,
    )


def _ld_fix(ctx: Context, folders: list[str]) -> str:
    value = ctx.snapshot.system.env.get("LD_LIBRARY_PATH")
    where = " (and where it is set: ~/.bashrc, a module file, the job script or image)"
    if value is None:
        return f"Remove {', '.join(folders)} from LD_LIBRARY_PATH for this environment{where}"
    drop = {posixpath.normpath(f) for f in folders}
    keep = [p for p in value.split(":") if p and posixpath.normpath(p) not in drop]
    command = (
        f"export LD_LIBRARY_PATH={shlex.quote(':'.join(keep))}" if keep else "unset LD_LIBRARY_PATH"
    )
    return f"Remove {', '.join(folders)} from LD_LIBRARY_PATH: {command}{where}"


# --- NVIDIA pip packages two frameworks want in different versions --------------------------------


@environment_check(
    "frameworks.nvidia-conflicts",
    "frameworks sharing an environment agree on the NVIDIA pip packages they require",
)
def conflicts(ctx: Context, env: PythonEnvironment) -> Outcome | None:
    needs: Needs = {}
    for dist in env.distributions:
        for req in requirements_of(ctx, env, dist) if dist.requires else []:
            name = str(canonicalize_name(req.name))
            if name.startswith("nvidia-"):
                needs.setdefault(name, []).append((dist, req))
    shared = {n: users for n, users in needs.items() if len({d.name for d, _ in users}) > 1}
    if not shared:
        return None
    who = sorted({f"{d.name} {d.version}" for users in shared.values() for d, _ in users})
    clashes, evidence = [], []
    for name, users in sorted(shared.items()):
        have = env.dist(name)
        if have is None:
            continue
        unmet = [d.name for d, r in users if satisfies(r, have.version) is False]
        if unmet:
            clashes.append(name)
            wants = "; ".join(
                f"{d.name} {d.version} requires {r.specifier or 'any version'}"
                + (" (not met)" if d.name in unmet else "")
                for d, r in users
            )
            evidence.append(f"{name} {have.version} is installed: {wants}")
    if not clashes:
        return Outcome.passed(
            f"{' and '.join(who)} agree on the {len(shared)} NVIDIA package(s) they share"
        )
    return Outcome.warn(
        f"{' and '.join(who)} require different versions of {len(clashes)} NVIDIA package(s) "
        f"({', '.join(clashes)}): one of them runs with libraries it was not built for",
        *evidence,
        fix=_conflicts_fix(ctx, env, shared),
    )


def _conflicts_fix(ctx: Context, env: PythonEnvironment, shared: Needs) -> str:
    frameworks = {d.name: d for users in shared.values() for d, _ in users}
    tf = next((frameworks[n] for n in TF_DISTS if n in frameworks), None)
    move = tf or sorted(frameworks.values(), key=lambda d: d.name)[-1]
    extra = "[and-cuda]" if "and-cuda" in GPU_EXTRAS.get(move.name, ()) else ""
    spec = f"{move.name}{extra}=={move.version}"
    folder = f"~/venvs/{move.name}"
    fix = (
        f"Give each framework its own environment, e.g. python3 -m venv {folder} && "
        f"{folder}/bin/pip install '{spec}', then "
        + pip(ctx, env, f"pip uninstall -y {move.name}")
        + " here"
    )
    agree = _agreeing_tensorflow(ctx, shared) if tf is not None else None
    if agree is not None:
        fix += f"; or a TensorFlow whose pins agree: {pip(ctx, env, agree)}"
    return fix


def _agreeing_tensorflow(ctx: Context, shared: Needs) -> str | None:
    """The newest tensorflow[and-cuda] whose pins accept the exact versions the other
    framework pins for every shared package (None when there is no such row)."""
    pins: dict[str, str] = {}
    for name, users in shared.items():
        for dist, req in users:
            specs = list(req.specifier)
            if dist.name not in TF_DISTS and len(specs) == 1 and specs[0].operator == "==":
                pins[name] = specs[0].version
    if len(pins) < len(shared):
        return None
    for row in reversed(ctx.compat.tensorflow.and_cuda):
        try:
            reqs = {str(canonicalize_name(r.name)): r for r in map(Requirement, row.requires)}
        except InvalidRequirement:
            continue
        if all(n in reqs and satisfies(reqs[n], v) for n, v in pins.items()):
            return f"pip install 'tensorflow[and-cuda]=={row.version}'"
    return None
