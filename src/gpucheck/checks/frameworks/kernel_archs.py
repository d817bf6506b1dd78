"""Kernel packages (flash-attn, vLLM, sgl-kernel) against the GPUs here: a release's CUDA build
carries SASS for some compute capabilities (its build files' list, or its wheel's own fat binary;
"9.0a" runs on 9.0 alone) and PTX the driver compiles for newer GPUs (compat/extensions.toml
[[kernel_archs]]), so a GPU neither reaches gets "no kernel image is available for execution on
the device" at the first call. Read from the release alone, before anything is imported."""

from __future__ import annotations

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.driver_fit import Target, cc_list, targets
from gpucheck.checks.frameworks.library_archs import (
    InstalledCode,
    fallback_release,
    installed_code,
    installed_code_outcome,
)
from gpucheck.checks.frameworks.per_environment import change, pip_step
from gpucheck.compat import parse_version
from gpucheck.compat.extensions import KernelArchs
from gpucheck.model.environments import Distribution, ExtensionBuild, PythonEnvironment
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join

# Packages whose release is often built on install (an sdist that imports torch in its
# setup.py): pip must build it against the torch already installed.
BUILT_AGAINST_TORCH = frozenset({"flash-attn"})


def build_cuda(row: KernelArchs, built: ExtensionBuild | None) -> str | None:
    """The CUDA this install was built with: the build facts' where they name a minor, the
    release's prebuilt wheels' where they name the major alone (+cu12torch2.6: the wheel),
    else unknown (a source build with whatever nvcc was there)."""
    cuda = built.cuda if built else None
    if cuda and "." in cuda:
        return cuda
    return row.wheel_cuda if cuda else None


def _covered(row: KernelArchs, cc: str, cuda: str | None) -> bool:
    """Whether this release's build runs on `cc`, through SASS or PTX (the row's `runs_on`);
    an arch added only from a CUDA newer than the build's known CUDA does not count (an unknown
    build CUDA is given the benefit)."""
    arch = row.runs_on(cc)
    if arch is None:
        return False
    floor, have = parse_version(row.cuda_for.get(arch, "")), parse_version(cuda or "")
    return floor is None or have is None or have >= floor


def _releases_for(ctx: Context, row: KernelArchs, cc: str) -> tuple[str, str] | None:
    """(pip requirement, words) of the releases whose builds carry code for `cc`: the first
    later row whose prebuilt wheels do, else the newest earlier line that had it (flash-attn
    1.x on Turing)."""
    rows = sorted(
        (k for k in ctx.compat.extensions.kernels if k.package == row.package),
        key=lambda k: k.start,
    )
    later = [k for k in rows if k.start > row.start and _covered(k, cc, k.wheel_cuda)]
    if later:
        return f">={later[0].start}", f"{row.package} {later[0].start} is the first release with it"
    earlier = [i for i, k in enumerate(rows) if k.start < row.start and k.runs_on(cc)]
    if not earlier:
        return None
    upto = rows[earlier[-1] + 1].start
    return f"<{upto}", f"{row.package} releases before {upto} have it"


def release_step(
    ctx: Context, env: PythonEnvironment, dist: Distribution, want: str, outside: list[Target]
) -> Step:
    """pip install the releases `want` names (">=2.7.3"), which carry code for `outside`."""
    flags = " --no-build-isolation" if dist.name in BUILT_AGAINST_TORCH else ""
    return pip_step(
        ctx,
        env,
        f"install a {dist.name} release that carries code for {', '.join(cc_list(outside))}",
        f"pip install{flags} '{dist.name}{want}'",
        [change(env, dist.name, requirement=want)],
        Layer.EXTENSIONS,
    )


