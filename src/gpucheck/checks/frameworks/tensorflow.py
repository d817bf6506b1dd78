"""TensorFlow checks, per Python environment: the build and the package names, native Windows,
its CUDA against the driver, the GPU architectures in it, the CUDA libraries it will load,
its Python, and Keras."""

from __future__ import annotations

import re
from functools import cache

from packaging.version import Version

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.arch import coverage, parse_arch_list
from gpucheck.checks.frameworks.builds import (
    TfFacts,
    gpu_frameworks_beside,
    pick_tensorflow,
    tf_facts,
)
from gpucheck.checks.frameworks.driver import (
    arch_name,
    cc_list,
    driver_outcome,
    gpus_line,
    targets,
    upgrade_driver,
)
from gpucheck.checks.frameworks.environments import (
    env_os,
    framework_check,
    in_range,
    pip,
    python_mm,
)
from gpucheck.compat import Compat, parse_version
from gpucheck.compat.answers import TF_AND_CUDA_FIRST
from gpucheck.compat.frameworks import TfRelease, major_minor
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Outcome


def _tf_release(ctx: Context, t: TfFacts) -> TfRelease | None:
    return ctx.compat.tensorflow.release(t.version) if t.version else None


def _line(t: TfFacts) -> Version | None:
    return major_minor(t.version) if t.version else None


def _windows_native(ctx: Context, env: PythonEnvironment) -> bool:
    return env_os(ctx, env) == "windows"


def _past_windows_gpu(ctx: Context, t: TfFacts) -> bool:
    last, line = ctx.compat.tensorflow.windows_native_gpu_last, _line(t)
    return last is not None and line is not None and line > last


def _uninstall(t: TfFacts, also: tuple[str, ...] = ()) -> str:
    names = list(dict.fromkeys([*(d.name for d in t.dists), *also]))
    return f"pip uninstall -y {' '.join(names)} && " if names else ""


def tf_switch(
    ctx: Context, env: PythonEnvironment, t: TfFacts, also: tuple[str, ...] = ()
) -> str | None:
    """The command that replaces this environment's TensorFlow by a GPU build that runs on
    this driver with these GPUs (Linux): the same line where it has tensorflow[and-cuda] and
    fits, else the newest that does; None when the compat data has none."""
    ccs, driver, line = cc_list(targets(ctx)), ctx.driver_version, _line(t)
    same = pick_tensorflow(ctx, env, ccs, driver, line=line) if line else None
    pick = same if same and Version(same.version) >= TF_AND_CUDA_FIRST else None
    pick = pick or pick_tensorflow(ctx, env, ccs, driver)
    if pick is None:
        return None
    why = f"CUDA {pick.cuda}" + (f", runs on driver {driver}" if driver else "")
    return (
        pip(ctx, env, _uninstall(t, also) + pick.install) + f" (TensorFlow {pick.version}: {why})"
    )


def tf_gpu_fix(ctx: Context, env: PythonEnvironment, t: TfFacts, also: tuple[str, ...] = ()) -> str:
    """tf_switch, else a newer driver and then the newest GPU build."""
    switch = tf_switch(ctx, env, t, also)
    if switch is not None:
        return switch
    other = pick_tensorflow(ctx, env, cc_list(targets(ctx)), None)
    if other is not None:
        command = pip(ctx, env, _uninstall(t, also) + other.install)
        return f"{upgrade_driver(ctx, other.cuda)}, then {command}"
    return "Install TensorFlow's Linux GPU build: " + pip(
        ctx, env, _uninstall(t, also) + "pip install 'tensorflow[and-cuda]'"
    )


def windows_fix(ctx: Context, env: PythonEnvironment) -> str:
    """WSL2, or the last native-Windows GPU release with the CUDA/cuDNN it was tested with."""
    data = ctx.compat.tensorflow
    last = data.windows_native_gpu_last
    linux = pick_tensorflow(ctx, env, cc_list(targets(ctx)), ctx.driver_version, os="windows")
    install = linux.install if linux else "pip install 'tensorflow[and-cuda]'"
    wsl = (
        f"Use WSL2: in an Ubuntu WSL2 shell, {install} (the Windows NVIDIA driver serves WSL2; "
        "install no Linux driver inside it)"
    )
    row = next((r for r in data.windows_gpu if r.version == last), None)
    if last is None or row is None:
        return wsl
    py, where = python_mm(env), ""
    if py is not None and not in_range(py, row.python_min, row.python_max):
        where = f" in a Python {row.python_min} to {row.python_max} environment"
    native = pip(ctx, env, f"pip install 'tensorflow=={last}.*'")
    return (
        f"{wsl}; or stay native with TensorFlow {last}, the last release with GPU support on "
        f"native Windows{where}: {native} with CUDA {row.cuda} and cuDNN {row.cudnn} "
        f"(conda install -c conda-forge cudatoolkit={row.cuda} cudnn={row.cudnn})"
    )


# --- the build ----------------------------------------------------------------------------------


