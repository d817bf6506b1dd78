"""What concerns every framework of one environment: a CUDA library (cuDNN, the runtime,
cuBLAS, cuSPARSE, nvJitLink, ...) on LD_LIBRARY_PATH that overrides the one the frameworks'
wheels bring, and NVIDIA pip packages two frameworks require in different versions."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Literal

from msgspec import Struct

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.packages import (
    GPU_EXTRAS,
    canonical,
    is_package_for,
    parse_requirement,
    requirements_of,
    same_version,
    satisfies,
    soname_major,
)
from gpucheck.checks.frameworks.per_environment import change, env_os, environment_check, pip_step
from gpucheck.compat import parse_version
from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.finding import Outcome, Subjects
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.frameworks import TENSORFLOW
from gpucheck.model.shell import join, quote
from gpucheck.model.snapshot import LIBRARY_FAMILIES, LibraryCopy

if TYPE_CHECKING:
    from packaging.requirements import Requirement

Needs = dict[str, list[tuple[Distribution, "Requirement"]]]  # package -> who requires what

if TYPE_CHECKING:
    pass


# --- LD_LIBRARY_PATH shadowing the frameworks' own libraries --------------------------------------

# Each library family, the pip wheel that brings it (nvidia-<key>-cuNN) and its soname's stem.
WHEEL_KEYS = {
    "cudart": "cuda-runtime",
    "cudnn": "cudnn",
    "cublas": "cublas",
    "cublasLt": "cublas",
    "cufft": "cufft",
    "curand": "curand",
    "cusolver": "cusolver",
    "cusparse": "cusparse",
    "nvjitlink": "nvjitlink",
    "nvrtc": "cuda-nvrtc",
    "cupti": "cuda-cupti",
    "nccl": "nccl",
}
STEMS = {"cudart": "libcudart", "cudnn": "libcudnn", **LIBRARY_FAMILIES}


class Need(Struct):
    """A library the environment brings for its frameworks, and the version it brings."""

    family: str
    version: str
    what: str  # "nvidia-cudnn-cu12 9.1.0.70 (required by torch 2.5.1+cu124)", or the bundled path
    own_dir: str | None  # the folder of the environment's own copy, where known


class Race(Struct):
    need: Need
    winner: LibraryCopy  # the copy LD_LIBRARY_PATH makes the loader take first
    too_old: bool
    named_by_error: str | None  # a deep-pass error that names this library


def _users(ctx: Context, env: PythonEnvironment, package: str) -> list[str]:
    """The distributions of this environment that require `package`."""
    return [
        f"{d.name} {d.version}"
        for d in env.distributions
        if d.requires and any(canonical(r.name) == package for r in requirements_of(ctx, env, d))
    ]


def _in_env(env: PythonEnvironment, copy: LibraryCopy, dist: Distribution | None = None) -> bool:
    if dist is not None and copy.package and copy.package.split(" ")[0] == dist.name:
        return True
    folders = [*env.site_packages, *([dist.location] if dist and dist.location else [])]
    return any(copy.realpath.startswith(f.rstrip("/") + "/") for f in folders if f)


def _copies(ctx: Context) -> list[LibraryCopy]:
    snap = ctx.snapshot
    return [*snap.cudnn.libraries, *snap.cuda.runtimes, *snap.cuda.libraries]


def _needs(ctx: Context, env: PythonEnvironment) -> list[Need]:
    """What the environment's frameworks load when nothing overrides them: the versions of the
    nvidia-* wheels they require, else the copies bundled in their own folders (torch/lib of
    PyTorch 1.x wheels), with the version the probe read."""
    needs = []
    copies = _copies(ctx)
    for family, key in WHEEL_KEYS.items():
        own = [c for c in copies if c.name == family and c.origin == "pip" and _in_env(env, c)]
        dist = next((d for d in env.distributions if is_package_for(d.name, key)), None)
        if dist is not None:
            users = _users(ctx, env, dist.name)
            by = f" (required by {', '.join(users)})" if users else ""
            mine = [c for c in own if _in_env(env, c, dist)]
            folder = posixpath.dirname(mine[0].path) if mine else None
            needs.append(Need(family, dist.version, f"{dist.name} {dist.version}{by}", folder))
        elif own and own[0].version:
            bundled = own[0]
            owner = f" ({bundled.package})" if bundled.package else ""
            needs.append(Need(family, bundled.version or "", f"{bundled.path}{owner}", None))
    return needs


def _linux_needs(ctx: Context, env: PythonEnvironment) -> list[Need]:
    """_needs on Linux; none elsewhere (the loader-path checks are Linux's)."""
    return _needs(ctx, env) if env_os(ctx, env) == "linux" else []


def _libraries_listed(ctx: Context) -> bool:
    """Whether the probe listed the library copies on this machine."""
    run = ctx.snapshot.probe("libraries")
    return run is not None and run.status == "ok"


def _loaded(env: PythonEnvironment, family: str) -> list[tuple[str, bool]]:
    """The copies of a library family doctor --deep saw the frameworks load: per copy, the
    evidence line naming it and whether it came from inside the environment (its wheels)."""
    stem = STEMS[family] + "."
    return [
        (
            f"{rt.framework} loaded {path} (doctor --deep)",
            any(path.startswith(f.rstrip("/") + "/") for f in env.site_packages),
        )
        for rt in env.runtimes
        for path in rt.loaded_libraries
        if posixpath.basename(path).startswith(stem)
    ]


def _major(copy: LibraryCopy) -> str | None:
    return copy.version.split(".")[0] if copy.version else soname_major(copy.path)


def _deep_errors(env: PythonEnvironment) -> list[str]:
    return [text for rt in env.runtimes for text in [rt.error or "", *rt.warnings] if text]


def _races(ctx: Context, env: PythonEnvironment, needs: list[Need]) -> list[Race]:
    order = [p for p in ctx.snapshot.system.env.get("LD_LIBRARY_PATH", "").split(":") if p]
    rank = {posixpath.normpath(p): i for i, p in reversed(list(enumerate(order)))}
    copies = _copies(ctx)
    errors = _deep_errors(env)
    races = []
    for need in needs:
        major = need.version.split(".")[0]
        rivals = [
            c
            for c in copies
            if c.name == need.family
            and c.origin == "ld_library_path"
            and not _in_env(env, c)
            and _major(c) == major
        ]
        rivals.sort(key=lambda c: rank.get(posixpath.normpath(posixpath.dirname(c.path)), 1 << 30))
        if not rivals:
            continue
        winner = rivals[0]
        if winner.version and same_version(winner.version, need.version):
            continue
        old_v, need_v = parse_version(winner.version or ""), parse_version(need.version)
        too_old = old_v is not None and need_v is not None and old_v < need_v
        soname = f"{STEMS[need.family]}.so"
        named = next((e for e in errors if soname in e), None)
        races.append(Race(need, winner, too_old, named))
    return races


@environment_check(
    "frameworks.library-shadowing",
    "no CUDA library on LD_LIBRARY_PATH (cuDNN, cuBLAS, cuSPARSE, nvJitLink, ...) overrides an "
    "older or other version than the frameworks bring",
)
def shadowing(ctx: Context, env: PythonEnvironment) -> Outcome | None:
    needs = _linux_needs(ctx, env)
    if not needs:
        return None
    if not _libraries_listed(ctx):
        return Outcome.skip("Not judged: the library copies on this machine were not listed")
    races = _races(ctx, env, needs)
    if not races:
        names = ", ".join(sorted({n.what.split(" (")[0] for n in needs})[:6])
        return Outcome.passed(
            f"Nothing on LD_LIBRARY_PATH shadows the frameworks' CUDA libraries ({names})"
        )
    evidence, confirmed, cleared = [], False, False
    for race in races:
        c = race.winner
        evidence.append(
            f"LD_LIBRARY_PATH: {c.path} ({c.name} {_version_read(c)}) comes "
            f"before {race.need.what}" + (": older" if race.too_old else "")
        )
        if race.named_by_error:
            evidence.append(f"the import failed naming it: {race.named_by_error}")
        for line, inside in _loaded(env, race.need.family):
            evidence.append(line)
            confirmed |= not inside
            cleared |= inside
    fix = _ld_fix(ctx, races)
    subjects = Subjects(
        environments=[env.python], paths=sorted({posixpath.dirname(r.winner.path) for r in races})
    )
    if cleared and not confirmed:
        return Outcome.info(
            "A different CUDA library is on LD_LIBRARY_PATH, but the frameworks loaded "
            "their own wheels' copies",
            *evidence,
            fix=fix,
            subjects=subjects,
        )
    broken = [r for r in races if r.too_old or r.named_by_error]
    if broken:
        first = broken[0]
        return Outcome.fail(
            f"LD_LIBRARY_PATH makes the loader take {STEMS[first.need.family]} "
            f"{first.winner.version or '(version unknown)'} from "
            f"{posixpath.dirname(first.winner.path)}, older than the "
            f"{first.need.version} the frameworks need: LD_LIBRARY_PATH takes precedence over "
            "the wheels' RUNPATH" + (" (confirmed by what was loaded)" if confirmed else ""),
            *evidence,
            fix=fix,
            subjects=subjects,
        )
    first = races[0]
    return Outcome.warn(
        f"LD_LIBRARY_PATH puts another {first.winner.name} "
        f"{first.winner.version or '(version unknown)'} before {first.need.what.split(' (')[0]}"
        ": LD_LIBRARY_PATH takes precedence over the wheels' RUNPATH"
        + (" (confirmed by what was loaded)" if confirmed else ""),
        *evidence,
        fix=fix,
        subjects=subjects,
    )


# Where a copy's version was read (LibraryCopy.version_source; "+call": confirmed by the call).
READ_FROM = {
    "filename": "its file name",
    "library": "the library's own files",
    "header": "the header beside it",
    "metadata": "its wheel's metadata",
    "call": "its version call",
}


def _version_read(copy: LibraryCopy) -> str:
    if not copy.version:
        return "version unknown"
    source = READ_FROM.get((copy.version_source or "").split("+")[0])
    return f"{copy.version}, from {source}" if source else copy.version


def _ld_fix(ctx: Context, races: list[Race]) -> Fix:
    folders = sorted({posixpath.dirname(r.winner.path) for r in races})
    value = ctx.snapshot.system.env.get("LD_LIBRARY_PATH")
    where = " (and where it is set: ~/.bashrc, a module file, the job script or image)"
    if value is None:
        return Fix.of(
            Step.manual(
                f"remove {', '.join(folders)} from LD_LIBRARY_PATH for this environment{where}"
            )
        )
    drop = {posixpath.normpath(f) for f in folders}
    keep = [p for p in value.split(":") if p and posixpath.normpath(p) not in drop]
    why = f"remove {', '.join(folders)} from LD_LIBRARY_PATH{where}"

    steps: list[Step | Literal["or"]] = [
        Step.set_env("LD_LIBRARY_PATH", ":".join(keep), why)
        if keep
        else Step.unset_env("LD_LIBRARY_PATH", why)
    ]
    own = sorted({r.need.own_dir for r in races if r.need.own_dir})
    if own:
        steps += [
            OR,
            Step.prepend_loader_path(
                own,
                "where that folder is needed for something else, put the wheels' folders first",
            ),
        ]
    return Fix.of(*steps)


# --- NVIDIA pip packages two frameworks want in different versions --------------------------------


@environment_check(
    "frameworks.nvidia-conflicts",
    "frameworks sharing an environment agree on the NVIDIA pip packages they require",
)
def conflicts(ctx: Context, env: PythonEnvironment) -> Outcome | None:
    needs: Needs = {}
    for dist in env.distributions:
        for req in requirements_of(ctx, env, dist) if dist.requires else []:
            name = str(canonical(req.name))
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


def _conflicts_fix(ctx: Context, env: PythonEnvironment, shared: Needs) -> Fix:
    frameworks = {d.name: d for users in shared.values() for d, _ in users}
    tf = next((frameworks[n] for n in TENSORFLOW.dists if n in frameworks), None)
    move = tf or sorted(frameworks.values(), key=lambda d: d.name)[-1]
    extra = "[and-cuda]" if "and-cuda" in GPU_EXTRAS.get(move.name, ()) else ""
    spec = f"{move.name}{extra}=={move.version}"
    folder = f"~/venvs/{quote(move.name)}"  # ~ unquoted: the shell expands it
    steps: list[Step | Literal["or"]] = [
        Step.run(
            "give each framework its own environment",
            f"python3 -m venv {folder} && {folder}/bin/pip install {quote(spec)}",
            Tool.PIP,
            changes=[Change(move.name, None, move.version)],
            environment=f"~/venvs/{move.name}/bin/python",
        ),
        pip_step(
            ctx,
            env,
            "then remove it here",
            join(["pip", "uninstall", "-y", move.name]),
            [change(env, move.name, remove=True)],
        ),
    ]
    agree = _agreeing_tensorflow(ctx, shared) if tf is not None else None
    if agree is not None:
        version, command = agree
        steps += [
            OR,
            pip_step(
                ctx,
                env,
                "install a TensorFlow whose pins agree",
                command,
                [change(env, "tensorflow", version)],
            ),
        ]
    return Fix.of(*steps)


def _agreeing_tensorflow(ctx: Context, shared: Needs) -> tuple[str, str] | None:
    """(version, install command) of the newest tensorflow[and-cuda] whose pins accept the
    exact versions the other framework pins for every shared package (None: no such row)."""
    pins: dict[str, str] = {}
    for name, users in shared.items():
        for dist, req in users:
            specs = list(req.specifier)
            if dist.name not in TENSORFLOW.dists and len(specs) == 1 and specs[0].operator == "==":
                pins[name] = specs[0].version
    if len(pins) < len(shared):
        return None
    for row in reversed(ctx.compat.tensorflow.and_cuda):
        parsed = [parse_requirement(line) for line in row.requires]
        if any(r is None for r in parsed):
            continue
        reqs = {canonical(r.name): r for r in parsed if r is not None}
        if all(n in reqs and satisfies(reqs[n], v) for n, v in pins.items()):
            return str(row.version), f"pip install 'tensorflow[and-cuda]=={row.version}'"
    return None
