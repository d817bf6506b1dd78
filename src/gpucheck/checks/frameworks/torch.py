"""PyTorch checks, per Python environment: the build (CUDA, CPU-only, ROCm), its CUDA against
the driver, the GPU architectures compiled into it, its Python, and building extensions."""

from __future__ import annotations

from typing import Literal

from packaging.version import Version

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.arch import (
    ArchReading,
    Compiled,
    compiled_from,
    parse_arch_list,
    read_arch,
)
from gpucheck.checks.frameworks.builds import (
    KIND_TEXT,
    TorchFacts,
    build_settled,
    cannot_use_gpus,
    pick_change,
    pick_torch,
    torch_facts,
    torch_fix,
    torch_switch,
)
from gpucheck.checks.frameworks.driver_fit import (
    cc_list,
    driver_outcome,
    targets,
    upgrade_or_keep,
)
from gpucheck.checks.frameworks.per_environment import (
    framework_check,
    linux_x86_64,
    pip_step,
    python_support,
    runtime,
)
from gpucheck.compat.frameworks import major_minor
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.frameworks import TORCH
from gpucheck.model.layers import Layer


@framework_check(
    "frameworks.torch.cpu-build", "PyTorch is a CUDA build where NVIDIA GPUs are", torch_facts
)
def cpu_build(ctx: Context, env: PythonEnvironment, t: TorchFacts) -> Outcome:
    what = KIND_TEXT.get(t.kind or "", "not a CUDA build")
    cuda_build = f"a CUDA {t.cuda or '(version unknown)'} build"
    settled = build_settled(ctx, t.name, t.kind, cuda_build, what, t.evidence)
    if settled is not None:
        return settled
    title = f"{t.name} is {what}: it cannot use this machine's NVIDIA GPU(s)"
    fix = torch_fix(ctx, env, cc_list(targets(ctx)))
    return cannot_use_gpus(ctx, env, "torch", title, t.evidence, fix)


@framework_check("frameworks.torch.cuda-driver", "PyTorch's CUDA runs on this driver", torch_facts)
def cuda_driver(ctx: Context, env: PythonEnvironment, t: TorchFacts) -> Outcome | None:
    if t.kind != "cuda" or ctx.has_gpu is False:
        return (
            None  # frameworks.torch.cpu-build speaks for other builds; no GPU, no driver to judge
        )
    cuda = t.cuda
    if cuda is None:
        return Outcome.skip(f"{t.name}: the CUDA it was built with is not known", t.evidence)

    def fix() -> Fix:
        return upgrade_or_keep(ctx, cuda, torch_switch(ctx, env, cc_list(targets(ctx))))

    return driver_outcome(ctx, t.name, cuda, fix)


def torch_compiled(ctx: Context, env: PythonEnvironment, t: TorchFacts) -> Compiled | None:
    """What torch was compiled for: its own arch flags (deep pass), else the compat data for
    this release and CUDA variant (Linux x86_64 wheels only)."""
    deep = runtime(env, TORCH.key)
    if deep is not None and deep.arch_list:
        return parse_arch_list(deep.arch_list, "torch's own arch flags (doctor --deep)")
    if t.version is None or t.cuda is None or not linux_x86_64(ctx, env):
        return None
    arch = ctx.compat.torch.arch(t.version, t.cuda)
    nearest = ""
    if arch is None:
        arch = ctx.compat.torch.arch_before(t.version, t.cuda)
        if arch is None:
            return None
        nearest = f", the nearest release line before this pre-release ({t.version})"
    if arch.torch_max is None:
        span = f"{arch.torch_min}+"
    elif arch.torch_max == arch.torch_min:
        span = f"{arch.torch_min}"
    else:
        span = f"{arch.torch_min}-{arch.torch_max}"
    return compiled_from(
        arch.sm,
        arch.ptx,
        f"compat data: PyTorch {span} cu{t.cuda.replace('.', '')} wheels{nearest}",
    )


