"""Kernel packages judged from their installed libraries' own code: the library a package cannot
run without (compat/extensions.toml [[kernel_library]]: vLLM's _C, flash_attn_2_cuda,
libbitsandbytes_cuda124.so) lists the SASS and PTX it carries in its fat binary, read at probe
time (PythonEnvironment.compiled). That is the install itself (a source build, a nightly, a
fork), so it beats the release's [[kernel_archs]] row; where it was not read, the row decides.

A GPU runs SASS of its own major and an equal or lower minor ("9.0a": that capability only), or
PTX of its capability or lower, which the driver compiles at the first call: a GPU only PTX
covers runs, after a one-time compile, and only on a driver that knows that PTX's ISA."""

from __future__ import annotations

import re
from collections.abc import Iterable

from msgspec import Struct

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.driver_fit import Target, cc_list, targets
from gpucheck.checks.frameworks.per_environment import change, pip_step
from gpucheck.compat import parse_version
from gpucheck.compat.extensions import KernelLibrary
from gpucheck.model.compiled_code import ptx_runs_on, runs_on, sass_runs_on
from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.library_code import LibraryCode

CUDA_IN_NAME = r"cuda(\d)(\d+)"  # libbitsandbytes_cuda124.so: CUDA 12.4 (compiled on first use)


class InstalledCode(Struct, frozen=True):
    """What the installed deciding libraries say about the GPUs here."""

    library: KernelLibrary  # the row that names them
    loaded: list[LibraryCode]  # the libraries the package loads on the GPUs judged, each read
    outside: list[Target]  # GPUs none of them carries code for
    ptx_only: list[Target]  # GPUs that only their PTX covers (a JIT compile at the first call)
    # pick "torch-cuda": the package's libraries for other CUDA versions that carry code for
    # every GPU outside (with a torch for that CUDA, the package would load one of them)
    other_cuda: list[LibraryCode] = []
    # The library the package looks for on the GPUs outside where none is installed, in words
    # ("CUDA library for torch's CUDA 12.9"): it then has no GPU code there at all.
    missing: str | None = None
    present: list[str] = []  # where `missing`: the deciding libraries the install does have


def _cuda_of(lib: LibraryCode) -> tuple[int, int] | None:
    found = re.search(CUDA_IN_NAME, lib.path.rsplit("/", 1)[-1])
    return (int(found[1] + found[2][:-1]), int(found[2][-1])) if found else None


def _torch_cuda(env: PythonEnvironment) -> tuple[int, int] | None:
    """The CUDA torch here is built for, (12, 4); None where unknown."""
    parts = ((env.torch.cuda if env.torch else None) or "").split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1])


def _for_torch_cuda(
    library: KernelLibrary, dist: Distribution, want: tuple[int, int], libs: list[LibraryCode]
) -> list[LibraryCode]:
    """The libraries bitsandbytes loads beside a torch for CUDA `want`: the one named for it;
    from the row's `fallback_from` on, else the nearest of the same CUDA major, below first
    (its get_cuda_bnb_library_path); none where that is missing (no GPU code at all)."""
    by_cuda: dict[tuple[int, int], list[LibraryCode]] = {}
    for lib in libs:
        version = _cuda_of(lib)
        if version is not None:
            by_cuda.setdefault(version, []).append(lib)
    if want in by_cuda:
        return by_cuda[want]
    have = parse_version(dist.version.split("+", 1)[0])
    if library.fallback_from is None or have is None or have < library.fallback_from:
        return []
    same = [v for v in by_cuda if v[0] == want[0]]
    lower, higher = [v for v in same if v < want], [v for v in same if v > want]
    chosen = max(lower) if lower else min(higher, default=None)
    return by_cuda[chosen] if chosen else []


def _globs_for(library: KernelLibrary, cc: str) -> list[str]:
    """pick "by-gpu": the globs of the library the package loads on compute capability `cc`
    (sgl-kernel: sm90/ on 9.0, sm100/ elsewhere), then its fallback (those the table does not
    name)."""
    own = library.by_gpu.get(cc) or library.by_gpu.get("other")
    rest = [g for g in library.files if g not in library.by_gpu.values()]
    return ([own] if own else []) + rest


