"""Extensions built against torch (model/frameworks.py's TORCH_EXTENSIONS: torchvision,
xformers, flash-attn, vllm, ...), per Python environment: is each built for the torch installed
beside it? A compiled extension is linked against one torch release (and
C++ ABI) and one CUDA; paired with another it fails at import ("undefined symbol") or at its
first CUDA op.

Evidence, strongest first: the wheel's own Requires-Dist pin (torchvision 0.20.1 says
torch==2.5.1), the build facts it ships (xformers' cpp_lib.json, flash-attn's wheel name), and
the compat data's pairing tables (torchvision, torchaudio).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from msgspec import Struct

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.builds import TorchFacts, torch_facts
from gpucheck.checks.frameworks.driver_fit import cc_list, targets
from gpucheck.checks.frameworks.kernel_archs import kernel_archs_outcome
from gpucheck.checks.frameworks.library_archs import ptx_note
from gpucheck.checks.frameworks.packages import requirements_of, satisfies
from gpucheck.checks.frameworks.per_environment import change, framework_check, merge, pip_step
from gpucheck.checks.frameworks.runtime_fixes import import_command
from gpucheck.compat.answers import TORCH_INDEX
from gpucheck.compat.extensions import matches
from gpucheck.compat.frameworks import cuda_of_local_tag, major_minor
from gpucheck.model.environments import (
    Distribution,
    ExtensionBuild,
    ExtensionImport,
    PythonEnvironment,
)
from gpucheck.model.finding import Outcome, Status
from gpucheck.model.fix import OR, Change, Fix, Step
from gpucheck.model.frameworks import TENSORRT, TORCH, TORCH_EXTENSIONS
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join, quote

EXTENSIONS = tuple(e.dist for e in TORCH_EXTENSIONS)  # in the order findings name them
PAIRED = tuple(e.dist for e in TORCH_EXTENSIONS if e.paired)
TRITONS = tuple(e.dist for e in TORCH_EXTENSIONS if e.pinned_by_torch)  # compat pairs them too
BUILT_FROM_SOURCE = tuple(e.dist for e in TORCH_EXTENSIONS if e.from_source)

# "undefined symbol: cudaGetDriverEntryPointByVersion, version libcudart.so.12"
RUNTIME_SYMBOL = re.compile(r"undefined symbol: (cuda\w+), version libcudart\.so\.[0-9]+")

if TYPE_CHECKING:
    from packaging.requirements import Requirement


class Installed(Struct):
    torch: TorchFacts
    torch_dist: Distribution
    extensions: list[Distribution]


def installed(env: PythonEnvironment) -> Installed | None:
    t, dist = torch_facts(env), env.dist(TORCH.dist)
    found = [d for name in EXTENSIONS if (d := env.dist(name)) is not None]
    if t is None or dist is None or not found:
        return None
    return Installed(t, dist, found)


def build_of(env: PythonEnvironment, name: str) -> ExtensionBuild | None:
    return next((b for b in env.extensions if b.name == name), None)


def base(version: str) -> str:
    return version.split("+", 1)[0]


def torch_pin(ctx: Context, env: PythonEnvironment, dist: Distribution) -> Requirement | None:
    return next(
        (
            r
            for r in requirements_of(ctx, env, dist)
            if r.name.lower() == TORCH.dist and str(r.specifier)
        ),
        None,
    )


def index_flag(torch: TorchFacts) -> str:
    """`--index-url` of the torch build installed (its CUDA variant), where it has a tag."""
    tag = cuda_of_local_tag(torch.version or "")
    if tag:
        return " --index-url " + TORCH_INDEX.format(tag=tag.replace(".", ""))
    if torch.kind == "cpu":
        return " --index-url https://download.pytorch.org/whl/cpu"
    return ""


def keep_torch_step(ctx: Context, env: PythonEnvironment, inst: Installed, name: str) -> Step:
    """Reinstall `name` for the torch installed here (torch stays as it is)."""
    torch = base(inst.torch_dist.version)
    if name in BUILT_FROM_SOURCE:
        return pip_step(
            ctx,
            env,
            f"build it against the torch {torch} installed here (needs nvcc)",
            join(["pip", "uninstall", "-y", name])
            + " && "
            + join(["pip", "install", "--no-build-isolation", name]),
            [change(env, name)],
            Layer.EXTENSIONS,
        )
    want, requirement = quote(name), None
    row = ctx.compat.extensions.pairing(name, inst.torch_dist.version) if name in PAIRED else None
    if row is not None:
        requirement = (
            f"=={row.versions[-1]}.*"
            if row.versions[-1].count(".") < 2
            else f"=={row.versions[-1]}"
        )
        want = quote(f"{name}{requirement}")
    command = f"pip install {quote(f'torch=={torch}')} {want}{index_flag(inst.torch)}"
    kept = inst.torch_dist.version
    return pip_step(
        ctx,
        env,
        f"reinstall it for torch {torch}, which stays (pip picks the {name} built for it)",
        command,
        [Change("torch", kept, kept), change(env, name, requirement=requirement)],
        Layer.EXTENSIONS,
    )


def keep_torch_fix(ctx: Context, env: PythonEnvironment, inst: Installed, name: str) -> Fix:
    return Fix.of(keep_torch_step(ctx, env, inst, name))


def variant_fix(ctx: Context, env: PythonEnvironment, inst: Installed, dist: Distribution) -> Fix:
    """The same torchvision / torchaudio release built for torch's CUDA, from the PyTorch index
    of that variant, whose wheels carry the tag (0.15.2+cu117). The tag is named: pip counts an
    installed 0.15.2+cu118 as satisfying '==0.15.2' and would change nothing."""
    cuda = major_minor(inst.torch.cuda or "")
    if dist.name not in PAIRED or cuda is None:
        return keep_torch_fix(ctx, env, inst, dist.name)
    tag = f"{cuda.major}{cuda.minor}"
    want = f"{base(dist.version)}+cu{tag}"
    command = join(["pip", "install", "--force-reinstall", "--no-deps", f"{dist.name}=={want}"])
    return Fix.of(
        pip_step(
            ctx,
            env,
            f"install {dist.name} {base(dist.version)} built for torch's CUDA {cuda} "
            f"(torch {inst.torch_dist.version} stays)",
            f"{command} --index-url {TORCH_INDEX.format(tag=tag)}",
            [change(env, dist.name, want)],
            Layer.EXTENSIONS,
        )
    )


def import_outcome(
    ctx: Context, env: PythonEnvironment, inst: Installed, dist: Distribution, imp: ExtensionImport
) -> Outcome:
    """What importing it in its own child showed (doctor --deep), mapped to the wheel to install."""
    name, error = f"{dist.name} {dist.version}", imp.error or imp.status
    low = error.lower()
    runtime = RUNTIME_SYMBOL.search(error)
    if runtime is not None:
        # A CUDA runtime function newer than the libcudart torch loads (deepseek-ai/DeepGEMM#137:
        # cudaLibraryGetKernel, built with CUDA 12.8 beside torch's 12.6): not a torch ABI.
        return Outcome.fail(
            f"import {imp.module} fails: it was built with a newer CUDA than the runtime torch "
            f"{inst.torch_dist.version} loads (CUDA {inst.torch.cuda or 'unknown'} lacks "
            f"{runtime.group(1)})",
            error,
            fix=keep_torch_fix(ctx, env, inst, dist.name),
        )
    # "operator torchvision::nms does not exist": torchvision's ops library did not load into
    # this torch (a torchvision built for another torch).
    mismatch = "operator torchvision::" in low and "does not exist" in low
    if mismatch or "undefined symbol" in low or "abi" in low or "glibcxx" in low:
        what = "it was built against another torch (or C++ ABI) than torch " + (
            inst.torch_dist.version
        )
        pin = torch_pin(ctx, env, dist)
        said = [f"{name}: Requires-Dist: {pin}"] if pin is not None else []
        return Outcome.fail(
            f"import {imp.module} fails: {what}",
            error,
            *said,
            fix=keep_torch_fix(ctx, env, inst, dist.name),
        )
    if "no kernel image" in low:
        ccs = ", ".join(cc_list(targets(ctx))) or "this GPU"
        build = pip_step(
            ctx,
            env,
            "build it for this GPU",
            join(["pip", "install", "--no-build-isolation", "--no-binary", dist.name, dist.name]),
            [change(env, dist.name)],
            Layer.EXTENSIONS,
        )
        build.command = f"TORCH_CUDA_ARCH_LIST={quote(ccs)} {build.command}"
        return Outcome.fail(
            f"{name} has no code for compute capability {ccs} (no kernel image)",
            error,
            fix=Fix.of(keep_torch_step(ctx, env, inst, dist.name), OR, build),
        )
    from gpucheck.checks.frameworks.numpy_abi import numpy_cause  # registers after this module

    cause = numpy_cause(ctx, env, error)
    if cause is not None:
        return Outcome.fail(f"import {imp.module} fails: {cause[0]}", error, fix=cause[1])
    status = "crashed" if imp.status == "crashed" else "fails"
    return Outcome.fail(
        f"import {imp.module} {status}",
        error,
        fix=Fix.of(
            Step.run(
                "run it by hand to see the whole error",
                import_command(imp.module),
                environment=env.python,
                layer=Layer.EXTENSIONS,
            ),
            keep_torch_step(ctx, env, inst, dist.name),
        ),
    )


def judge(ctx: Context, env: PythonEnvironment, inst: Installed, dist: Distribution) -> Outcome:
    torch_version = inst.torch_dist.version
    name = f"{dist.name} {dist.version}"
    imp = next((i for i in env.extension_imports if i.name == dist.name), None)
    if imp is not None and imp.status != "ok":
        return import_outcome(ctx, env, inst, dist, imp)
    if dist.name in TRITONS:
        return triton_outcome(ctx, env, inst, dist)
    no_kernels = kernel_archs_outcome(ctx, env, dist, build_of(env, dist.name))
    if no_kernels is not None:
        return no_kernels
    pin = torch_pin(ctx, env, dist)
    if pin is not None and satisfies(pin, torch_version) is False:
        return Outcome.fail(
            f"{name} is built for another torch: it requires {pin}, torch {torch_version} is "
            "installed (import fails with 'undefined symbol', or its ops fail)",
            f"{dist.name} {dist.version}: Requires-Dist: {pin}",
            fix=keep_torch_fix(ctx, env, inst, dist.name),
        )
    trt = tensorrt_pin_broken(ctx, env, dist)
    if trt is not None:
        return trt
    built = build_of(env, dist.name)
    if built is not None and built.torch and major_minor(built.torch) != major_minor(torch_version):
        return Outcome.fail(
            f"{name} was built against torch {built.torch}; torch {torch_version} is installed "
            "(a compiled extension only loads into the torch it was built against: "
            "'undefined symbol' at import)",
            f"from {built.source}",
            fix=keep_torch_fix(ctx, env, inst, dist.name),
        )
    if dist.name in PAIRED and pin is None:
        paired = paired_outcome(ctx, env, inst, dist)
        if paired is not None:
            return paired
    cuda = cuda_mismatch(ctx, env, inst, dist, built)
    if cuda is not None:
        return cuda
    how = (
        f"requires {pin}"
        if pin
        else (f"built for torch {built.torch}" if built and built.torch else "no pin to compare")
    )
    if pin is None and not (built and built.torch) and dist.name not in PAIRED:
        return Outcome.info(f"{name}: which torch it was built for is not recorded", how)
    return Outcome.passed(f"{name} matches torch {torch_version}", how)


def tensorrt_pin_broken(ctx: Context, env: PythonEnvironment, dist: Distribution) -> Outcome | None:
    """torch-tensorrt is built against one TensorRT too: its pin on the tensorrt wheels."""
    for req in requirements_of(ctx, env, dist):
        have = env.dist(req.name.lower())
        if not TENSORRT.related(req.name.lower()) or have is None or not str(req.specifier):
            continue
        if satisfies(req, have.version) is False:
            return Outcome.fail(
                f"{dist.name} {dist.version} is built against another TensorRT: it requires "
                f"{req}, {have.name} {have.version} is installed",
                f"{dist.name} {dist.version}: Requires-Dist: {req}",
                fix=Fix.of(
                    pip_step(
                        ctx,
                        env,
                        f"install the TensorRT {dist.name} is built against",
                        f"pip install '{req.name}{req.specifier}'",
                        [change(env, req.name.lower(), requirement=str(req.specifier))],
                        Layer.EXTENSIONS,
                    )
                ),
            )
    return None


def triton_outcome(
    ctx: Context, env: PythonEnvironment, inst: Installed, dist: Distribution
) -> Outcome:
    """Triton is pinned the other way round: torch's Requires-Dist names the one it needs."""
    want = next(
        (r for r in requirements_of(ctx, env, inst.torch_dist) if r.name.lower() == dist.name),
        None,
    )
    name = f"{dist.name} {dist.version}"
    if want is None or not str(want.specifier):
        return Outcome.info(f"{name}: torch {inst.torch_dist.version} does not pin it")
    if satisfies(want, dist.version) is False:
        return Outcome.fail(
            f"{name} is not the Triton torch {inst.torch_dist.version} needs ({want}): "
            "torch.compile fails",
            f"torch {inst.torch_dist.version}: Requires-Dist: {want}",
            fix=Fix.of(
                pip_step(
                    ctx,
                    env,
                    f"install the Triton torch {inst.torch_dist.version} pins",
                    f"pip install '{want.name}{want.specifier}'",
                    [change(env, dist.name, requirement=str(want.specifier))],
                    Layer.EXTENSIONS,
                )
            ),
        )
    return Outcome.passed(f"{name} is the Triton torch {inst.torch_dist.version} pins", str(want))


