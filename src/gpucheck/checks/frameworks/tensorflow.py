"""TensorFlow checks, per Python environment: the build and the package names, native Windows,
its CUDA against the driver, the GPU architectures in it, the CUDA libraries it will load,
its Python, and Keras."""

from __future__ import annotations

import re
from functools import cache
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
    TfFacts,
    build_settled,
    cannot_use_gpus,
    pick_tensorflow,
    tf_facts,
)
from gpucheck.checks.frameworks.driver_fit import (
    arch_name,
    cc_list,
    driver_outcome,
    upgrade_driver,
    upgrade_or_keep,
)
from gpucheck.checks.frameworks.per_environment import (
    change,
    framework_check,
    pip_step,
    python_support,
)
from gpucheck.checks.frameworks.tensorflow_fixes import (
    past_windows_gpu,
    tf_gpu_fix,
    tf_line,
    tf_release,
    tf_step,
    tf_switch,
    windows_fix,
    windows_native,
)
from gpucheck.compat import Compat, parse_version
from gpucheck.compat.frameworks import major_minor
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step

# --- the build ----------------------------------------------------------------------------------


@framework_check(
    "frameworks.tensorflow.cpu-build", "TensorFlow is a GPU build where NVIDIA GPUs are", tf_facts
)
def cpu_build(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome:
    cudnn = f", cuDNN {t.cudnn}" if t.cudnn else ""
    cuda_build = f"a CUDA {t.cuda or '(version unknown)'} build{cudnn}"
    what = "a ROCm (AMD GPU) build" if t.kind == "rocm" else "a CPU-only build"
    settled = build_settled(ctx, t.name, t.kind, cuda_build, what, t.evidence)
    if settled is not None:
        return settled
    if windows_native(ctx, env) and past_windows_gpu(ctx, t):
        return Outcome.skip(
            f"{t.name} is {what}: on native Windows that is all it can be (see "
            "frameworks.tensorflow.windows-native)"
        )
    fix = windows_fix(ctx, env) if windows_native(ctx, env) else tf_gpu_fix(ctx, env, t)
    title = f"{t.name} is {what}: it cannot use this machine's NVIDIA GPU(s)"
    return cannot_use_gpus(ctx, env, "tensorflow", title, t.evidence, fix)


def _note(ctx: Context, name: str, sentences: int = 2) -> str | None:
    """The first sentences of a package's note in the compat data (quotes kept whole)."""
    package = ctx.compat.tensorflow.packages.get(name)
    if package is None or not package.note:
        return None
    taken: list[str] = []
    for part in re.split(r"(?<=[.!])\s+", package.note.strip()):
        taken.append(part)
        if len(taken) >= sentences and " ".join(taken).count("'") % 2 == 0:
            break
    return " ".join(taken)


@framework_check(
    "frameworks.tensorflow.legacy-gpu-package",
    "the removed tensorflow-gpu package is not installed",
    tf_facts,
)
def legacy(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome | None:
    legacy = env.dist("tensorflow-gpu")
    if legacy is None:
        return None
    note = _note(ctx, "tensorflow-gpu")
    evidence = [f"tensorflow-gpu {legacy.version} is installed"]
    if note:
        evidence.append(f"compat data: {note}")
    other = [d for d in t.dists if d.name != "tensorflow-gpu" and d.name.startswith("tensorflow")]
    if windows_native(ctx, env):
        last = ctx.compat.tensorflow.windows_native_gpu_last
        fix = Fix.of(
            pip_step(
                ctx,
                env,
                f"install tensorflow {last}, the same GPU build on native Windows"
                if last
                else "install tensorflow",
                f"pip uninstall -y tensorflow-gpu && pip install 'tensorflow=={last}.*'",
                [
                    change(env, "tensorflow-gpu", remove=True),
                    change(env, "tensorflow", requirement=f"=={last}.*"),
                ],
            )
        )
    else:
        fix = tf_gpu_fix(ctx, env, t, also=("tensorflow-gpu",))
    if other:
        clash = ", ".join(f"{d.name} {d.version}" for d in other)
        return Outcome.fail(
            f"tensorflow-gpu {legacy.version} and {clash} are both installed: they write the same "
            "files (site-packages/tensorflow), so what imports is a mix of the two",
            *evidence,
            fix=fix,
        )
    return Outcome.warn(
        f"tensorflow-gpu {legacy.version} is installed: a removed package that gets no fixes",
        *evidence,
        fix=fix,
    )


@framework_check(
    "frameworks.tensorflow.windows-native",
    "TensorFlow on native Windows is a release that still had GPU support there",
    tf_facts,
)
def windows(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome | None:
    if not windows_native(ctx, env):
        return None
    last = ctx.compat.tensorflow.windows_native_gpu_last
    line = tf_line(t)
    if last is None or line is None:
        return Outcome.skip(f"{t.name} on native Windows: its version is not known")
    source = ctx.compat.tensorflow.windows_native_gpu_source.split(" ")[0]
    if line <= last:
        return Outcome.passed(
            f"{t.name} on native Windows: GPU support there ended after {last}, this is before"
        )
    evidence = [
        f"TensorFlow {last} was the last release with GPU support on native Windows ({source})",
        f"this environment is native Windows ({env.platform or ctx.snapshot.system.os})",
    ]
    if ctx.has_gpu is False:
        return Outcome.info(f"{t.name} on native Windows runs on the CPU only", *evidence)
    return Outcome.fail(
        f"{t.name} cannot use the GPU on native Windows: GPU support there ended with {last}",
        *evidence,
        fix=windows_fix(ctx, env),
    )


# --- CUDA, the driver and the GPUs ---------------------------------------------------------------


def _tf_cuda(ctx: Context, t: TfFacts) -> tuple[str, str] | None:
    """(CUDA version, where it comes from)."""
    if t.cuda:
        return t.cuda, t.cuda_from
    rel = tf_release(ctx, t)
    if rel is not None and rel.cuda and parse_version(rel.cuda):
        return rel.cuda, "the tested configuration in the compat data"
    return None


@framework_check(
    "frameworks.tensorflow.cuda-driver", "TensorFlow's CUDA runs on this driver", tf_facts
)
def cuda_driver(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome | None:
    if t.kind != "cuda" or ctx.has_gpu is False:
        return None
    found = _tf_cuda(ctx, t)
    if found is None:
        return Outcome.skip(f"{t.name}: the CUDA it was built with is not known")
    cuda, source = found

    def fix() -> Fix:
        if windows_native(ctx, env):
            other = windows_fix(ctx, env)
            for step in other.steps:
                step.option += 1
            return Fix.of(upgrade_driver(ctx, cuda), OR, *other.steps)
        return upgrade_or_keep(ctx, cuda, tf_switch(ctx, env, t))

    return driver_outcome(ctx, t.name, cuda, fix, f"CUDA {cuda} from {source}")


def tf_compiled(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Compiled | None:
    """The code a TensorFlow carries. A pip wheel on Linux whose build_info is the one its
    release's wheel ships (or lists nothing: 1.x) is judged by compat/tensorflow.toml's row,
    read from that wheel's fat binaries: build_info's `compute_90` stands for sm_90 SASS and
    compute_90 PTX there. Anything else (a build from source, conda's) by its build_info."""
    listed = parse_arch_list(t.archs, "TensorFlow's build_info cuda_compute_capabilities")
    code = ctx.compat.tensorflow.gpu_code_for(t.version) if t.version else None
    pip_wheel = any(d.build is None and d.name in _PIP_GPU_DISTS for d in t.dists)
    linux = (env.platform or "linux").startswith("linux")
    if code is None or not (pip_wheel and linux) or (t.archs and t.archs != code.build_info):
        return listed
    return compiled_from(code.sm, code.ptx, f"the TensorFlow {code.version} wheel, {code.source}")


# The pip distributions whose Linux wheels compat/tensorflow.toml's [[gpu_code]] rows read.
_PIP_GPU_DISTS = ("tensorflow", "tensorflow-gpu")


def _major(cc: str) -> int:
    head = cc.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


@framework_check(
    "frameworks.tensorflow.arch-support",
    "TensorFlow carries code (SASS or PTX) for every GPU's architecture",
    tf_facts,
)
def arch_support(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome | None:
    read = read_arch(
        ctx,
        t,
        lambda: tf_compiled(ctx, env, t),
        f"build_info lists {list(t.archs)}" if t.archs else "build_info lists no architectures",
    )
    if not isinstance(read, ArchReading):
        return read
    found, compiled, cover, evidence = read.found, read.compiled, read.cover, read.evidence
    missing, jit = cover.missing, cover.jit
    if missing:
        ccs = cover.missing_ccs
        pick = pick_tensorflow(ctx, env, ccs, ctx.driver_version)
        line = tf_line(t)
        # The pick carries code for these GPUs by its wheel's row; a line with no row only by
        # its CUDA's range, which promises nothing for a GPU the build dropped.
        sure = pick is not None and ctx.compat.tensorflow.gpu_code_for(pick.version) is not None
        newer = any(compiled.where(cc).startswith("newer") for cc in ccs)
        if pick and line and Version(pick.version) != line and (sure or newer):
            fix = Fix.of(
                tf_step(
                    ctx,
                    env,
                    t,
                    f"install TensorFlow {pick.version}, CUDA {pick.cuda}, the newest whose "
                    f"builds carry code for compute capability {', '.join(ccs)}",
                    pick.install,
                    version=pick.version,
                ),
                Step.run("confirm", "gpucheck doctor --deep", environment=env.python),
                OR,
                Step.manual(
                    "build TensorFlow from source with "
                    f"TF_CUDA_COMPUTE_CAPABILITIES={','.join(ccs)}"
                ),
            )
        else:
            fix = Fix.of(
                Step.manual(
                    f"use a TensorFlow whose build_info lists an sm_ or compute_ entry for "
                    f"compute capability {', '.join(ccs)} (the release notes say when one was "
                    "dropped)"
                ),
                OR,
                Step.manual(
                    "build TensorFlow from source with "
                    f"TF_CUDA_COMPUTE_CAPABILITIES={','.join(ccs)}"
                ),
            )
        return Outcome.fail(
            f"{t.name} has no usable code for {len(missing)} of the GPUs (compute capability "
            f"{', '.join(ccs)})",
            *(text for _, text in missing),
            *evidence,
            fix=fix,
        )
    # PTX for compute capability 12.x (RTX 50 series, RTX PRO Blackwell) does not load from
    # the pip wheels: cuModuleLoadData fails with CUDA_ERROR_INVALID_PTX, then every kernel
    # with CUDA_ERROR_INVALID_HANDLE (tensorflow/tensorflow#99592, #101746, #90291: 2.18-2.20).
    ptx_only = [g for g in found if compiled.covers(g.cc) == "ptx" and _major(g.cc) >= 12]
    if ptx_only:
        ccs = sorted({g.cc for g in ptx_only})
        return Outcome.fail(
            f"{t.name} has only PTX for compute capability {', '.join(ccs)}, and that PTX does "
            "not load there: GPU ops fail with CUDA_ERROR_INVALID_PTX, then "
            "CUDA_ERROR_INVALID_HANDLE",
            *(f"{g.label}: {arch_name(ctx, g.cc)}, only as PTX" for g in ptx_only),
            *evidence,
            fix=Fix.of(
                Step.manual(
                    "use NVIDIA's NGC TensorFlow container (nvcr.io/nvidia/tensorflow), built "
                    f"with code for compute capability {', '.join(ccs)}"
                ),
                OR,
                Step.manual(
                    "build TensorFlow from source with "
                    f"TF_CUDA_COMPUTE_CAPABILITIES={','.join(ccs)}"
                ),
            ),
        )
    if jit:
        return Outcome.info(
            f"{t.name} runs on {len(jit)} GPU(s) by JIT-compiling its PTX: the first start "
            "compiles every kernel, which can take many minutes",
            *jit,
            *evidence,
            fix=Fix.of(
                Step.set_env(
                    "CUDA_CACHE_MAXSIZE", "4294967296", "keep the compiled kernels between runs"
                )
            ),
        )
    return Outcome.passed(
        f"{t.name} has code for every GPU (compute capability {', '.join(cc_list(found))})",
        *evidence,
    )


# --- Python and Keras ----------------------------------------------------------------------------


@framework_check(
    "frameworks.tensorflow.python", "the environment's Python is one TensorFlow supports", tf_facts
)
def python(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome:
    def other(py: Version) -> Step | None:
        pick = pick_tensorflow(ctx, env, [], None)
        if pick is None:
            return None
        return tf_step(
            ctx,
            env,
            t,
            f"install a TensorFlow that supports Python {py}",
            pick.install,
            version=pick.version,
        )

    says = "TensorFlow {version} was tested with Python {low} to {high}"
    release = ctx.compat.tensorflow.release
    return python_support(t.name, env, t.version, release, says, "TensorFlow", other)


def _tf_keras(ctx: Context, env: PythonEnvironment, line: Version, why: str) -> Step:
    return pip_step(
        ctx,
        env,
        why,
        f"pip install 'tf-keras~={line}.0'",
        [change(env, "tf-keras", requirement=f"~={line}.0")],
    )


@cache
def _keras3_from(compat: Compat) -> Version | None:
    """The first TensorFlow whose default Keras is Keras 3 (tensorflow.toml, package keras)."""
    row = compat.tensorflow.packages.get("keras")
    return row.keras3_default_from if row else None


@framework_check(
    "frameworks.tensorflow.keras", "Keras and tf-keras match the TensorFlow release", tf_facts
)
def keras(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome | None:
    line = tf_line(t)
    k, tfk = env.dist("keras"), env.dist("tf-keras")
    if k is None and tfk is None:
        return None
    keras3 = _keras3_from(ctx.compat)
    if line is None or keras3 is None:
        return Outcome.skip(f"{t.name}: which Keras it needs is not known")
    problems: list[str] = []
    fixes: list[Step | Literal["or"]] = []
    k_version = parse_version(k.version) if k else None
    if k is not None and k_version is not None and line >= keras3 and k_version.major < 3:
        problems.append(
            f"keras {k.version} is Keras 2, but TensorFlow {line} uses Keras 3 (the default "
            f"Keras from TensorFlow {keras3})"
        )
        fixes += [
            pip_step(
                ctx,
                env,
                "install Keras 3",
                "pip install -U 'keras>=3'",
                [change(env, "keras", requirement=">=3")],
            ),
            OR,
            _tf_keras(ctx, env, line, "to keep Keras 2, install tf-keras"),
            Step.set_env("TF_USE_LEGACY_KERAS", "1"),
        ]
    elif k is not None and k_version is not None and line < keras3 and k_version.major >= 3:
        problems.append(
            f"keras {k.version} is Keras 3, but TensorFlow {line}'s tf.keras is Keras 2 "
            f"(keras {line}): importing tf.keras fails"
        )
        fixes.append(
            pip_step(
                ctx,
                env,
                f"install keras {line}",
                f"pip install 'keras~={line}.0'",
                [change(env, "keras", requirement=f"~={line}.0")],
            )
        )
    tfk_version = parse_version(tfk.version) if tfk else None
    if tfk is not None and tfk_version is not None and major_minor(tfk_version) != line:
        problems.append(
            f"tf-keras {tfk.version} does not match TensorFlow {line} (tf-keras versions follow "
            "TensorFlow's)"
        )
        tf_keras = _tf_keras(ctx, env, line, f"install tf-keras {line}")
        if not any(isinstance(f, Step) and f.command == tf_keras.command for f in fixes):
            fixes.append(tf_keras)
    installed = ", ".join(f"{d.name} {d.version}" for d in (k, tfk) if d is not None)
    if not problems:
        return Outcome.passed(f"{t.name} with {installed}")
    cite = _note(ctx, "keras", sentences=3)
    return Outcome.warn(
        f"{t.name} and the installed Keras do not match",
        *problems,
        *([f"compat data: {cite}"] if cite else []),
        fix=Fix.of(*fixes),
    )
