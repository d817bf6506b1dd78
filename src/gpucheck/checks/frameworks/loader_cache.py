"""A CUDA library in the dynamic loader cache (ld.so.cache, /etc/ld.so.conf.d) older than the
copy an environment's wheels bring. A wheel's own RUNPATH finds its direct dependencies first,
but a library opened by a dependency that carries no RUNPATH to the wheel's folder (cuBLAS
opening cuBLASLt, cuDNN's sub-libraries, what is dlopen'ed by name) is looked up in the cache:
an image's older cuBLASLt then breaks pip torch's cuBLAS ('undefined symbol:
cublasLtGetStatusString, version libcublasLt.so.11': pytorch/pytorch#103832 in
nvidia/cuda:11.3.1-cudnn8-runtime; pytorch/pytorch#174320 preloads cuBLASLt for this reason).
LD_LIBRARY_PATH's copies are frameworks.library-shadowing's."""

from __future__ import annotations

import posixpath
from typing import Literal

from gpucheck.checks.context import Context
from gpucheck.checks.fixes import unregister_loader_folders
from gpucheck.checks.frameworks.conflicts import (
    STEMS,
    Need,
    _copies,
    _deep_errors,
    _in_env,
    _libraries_listed,
    _linux_needs,
    _loaded,
    _major,
    _races,
)
from gpucheck.checks.frameworks.packages import same_version
from gpucheck.checks.frameworks.per_environment import environment_check
from gpucheck.compat import parse_version
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Outcome, Subjects
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import LibraryCopy


def _cached_older(
    ctx: Context, env: PythonEnvironment, need: Need, ld_dirs: set[str]
) -> LibraryCopy | None:
    """The copy of need's library the loader cache (or a default folder) holds, of the same
    soname and older than the wheel's, where there is one."""
    want = parse_version(need.version)
    for c in _copies(ctx):
        if (
            c.name != need.family
            or not c.on_loader_path
            or c.origin == "ld_library_path"
            or posixpath.normpath(posixpath.dirname(c.path)) in ld_dirs
            or _in_env(env, c)
            or _major(c) != need.version.split(".")[0]
            or not c.version
            or same_version(c.version, need.version)
        ):
            continue
        have = parse_version(c.version)
        if have is not None and want is not None and have < want:
            return c
    return None


@environment_check(
    "frameworks.loader-cache",
    "no CUDA library in the loader cache (ld.so.cache) older than the wheels' copy, which "
    "libraries opened without the wheel's RUNPATH (cuBLAS -> cuBLASLt) would take",
)
def loader_cache(ctx: Context, env: PythonEnvironment) -> Outcome | None:
    needs = _linux_needs(ctx, env)
    if not needs or not _libraries_listed(ctx):
        return None  # frameworks.library-shadowing says the copies were not listed
    ld_value = ctx.snapshot.system.env.get("LD_LIBRARY_PATH", "")
    ld_dirs = {posixpath.normpath(p) for p in ld_value.split(":") if p}
    raced = {r.need.family for r in _races(ctx, env, needs)}  # LD_LIBRARY_PATH's, reported there
    found = [
        (need, copy)
        for need in needs
        if need.family not in raced and (copy := _cached_older(ctx, env, need, ld_dirs))
    ]
    if not found:
        return None
    errors = _deep_errors(env)
    evidence: list[str] = []
    named = confirmed = cleared = False
    for need, c in found:
        evidence.append(f"loader cache: {c.path} ({c.name} {c.version}) is older than {need.what}")
        soname = f"{STEMS[need.family]}.so"
        for text in errors:
            if soname in text:
                evidence.append(f"the import failed naming it: {text}")
                named = True
        for line, inside in _loaded(env, need.family):
            evidence.append(line)
            confirmed |= not inside
            cleared |= inside
    own = sorted({n.own_dir for n, _ in found if n.own_dir})
    folders = sorted({posixpath.dirname(c.path) for _, c in found})
    steps: list[Step | Literal["or"]] = []
    if own:
        steps += [
            Step.prepend_loader_path(
                own,
                "put the wheels' folders before the loader cache (in the job's environment)",
            ),
            OR,
        ]
    steps += unregister_loader_folders(ctx, folders, Layer.CUDA)
    fix = Fix.of(*steps)
    subjects = Subjects(environments=[env.python], paths=folders)
    first_need, first = found[0]
    title = (
        f"The loader cache holds {STEMS[first.name]} {first.version} "
        f"({posixpath.dirname(first.path)}), older than the {first_need.version} the "
        "frameworks' wheels bring"
    )
    if named or confirmed:
        return Outcome.fail(
            title
            + ": it was loaded in their place"
            + (" (confirmed by what was loaded)" if confirmed else ""),
            *evidence,
            fix=fix,
            subjects=subjects,
        )
    if cleared:
        return Outcome.info(title + ", but the frameworks loaded their own", *evidence)
    return Outcome.warn(
        title + ": a library opened without the wheel's RUNPATH (cuBLAS opening cuBLASLt) "
        "takes it, failing with 'undefined symbol'",
        *evidence,
        fix=fix,
        subjects=subjects,
    )