@framework_check(
    "tensorflow.cpu-build", "TensorFlow is a GPU build where NVIDIA GPUs are", tf_facts
)
def cpu_build(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome:
    if t.kind is None:
        return Outcome.skip(f"{t.name}: whether it is a CUDA build is not known", t.evidence)
    if t.kind == "cuda":
        cudnn = f", cuDNN {t.cudnn}" if t.cudnn else ""
        return Outcome.passed(f"{t.name} is a CUDA {t.cuda or '(version unknown)'} build{cudnn}")
    what = "a ROCm (AMD GPU) build" if t.kind == "rocm" else "a CPU-only build"
    if ctx.has_gpu is False:
        return Outcome.info(
            f"{t.name} is {what}; this machine has no NVIDIA GPU, so there is nothing to fix",
            t.evidence,
        )
    if ctx.has_gpu is None:
        return Outcome.skip(
            f"{t.name} is {what}; whether this machine has an NVIDIA GPU is not known", t.evidence
        )
    if _windows_native(ctx, env) and _past_windows_gpu(ctx, t):
        return Outcome.skip(
            f"{t.name} is {what}: on native Windows that is all it can be (see "
            "tensorflow.windows-native)"
        )
    fix = windows_fix(ctx, env) if _windows_native(ctx, env) else tf_gpu_fix(ctx, env, t)
    beside = gpu_frameworks_beside(env, "tensorflow")
    verdict = Outcome.warn if beside else Outcome.fail
    return verdict(
        f"{t.name} is {what}: it cannot use this machine's NVIDIA GPU(s)"
        + (f" (code using {', '.join(beside)} here can)" if beside else ""),
        t.evidence,
        gpus_line(ctx),
        fix=fix,
    )


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
    "tensorflow.legacy-gpu-package", "the removed tensorflow-gpu package is not installed", tf_facts
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
    if _windows_native(ctx, env):
        last = ctx.compat.tensorflow.windows_native_gpu_last
        fix = pip(
            ctx, env, f"pip uninstall -y tensorflow-gpu && pip install 'tensorflow=={last}.*'"
        ) + (f" (tensorflow {last} is the same GPU build on native Windows)" if last else "")
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
    "tensorflow.windows-native",
    "TensorFlow on native Windows is a release that still had GPU support there",
    tf_facts,
)
def windows(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome | None:
    if not _windows_native(ctx, env):
        return None
    last = ctx.compat.tensorflow.windows_native_gpu_last
    line = _line(t)
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
        return t.cuda, "its build_info"
    rel = _tf_release(ctx, t)
    if rel is not None and rel.cuda and parse_version(rel.cuda):
        return rel.cuda, "the tested configuration in the compat data"
    return None


@framework_check("tensorflow.cuda-driver", "TensorFlow's CUDA runs on this driver", tf_facts)
def cuda_driver(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome | None:
    if t.kind != "cuda" or ctx.has_gpu is False:
        return None
    found = _tf_cuda(ctx, t)
    if found is None:
        return Outcome.skip(f"{t.name}: the CUDA it was built with is not known")
    cuda, source = found

    def fix() -> str:
        if _windows_native(ctx, env):
            return f"{upgrade_driver(ctx, cuda)}; or: {windows_fix(ctx, env)}"
        switch = tf_switch(ctx, env, t)
        return upgrade_driver(ctx, cuda) + (f"; or keep this driver: {switch}" if switch else "")

    return driver_outcome(ctx, t.name, cuda, fix, f"CUDA {cuda} from {source}")


def _major(cc: str) -> int:
    head = cc.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


@framework_check(
    "tensorflow.arch-support",
    "TensorFlow carries code (SASS or PTX) for every GPU's architecture",
    tf_facts,
)
def arch_support(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome | None:
    found = targets(ctx)
    if t.kind != "cuda" or not found:
        return None
    compiled = parse_arch_list(t.archs, "TensorFlow's build_info cuda_compute_capabilities")
    if compiled is None:
        return Outcome.skip(
            f"{t.name}: the GPU architectures compiled into it are not known",
            *([f"build_info lists {list(t.archs)}"] if t.archs else []),
        )
    evidence = [f"compiled for {compiled.text()} ({compiled.source})"]
    cover = coverage(ctx, compiled, found, t.cuda)
    missing, jit = cover.missing, cover.jit
    if missing:
        ccs = cover.missing_ccs
        newer = any(compiled.where(cc).startswith("newer") for cc in ccs)
        pick = pick_tensorflow(ctx, env, ccs, ctx.driver_version)
        line = _line(t)
        if newer and pick and line and Version(pick.version) > line:
            fix = pip(ctx, env, _uninstall(t) + pick.install) + (
                f" (TensorFlow {pick.version}, CUDA {pick.cuda}, whose CUDA can target compute "
                f"capability {', '.join(ccs)}; confirm with gpucheck doctor --deep)"
            )
        else:
            fix = (
                f"Use a TensorFlow whose build_info lists an sm_ or compute_ entry for compute "
                f"capability {', '.join(ccs)} (the release notes say when one was dropped), or "
                f"build TensorFlow from source with TF_CUDA_COMPUTE_CAPABILITIES={','.join(ccs)}"
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
            fix="Use NVIDIA's NGC TensorFlow container (nvcr.io/nvidia/tensorflow), which is "
            f"built with code for compute capability {', '.join(ccs)}, or build TensorFlow from "
            f"source with TF_CUDA_COMPUTE_CAPABILITIES={','.join(ccs)}",
        )
    if jit:
        return Outcome.info(
            f"{t.name} runs on {len(jit)} GPU(s) by JIT-compiling its PTX: the first start "
            "compiles every kernel, which can take many minutes",
            *jit,
            *evidence,
            fix="Keep the compiled kernels between runs: export CUDA_CACHE_MAXSIZE=4294967296",
        )
    return Outcome.passed(
        f"{t.name} has code for every GPU (compute capability {', '.join(cc_list(found))})",
        *evidence,
    )


# --- Python and Keras ----------------------------------------------------------------------------


@framework_check(
    "tensorflow.python", "the environment's Python is one TensorFlow supports", tf_facts
)
def python(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome:
    py = python_mm(env)
    if py is None or t.version is None:
        return Outcome.skip(f"{t.name}: the environment's Python version is not known")
    rel = _tf_release(ctx, t)
    if rel is None or (rel.python_min is None and rel.python_max is None):
        return Outcome.skip(f"{t.name}: its supported Pythons are not in the compat data")
    low, high = rel.python_min or "?", rel.python_max or "?"
    span = f"TensorFlow {rel.version} was tested with Python {low} to {high}"
    if in_range(py, rel.python_min, rel.python_max):
        return Outcome.passed(f"{t.name} supports Python {py}", span)
    pick = pick_tensorflow(ctx, env, [], None)
    other = (
        f"; or install a TensorFlow that supports Python {py}: "
        + pip(ctx, env, _uninstall(t) + pick.install)
        if pick
        else ""
    )
    return Outcome.fail(
        f"{t.name} does not support this environment's Python {py}",
        f"{span} (compat data); this environment runs {env.version} ({env.python})",
        fix=f"Create the environment with a Python {low} to {high} "
        f"(e.g. python{high} -m venv .venv) and reinstall TensorFlow there{other}",
    )


@cache
def _keras3_from(compat: Compat) -> Version | None:
    """The first TensorFlow whose default Keras is Keras 3 (tensorflow.toml, package keras)."""
    row = compat.tensorflow.packages.get("keras")
    return row.keras3_default_from if row else None


@framework_check("tensorflow.keras", "Keras and tf-keras match the TensorFlow release", tf_facts)
def keras(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome | None:
    line = _line(t)
    k, tfk = env.dist("keras"), env.dist("tf-keras")
    if k is None and tfk is None:
        return None
    keras3 = _keras3_from(ctx.compat)
    if line is None or keras3 is None:
        return Outcome.skip(f"{t.name}: which Keras it needs is not known")
    problems, fixes = [], []
    k_version = parse_version(k.version) if k else None
    if k is not None and k_version is not None and line >= keras3 and k_version.major < 3:
        problems.append(
            f"keras {k.version} is Keras 2, but TensorFlow {line} uses Keras 3 (the default "
            f"Keras from TensorFlow {keras3})"
        )
        legacy = pip(ctx, env, f"pip install 'tf-keras~={line}.0'")
        fixes.append(
            pip(ctx, env, "pip install -U 'keras>=3'")
            + f"; or, to keep Keras 2: {legacy} and export TF_USE_LEGACY_KERAS=1"
        )
    elif k is not None and k_version is not None and line < keras3 and k_version.major >= 3:
        problems.append(
            f"keras {k.version} is Keras 3, but TensorFlow {line}'s tf.keras is Keras 2 "
            f"(keras {line}): importing tf.keras fails"
        )
        fixes.append(pip(ctx, env, f"pip install 'keras~={line}.0'"))
    tfk_version = parse_version(tfk.version) if tfk else None
    if tfk is not None and tfk_version is not None and major_minor(tfk_version) != line:
        problems.append(
            f"tf-keras {tfk.version} does not match TensorFlow {line} (tf-keras versions follow "
            "TensorFlow's)"
        )
        tf_keras = pip(ctx, env, f"pip install 'tf-keras~={line}.0'")
        if not any(tf_keras in fix for fix in fixes):
            fixes.append(tf_keras)
    installed = ", ".join(f"{d.name} {d.version}" for d in (k, tfk) if d is not None)
    if not problems:
        return Outcome.passed(f"{t.name} with {installed}")
    cite = _note(ctx, "keras", sentences=3)
    return Outcome.warn(
        f"{t.name} and the installed Keras do not match",
        *problems,
        *([f"compat data: {cite}"] if cite else []),
        fix="; ".join(fixes),
    )
