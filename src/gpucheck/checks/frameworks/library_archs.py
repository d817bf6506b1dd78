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
    loaded: list[LibraryCode]  # the libraries the package may load here, each one read
    outside: list[Target]  # GPUs none of them carries code for
    ptx_only: list[Target]  # GPUs that only their PTX covers (a JIT compile at the first call)
    # pick "torch-cuda": the package's libraries for other CUDA versions that carry code for
    # every GPU outside (with a torch for that CUDA, the package would load one of them)
    other_cuda: list[LibraryCode] = []


def _cuda_of(lib: LibraryCode) -> tuple[int, int] | None:
    found = re.search(CUDA_IN_NAME, lib.path.rsplit("/", 1)[-1])
    return (int(found[1] + found[2][:-1]), int(found[2][-1])) if found else None


def _for_torch_cuda(env: PythonEnvironment, libs: list[LibraryCode]) -> list[LibraryCode]:
    """The libraries bitsandbytes loads beside this torch: the one named for torch's CUDA, else
    the nearest of the same CUDA major, below first (its get_cuda_bnb_library_path)."""
    cuda = (env.torch.cuda if env.torch else None) or ""
    parts = cuda.split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return []
    want = (int(parts[0]), int(parts[1]))
    by_cuda: dict[tuple[int, int], list[LibraryCode]] = {}
    for lib in libs:
        version = _cuda_of(lib)
        if version is not None:
            by_cuda.setdefault(version, []).append(lib)
    same = [v for v in by_cuda if v[0] == want[0]]
    lower, higher = [v for v in same if v < want], [v for v in same if v > want]
    chosen = want if want in by_cuda else (max(lower) if lower else min(higher, default=None))
    return by_cuda[chosen] if chosen else []


def installed_code(
    ctx: Context, env: PythonEnvironment, dist: Distribution
) -> InstalledCode | None:
    """The verdict of the install's own libraries; None where they cannot give one (no row for
    the package, nothing read, a library unreadable or without a fat binary, no GPU known)."""
    library = ctx.compat.extensions.library(dist.name)
    found = targets(ctx)
    if library is None or not found:
        return None
    installed = [c for c in env.compiled if c.package == dist.name and c.version == dist.version]
    libs = _for_torch_cuda(env, installed) if library.pick == "torch-cuda" else installed
    # Every library the package may load must be read (an unread one might cover a GPU) and
    # name its architectures as the reader does (anything else is not a fact to judge by).
    codes = [c.code for c in libs]
    if not libs or any(code is None or code.empty() or not code.well_formed() for code in codes):
        return None
    outside: list[Target] = []
    ptx_only: list[Target] = []
    for t in found:
        if any(sass_runs_on(a, t.cc) for code in codes if code for a in code.sass):
            continue
        covered = any(ptx_runs_on(a, t.cc) for code in codes if code for a in code.ptx)
        (ptx_only if covered else outside).append(t)
    other_cuda = [
        c
        for c in installed
        if library.pick == "torch-cuda"
        and c not in libs
        and c.code
        and all(runs_on(c.code, t.cc) for t in outside)
    ]
    return InstalledCode(library, libs, outside, ptx_only, other_cuda if outside else [])


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
    return verdict(
        f"{dist.name} {dist.version} has no kernels for compute capability {ccs}: its "
        f"{_names(code)} carries {carried(sass, ptx)}, so its kernels fail there "
        '("no kernel image is available for execution on the device"); ' + where,
        *(f"{t.label}: compute capability {t.cc}" for t in code.outside),
        *(f"{lib.file}: {carried(lib.code.sass, lib.code.ptx)}" for lib in code.loaded if lib.code),
        f"compat data: {code.library.source}",
        fix=Fix.of(*[part for way in ways for part in (way, OR)][:-1]),
    )


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