@framework_check(
    "frameworks.torch.arch-support",
    "PyTorch carries code (SASS or PTX) for every GPU's architecture",
    torch_facts,
)
def arch_support(ctx: Context, env: PythonEnvironment, t: TorchFacts) -> Outcome | None:
    read = read_arch(
        ctx,
        t,
        lambda: torch_compiled(ctx, env, t),
        "not in the compat data for this release/CUDA variant and platform; "
        "gpucheck doctor --deep reads them from torch itself",
    )
    if not isinstance(read, ArchReading):
        return read
    found, cover, evidence = read.found, read.cover, read.evidence
    if cover.missing:
        return Outcome.fail(
            f"{t.name} has no code for {len(cover.missing)} of the GPUs (compute capability "
            f"{', '.join(cover.missing_ccs)}): CUDA kernels fail with 'no kernel image is "
            "available for execution on the device'",
            *(line for _, line in cover.missing),
            *evidence,
            fix=torch_fix(ctx, env, cc_list(found)),
        )
    return Outcome.passed(
        f"{t.name} has code for every GPU (compute capability {', '.join(cc_list(found))})",
        *cover.jit,
        *evidence,
    )


@framework_check(
    "frameworks.torch.python", "the environment's Python is one PyTorch supports", torch_facts
)
def python(ctx: Context, env: PythonEnvironment, t: TorchFacts) -> Outcome | None:
    def other(py: Version) -> Step | None:
        cuda = t.kind == "cuda"
        pick = pick_torch(
            ctx, env, cc_list(targets(ctx)) if cuda else [], ctx.driver_version if cuda else None
        )
        if pick is None:
            return None
        return pip_step(
            ctx,
            env,
            f"install a PyTorch that supports Python {py} (PyTorch {pick.version})",
            f"pip uninstall -y torch && {pick.install}",
            [pick_change(env, "torch", pick)],
        )

    says = "PyTorch {version} has wheels for Python {low} to {high}"
    return python_support(t.name, env, t.version, ctx.compat.torch.release, says, "torch", other)


@framework_check(
    "frameworks.torch.extension-toolkit",
    "the local CUDA toolkit matches PyTorch's CUDA (for building extensions)",
    torch_facts,
)
def extension_toolkit(ctx: Context, env: PythonEnvironment, t: TorchFacts) -> Outcome | None:
    nvcc = ctx.snapshot.cuda.nvcc
    if t.kind != "cuda" or nvcc is None:
        return None  # no toolkit: cuda.toolkit says so; extensions are then not built here
    have, want = major_minor(nvcc.version), major_minor(t.cuda)
    if have is None or want is None:
        return Outcome.skip(f"{t.name}: the CUDA toolkit's or torch's CUDA version is not known")
    evidence = [f"nvcc {nvcc.version} at {nvcc.path}"]
    if ctx.snapshot.cuda.cuda_home:
        home = ctx.snapshot.cuda.cuda_home
        evidence.append(f"CUDA home {home} (from {ctx.snapshot.cuda.cuda_home_source})")
    if have == want:
        return Outcome.passed(
            f"{t.name} and the CUDA toolkit are both CUDA {want}: extensions build", *evidence
        )
    effect = (
        f"fails with 'The detected CUDA version ({have}) mismatches the version that was used "
        f"to compile PyTorch ({want})'"
        if have.major != want.major
        else "warns that the minor versions differ (usually harmless)"
    )
    steps: list[Step | Literal["or"]] = [
        Step.manual(
            f"to build extensions for this torch, install a CUDA {want} toolkit "
            f"(https://developer.nvidia.com/cuda-{want.major}-{want.minor}-0-download-archive)",
            Layer.CUDA,
        ),
        Step.set_env(
            "CUDA_HOME", f"/usr/local/cuda-{want}", "point builds at it", Layer.EXTENSIONS
        ),
    ]
    title = (
        f"{t.name} was built with CUDA {want}, the local toolkit is CUDA {have}: building CUDA "
        f"extensions (torch.utils.cpp_extension, pip installs that compile) {effect}"
    )
    if have.major == want.major:
        return Outcome.info(title, *evidence, fix=Fix.of(*steps))
    # Across majors every extension build stops (flash-attn, apex, ...): torch itself runs, so
    # a warning that names the condition, never a failure of a node that runs, with the other
    # way round as a second fix.
    return Outcome.warn(
        title,
        *evidence,
        fix=Fix.of(
            *steps,
            OR,
            Step.manual(
                f"keep this toolkit and install a torch built with CUDA {have.major}.x (the "
                f"PyTorch index's cu{have.major}x builds)",
                Layer.FRAMEWORKS,
            ),
        ),
    )