def _for_gpu(library: KernelLibrary, libs: list[LibraryCode], cc: str) -> list[LibraryCode]:
    """The library the package loads on compute capability `cc`: the first glob that matches
    an installed one, its first match (load_utils.py loads matching_files[0])."""
    for glob in _globs_for(library, cc):
        matched = [c for c in libs if library.matcher([glob]).match(c.path)]
        if matched:
            return matched[:1]
    return []


def installed_code(
    ctx: Context, env: PythonEnvironment, dist: Distribution
) -> InstalledCode | None:
    """The verdict of the install's own libraries; None where they cannot give one (no row for
    the package, nothing read, a library it loads unreadable, without a fat binary or with
    architectures that do not parse, torch's CUDA unknown, no GPU known)."""
    library = ctx.compat.extensions.library(dist.name)
    found = targets(ctx)
    if library is None or not found:
        return None
    installed = [c for c in env.compiled if c.package == dist.name and c.version == dist.version]
    if not installed:
        return None
    missing: str | None = None
    if library.pick == "by-gpu":
        per_gpu = [(t, _for_gpu(library, installed, t.cc)) for t in found]
        bare = next((t for t, libs in per_gpu if not libs), None)
        if bare is not None:
            missing = f"library it loads there ({' or '.join(_globs_for(library, bare.cc))})"
    elif library.pick == "torch-cuda":
        want = _torch_cuda(env)
        if want is None:
            return None
        libs = _for_torch_cuda(library, dist, want, installed)
        per_gpu = [(t, libs) for t in found]
        missing = f"CUDA library for torch's CUDA {want[0]}.{want[1]}"
    else:
        per_gpu = [(t, installed) for t in found]
    # Every library the package loads must be read (an unread one might cover a GPU) and
    # name its architectures as the reader does (anything else is not a fact to judge by).
    for _, libs in per_gpu:
        if any(c.code is None or c.code.empty() or not c.code.well_formed() for c in libs):
            return None
    outside: list[Target] = []
    ptx_only: list[Target] = []
    for t, libs in per_gpu:
        if any(sass_runs_on(a, t.cc) for c in libs if c.code for a in c.code.sass):
            continue
        covered = any(ptx_runs_on(a, t.cc) for c in libs if c.code for a in c.code.ptx)
        (ptx_only if covered else outside).append(t)
    judged = [libs for t, libs in per_gpu if t in outside or not outside]
    loaded = list({id(c): c for libs in judged for c in libs}.values())  # each once
    other_cuda = [
        c
        for c in installed
        if library.pick == "torch-cuda"
        and c not in loaded
        and c.code
        and all(runs_on(c.code, t.cc) for t in outside)
    ]
    return InstalledCode(
        library,
        loaded,
        outside,
        ptx_only,
        other_cuda if outside else [],
        missing if outside and not loaded else None,
        [c.path for c in installed] if outside and not loaded else [],
    )


def carried(sass: Iterable[str], ptx: Iterable[str]) -> str:
    """Code in words: "SASS for 8.0, 9.0a and PTX for 8.0", "SASS for 9.0 and no PTX" (each
    arch once, in the fat binaries' order: the reader sorts them)."""
    sass, ptx = list(dict.fromkeys(sass)), list(dict.fromkeys(ptx))
    machine = f"SASS for {', '.join(sass)}" if sass else "no SASS"
    return f"{machine} and " + (f"PTX for {', '.join(ptx)}" if ptx else "no PTX")


def _names(code: InstalledCode) -> str:
    """The libraries as RECORD names them ("vllm/_C.abi3.so"), alternatives joined."""
    return " / ".join(lib.path for lib in code.loaded)