def paired_outcome(
    ctx: Context, env: PythonEnvironment, inst: Installed, dist: Distribution
) -> Outcome | None:
    data = ctx.compat.extensions
    row = data.pairing(dist.name, inst.torch_dist.version)
    if row is None:
        return None  # a torch newer (or older) than the table: not judged here
    if any(matches(dist.version, v) for v in row.versions):
        return None
    other = data.torch_for(dist.name, dist.version)
    built_for = f"torch {other.torch}" if other else "another torch"
    return Outcome.fail(
        f"{dist.name} {dist.version} goes with {built_for}, not torch "
        f"{inst.torch_dist.version}: torch {row.torch} pairs with {dist.name} "
        f"{' / '.join(row.versions)}",
        f"compat data: {row.source}",
        fix=keep_torch_fix(ctx, env, inst, dist.name),
    )


def cuda_mismatch(
    ctx: Context,
    env: PythonEnvironment,
    inst: Installed,
    dist: Distribution,
    built: ExtensionBuild | None,
) -> Outcome | None:
    """An extension built for another CUDA than torch's, judged by what the sources show:
    - another major: its kernels do not load (torchvision: 'PyTorch and torchvision were
      compiled with different CUDA major versions');
    - another minor, where the extension's own import check refuses it (compat cuda_check:
      torchvision before 0.16, torchaudio before 2.11.1): import fails;
    - a newer minor than torch's: it may call CUDA runtime functions the older libcudart torch
      loads lacks ('undefined symbol: cudaGetDriverEntryPointByVersion, version
      libcudart.so.12', NVIDIA/cutlass#2079: a build with CUDA 12.6 loaded beside 12.4;
      'cudaLibraryGetKernel', deepseek-ai/DeepGEMM#137: CUDA 12.8 beside torch's 12.6);
    - an older minor of the same major: works, so None (its pin or build facts decide).
      flash-attn publishes one wheel per CUDA major for every minor ("Minor versions should
      be compatible", Dao-AILab/flash-attention setup.py get_wheel_url); torchvision and
      torchaudio dropped their minor check (pytorch/vision#7726, pytorch/audio#4226);
      xformers 0.0.27.post2 built for cu121 runs on torch 2.4.1+cu124
      (facebookresearch/xformers#1096)."""
    cuda = (built.cuda if built else None) or cuda_of_local_tag(dist.version)
    mine, theirs = major_minor(inst.torch.cuda or ""), major_minor(cuda or "")
    if mine is None or theirs is None or mine == theirs:
        return None
    # flash-attn 2.7+ wheels name the major alone (+cu12torch2.6): built for any minor of it.
    major_only = "." not in (cuda or "")
    if major_only and mine.major == theirs.major:
        return None
    name, torch = f"{dist.name} {dist.version}", inst.torch_dist.version
    said = f"{dist.name}: CUDA {theirs} (from {(built.source if built else None) or 'its version'})"
    fix = variant_fix(ctx, env, inst, dist)
    if mine.major != theirs.major:
        return Outcome.fail(
            f"{name} is built for CUDA {theirs}, torch {torch} for CUDA {mine}: its CUDA "
            "kernels do not load beside this torch",
            said,
            fix=fix,
        )
    check = ctx.compat.extensions.cuda_check(dist.name, dist.version)
    if check is not None and check.refuses == "minor":
        return Outcome.fail(
            f"{name} is built for CUDA {theirs}, torch {torch} for CUDA {mine}: its import "
            f"refuses a torch of another CUDA minor ('Detected that PyTorch and {dist.name} "
            "were compiled with different CUDA versions')",
            said,
            f"compat data: {check.source}",
            fix=fix,
        )
    if theirs > mine:
        return Outcome.warn(
            f"{name} is built for CUDA {theirs}, newer than torch {torch}'s CUDA {mine}: it may "
            f"fail to load ('undefined symbol: ..., version libcudart.so.{mine.major}') where it "
            "calls CUDA runtime functions the older runtime lacks",
            said,
            fix=fix,
        )
    # An older minor runs: whether it matches torch is for its pin or build facts to say.
    return None


@framework_check(
    "frameworks.torch.extensions",
    "extensions built against torch (torchvision, torchaudio, xformers, flash-attn, vllm, ...) "
    "match the torch installed",
    installed,
)
def extensions(ctx: Context, env: PythonEnvironment, inst: Installed) -> Outcome | None:
    return merge(
        (None, with_ptx_note(ctx, env, dist, judge(ctx, env, inst, dist)))
        for dist in inst.extensions
    )


def with_ptx_note(
    ctx: Context, env: PythonEnvironment, dist: Distribution, outcome: Outcome
) -> Outcome:
    """A passing verdict says where only the deciding library's PTX covers a GPU: it runs,
    after a first-call compile (library_archs.py)."""
    note = ptx_note(ctx, env, dist) if outcome.status in (Status.PASS, Status.INFO) else None
    if note is not None:
        outcome.evidence.append(note)
    return outcome