def _reinstall_step(
    ctx: Context, env: PythonEnvironment, dist: Distribution, base: str, cc: str
) -> Step:
    """Reinstall release `base` from its prebuilt wheel. flash-attn is an sdist on PyPI whose
    setup.py downloads the prebuilt wheel for this torch, CUDA and Python from its GitHub
    release (so --only-binary finds nothing): pip runs it against the torch here, and without
    its cache, which holds the wheel a source build left (Dao-AILab/flash-attention 5231d95,
    tag v2.7.4.post1: setup.py CachedWheelsCommand, publish.yml `setup.py sdist`; README:
    `pip install flash-attn --no-build-isolation`)."""
    wanted = f"{dist.name}=={base}"
    if dist.name in BUILT_AGAINST_TORCH:
        how = "with FLASH_ATTENTION_FORCE_BUILD unset, its setup.py fetches that wheel"
        flags = ["--no-build-isolation", "--no-cache-dir", "--force-reinstall", "--no-deps"]
        command = join(["pip", "install", *flags, wanted])
    else:
        # The wheel is built against the torch its Requires-Dist pins, which a source build
        # may not have had: the second install leaves the wheel and brings its dependencies.
        how = "then pip brings the torch that wheel is built for"
        flags = ["--force-reinstall", "--no-deps", "--only-binary", dist.name]
        command = (
            join(["pip", "install", *flags, wanted]) + " && " + join(["pip", "install", wanted])
        )
    return pip_step(
        ctx,
        env,
        f"if it was built from source: reinstall {dist.name} {base} from its prebuilt wheel, "
        f"which carries code for compute capability {cc} ({how})",
        command,
        [change(env, dist.name, requirement=f"=={base}")],
        Layer.EXTENSIONS,
    )


def _from_install(
    ctx: Context,
    env: PythonEnvironment,
    dist: Distribution,
    row: KernelArchs | None,
    code: InstalledCode,
) -> Outcome | None:
    """The installed library's verdict, with the releases the rows say carry the GPU: this
    release's own prebuilt wheels where they do (the install is a source build without it),
    else the first later release that does."""
    if row is None or not code.outside:
        return installed_code_outcome(ctx, dist, code, *fallback_release(ctx, env, dist, code))
    cc = code.outside[0].cc
    if _covered(row, cc, row.wheel_cuda):
        base = dist.version.split("+", 1)[0]
        released = parse_version(base)
        if released is None or released.is_devrelease:  # a build of a commit: not on PyPI
            return installed_code_outcome(ctx, dist, code, None, None)
        step = _reinstall_step(ctx, env, dist, base, cc)
        return installed_code_outcome(
            ctx, dist, code, step, f"the prebuilt {dist.name} {base} wheels carry it"
        )
    other = _releases_for(ctx, row, cc)
    if other is None:
        return installed_code_outcome(ctx, dist, code, None, None)
    step = release_step(ctx, env, dist, other[0], code.outside)
    return installed_code_outcome(ctx, dist, code, step, other[1])


def kernel_archs_outcome(
    ctx: Context, env: PythonEnvironment, dist: Distribution, built: ExtensionBuild | None
) -> Outcome | None:
    """A failure where no GPU here is in the release's arch list, a warning where some are
    not (CUDA_VISIBLE_DEVICES can leave them out); None where every GPU is covered or the
    release is not in the data. Where the snapshot holds the installed deciding library's
    own code (library_archs.py), that decides instead of the release's row."""
    row = ctx.compat.extensions.kernel_archs(dist.name, dist.version)
    code = installed_code(ctx, env, dist)
    if code is not None:  # the install's own deciding library: it beats the release's row
        return _from_install(ctx, env, dist, row, code)
    found = targets(ctx)
    if row is None or not found:
        return None
    cuda = build_cuda(row, built)
    outside: list[Target] = [t for t in found if not _covered(row, t.cc, cuda)]
    if not outside:
        return None
    ccs = ", ".join(cc_list(outside))
    other = _releases_for(ctx, row, outside[0].cc)
    use_instead = Step.manual(f"use {row.instead} on compute capability {ccs}", Layer.EXTENSIONS)
    run_elsewhere = Step.manual(
        f"run {dist.name} on GPUs of {row.carried().removesuffix(' only')} "
        "(CUDA_VISIBLE_DEVICES can leave the others out)",
        Layer.JOB,
    )
    some_covered = len(outside) < len(found)
    ways: list[Step] = [run_elsewhere] if some_covered else []
    if other is not None:
        want, where = other
        ways.append(release_step(ctx, env, dist, want, outside))
    else:
        where = f"no {dist.name} release builds for it"
        ways += [] if some_covered else [run_elsewhere]
    ways.append(use_instead)
    # Each way is an alternative: a GPU left out, another release, another library.
    fix = Fix.of(*[part for way in ways for part in (way, OR)][:-1])
    verdict = Outcome.warn if some_covered else Outcome.fail
    built_from = f" (built for CUDA {cuda})" if cuda else ""
    return verdict(
        f"{dist.name} {dist.version}{built_from} has no kernels for compute capability {ccs}: "
        f"its build carries code for {row.carried()}, so its kernels fail there; {where}",
        *(f"{t.label}: compute capability {t.cc}" for t in outside),
        f"compat data: {row.source}",
        fix=fix,
    )