def installed_code_outcome(
    ctx: Context,
    dist: Distribution,
    code: InstalledCode,
    release: Step | None,
    release_words: str | None,
) -> Outcome | None:
    """A failure where no GPU here can run the deciding library, a warning where some cannot;
    None where every GPU can. `release`: installing the releases the rows say carry the GPU."""
    if not code.outside:
        return None
    found = targets(ctx)
    ccs = ", ".join(cc_list(code.outside))
    some_covered = len(code.outside) < len(found)
    covered = cc_list([t for t in found if t not in code.outside])
    ways: list[Step] = []
    if some_covered:
        ways.append(
            Step.manual(
                f"run {dist.name} on the GPUs of compute capability {', '.join(covered)} "
                "(CUDA_VISIBLE_DEVICES can leave the others out)",
                Layer.JOB,
            )
        )
    if release is not None:
        ways.append(release)
    if code.other_cuda:
        cudas = [v for v in map(_cuda_of, code.other_cuda) if v]
        named = ", ".join(f"{major}.{minor}" for major, minor in sorted(set(cudas)))
        ways.append(
            Step.manual(
                f"install a torch built for CUDA {named}: {dist.name} loads the library "
                f"built for torch's CUDA, and its {' / '.join(c.path for c in code.other_cuda)} "
                f"carries code for compute capability {ccs}",
                Layer.EXTENSIONS,
            )
        )
    ways.append(
        Step.manual(f"use {code.library.instead} on compute capability {ccs}", Layer.EXTENSIONS)
    )
    where = release_words or f"use {code.library.instead} there"
    verdict = Outcome.warn if some_covered else Outcome.fail
    sass = [a for lib in code.loaded if lib.code for a in lib.code.sass]
    ptx = [a for lib in code.loaded if lib.code for a in lib.code.ptx]
    if code.missing:
        title = (
            f"{dist.name} {dist.version} has no {code.missing}, so it has no GPU code for "
            f"compute capability {ccs} (its GPU ops fail there); {where}"
        )
    else:
        title = (
            f"{dist.name} {dist.version} has no kernels for compute capability {ccs}: its "
            f"{_names(code)} carries {carried(sass, ptx)}, so its kernels fail there "
            '("no kernel image is available for execution on the device"); ' + where
        )
    return verdict(
        title,
        *(f"{t.label}: compute capability {t.cc}" for t in code.outside),
        *(
            [f"{dist.name} {dist.version} installs {', '.join(code.present)}"]
            if code.present
            else []
        ),
        *(f"{lib.file}: {carried(lib.code.sass, lib.code.ptx)}" for lib in code.loaded if lib.code),
        f"compat data: {code.library.source}",
        fix=Fix.of(*[part for way in ways for part in (way, OR)][:-1]),
    )


def fallback_release(
    ctx: Context, env: PythonEnvironment, dist: Distribution, code: InstalledCode
) -> tuple[Step | None, str | None]:
    """(step, words) where the package lacks the library for torch's CUDA and a later release
    would load the nearest of the same CUDA major (bitsandbytes 0.50.0); (None, None) else."""
    start = code.library.fallback_from
    have = parse_version(dist.version.split("+", 1)[0])
    if code.missing is None or start is None or have is None or have >= start:
        return None, None
    step = pip_step(
        ctx,
        env,
        f"install {dist.name} {start} or later, which loads the nearest library of torch's "
        "CUDA major where none is built for torch's CUDA",
        f"pip install '{dist.name}>={start}'",
        [change(env, dist.name, requirement=f">={start}")],
        Layer.EXTENSIONS,
    )
    return step, f"{dist.name} {start} and later load the nearest library of that CUDA major"


def ptx_note(ctx: Context, env: PythonEnvironment, dist: Distribution) -> str | None:
    """An evidence line for the GPUs that only the deciding library's PTX covers."""
    code = installed_code(ctx, env, dist)
    if code is None or not code.ptx_only or code.outside:
        return None
    ccs = ", ".join(cc_list(code.ptx_only))
    # The PTX the driver compiles for those GPUs: at or below their capability.
    every = dict.fromkeys(a for lib in code.loaded if lib.code for a in lib.code.ptx)
    ptx = [a for a in every if any(ptx_runs_on(a, t.cc) for t in code.ptx_only)]
    return (
        f"{dist.name}: compute capability {ccs} runs {_names(code)} from its PTX for "
        f"{', '.join(ptx)} only (no SASS for it): the driver compiles it at the first call "
        "(a one-time delay, then cached), and only a driver that knows that PTX's ISA (one as "
        "new as the CUDA it was built with) can"
    )
