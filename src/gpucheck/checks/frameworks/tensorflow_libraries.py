"""frameworks.tensorflow.cuda-libraries: the CUDA and cuDNN libraries TensorFlow will load,
from the pip `tensorflow[and-cuda]` wheels or the system, against what the release was built
with."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from packaging.version import Version

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.builds import TfFacts, pick_tensorflow, tf_facts
from gpucheck.checks.frameworks.driver_fit import (
    cc_list,
    targets,
)
from gpucheck.checks.frameworks.packages import parse_requirement, same_version
from gpucheck.checks.frameworks.per_environment import (
    change,
    env_os,
    framework_check,
    pip_step,
    runtime,
)
from gpucheck.checks.frameworks.tensorflow_fixes import tf_line, tf_release, tf_uninstall
from gpucheck.compat import parse_version
from gpucheck.compat.answers import TF_AND_CUDA_FIRST
from gpucheck.compat.frameworks import TfAndCuda
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Outcome, Status
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.frameworks import TENSORFLOW
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join
from gpucheck.model.snapshot import LibraryCopy

# The libraries TensorFlow dlopens to use a GPU ("Cannot dlopen some GPU libraries" when one
# is missing): without any of them, no GPU. The rest of the and-cuda pins (cupti, nvcc, nvrtc,
# nccl) serve the profiler, XLA's ptxas and multi-GPU.
TF_ESSENTIAL = (
    "cuda-runtime",
    "cublas",
    "cufft",
    "curand",
    "cusolver",
    "cusparse",
    "cudnn",
    "nvjitlink",
)
LOADER_WARNINGS = ("Could not load dynamic library", "Cannot dlopen some GPU libraries")
# TensorRT is optional for TensorFlow (TF-TRT only): "Could not load dynamic library
# 'libnvinfer.so.7'" and "TF-TRT Warning: Could not find TensorRT" cost no GPU. The tensorrt
# checks say what TensorRT there is; these lines never make TensorFlow's CUDA libraries fail.
OPTIONAL_LOADS = ("libnvinfer", "TF-TRT")


def essential_loader_warning(line: str) -> bool:
    """A TensorFlow loader warning about a library it needs for the GPU (not TensorRT)."""
    return any(k in line for k in LOADER_WARNINGS) and not any(k in line for k in OPTIONAL_LOADS)


if TYPE_CHECKING:
    from packaging.requirements import Requirement


def _key(name: str) -> str:
    """nvidia-cudnn-cu12 -> cudnn; nvidia-cuda-runtime-cu12 -> cuda-runtime."""
    return re.sub(r"-cu[0-9]+$", "", name.removeprefix("nvidia-"))


# --- the CUDA libraries TensorFlow will load ----------------------------------------------------


def _loader_copies(copies: list[LibraryCopy], major: str) -> list[LibraryCopy]:
    return [
        c
        for c in copies
        if c.on_loader_path and c.version and c.version.split(".")[0] == major and not c.load_error
    ]


def _loader_warnings(env: PythonEnvironment) -> list[str]:
    deep = runtime(env, TENSORFLOW.key)
    if deep is None:
        return []
    return [w for w in deep.warnings if essential_loader_warning(w)]


@framework_check(
    "frameworks.tensorflow.cuda-libraries",
    "the CUDA and cuDNN libraries TensorFlow loads are installed",
    tf_facts,
)
def cuda_libraries(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome | None:
    if t.kind != "cuda" or ctx.has_gpu is not True or env_os(ctx, env) != "linux":
        return None
    warnings = _loader_warnings(env)
    line = tf_line(t)
    if line is None or t.version is None:
        return Outcome.skip(f"{t.name}: its version is not known", *warnings)
    pip_era = line >= TF_AND_CUDA_FIRST
    verdict = _pip_libraries(ctx, env, t) if pip_era else _system_libraries(ctx, env, t)
    if warnings and verdict.status in (Status.PASS, Status.SKIP):
        libs = sorted(set(re.findall(r"'(lib[\w.+-]+\.so[\w.]*)'", " ".join(warnings))))
        return Outcome.fail(
            f"{t.name} could not load {', '.join(libs) or 'some of its GPU libraries'} "
            "when imported (doctor --deep)",
            *warnings,
            *verdict.evidence,
            fix=_and_cuda_fix(ctx, env, t) if pip_era else _system_fix(ctx, env, t),
        )
    verdict.evidence += warnings
    return verdict


def _and_cuda_fix(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Fix:
    return Fix.of(
        pip_step(
            ctx,
            env,
            "install TensorFlow's CUDA wheels",
            join(["pip", "install", f"tensorflow[and-cuda]=={t.version}"]),
            [change(env, "tensorflow", t.version)],
        )
    )


def _pip_libraries(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome:
    """TF 2.14+: the tensorflow[and-cuda] wheels, or system copies of the same majors."""
    pins = ctx.compat.tensorflow.and_cuda_for(t.version or "")
    if pins is None:
        return Outcome.skip(f"{t.name}: its tensorflow[and-cuda] pins are not in the compat data")
    missing: list[tuple[Requirement, str]] = []
    present, system = [], []
    for line in pins.requires:
        req = parse_requirement(line)
        if req is None:
            continue
        if not req.name.startswith("nvidia-"):
            continue
        pinned = next(iter(req.specifier), None)
        major = pinned.version.split(".")[0] if pinned else None
        have = env.dist(req.name)
        older = (
            have is not None
            and pinned is not None
            and _key(req.name) == "cudnn"
            and (want := parse_version(pinned.version)) is not None
            and _older_minor(have.version, want)
        )
        if older and have is not None and pinned is not None:
            # TensorFlow refuses a cuDNN minor older than its build's, wherever it comes from.
            note = f" ({have.version} installed: older than the {pinned.version} it was built with)"
            missing.append((req, note))
            continue
        if have is not None and (major is None or have.version.split(".")[0] == major):
            present.append(f"{req.name} {have.version}")
            continue
        cover = _system_cover(ctx, req.name, major)
        if cover is not None:
            system.append(f"{req.name} not installed; a system copy is on the loader path: {cover}")
            continue
        missing.append((req, f" ({have.version} installed: another major)" if have else ""))
    evidence = [f"tensorflow[and-cuda]=={pins.version} pins (compat data)", *system]
    if present:
        evidence.append("installed: " + ", ".join(present))
    essential = [r.name for r, _ in missing if _key(r.name) in TF_ESSENTIAL]
    listed = "missing: " + ", ".join(f"{r}{note}" for r, note in missing)
    if essential:
        return Outcome.fail(
            f"{t.name} cannot use the GPU: CUDA libraries it loads are not installed "
            f"({', '.join(essential)})",
            listed,
            *evidence,
            fix=_and_cuda_fix(ctx, env, t),
        )
    if missing:
        return Outcome.warn(
            f"{t.name}: some of its tensorflow[and-cuda] libraries are not installed "
            "(the profiler, XLA's ptxas or multi-GPU need them)",
            listed,
            *evidence,
            fix=_and_cuda_fix(ctx, env, t),
        )
    gap = _loader_gap(ctx, env, t, pins, [r for r in pins.requires if r.startswith("nvidia-")])
    return gap or Outcome.passed(f"{t.name}: the CUDA libraries it loads are installed", *evidence)


def _wheel_lib_dirs(env: PythonEnvironment, requires: list[str]) -> list[str]:
    """The nvidia/*/lib folders of the pinned wheels: nvidia-cuda-runtime-cu12 installs
    nvidia/cuda_runtime/lib in its site folder."""
    dirs = []
    for line in requires:
        req = parse_requirement(line)
        if req is None:
            continue
        name = req.name
        dist = env.dist(name)
        if dist is None or _key(name) == "cuda-nvcc":  # nvcc: a ptxas binary, no library
            continue
        site = dist.location or (env.site_packages[0] if env.site_packages else None)
        if site:
            dirs.append(f"{site}/nvidia/{_key(name).replace('-', '_')}/lib")
    return dirs


def _loader_gap(
    ctx: Context, env: PythonEnvironment, t: TfFacts, pins: TfAndCuda, requires: list[str]
) -> Outcome | None:
    """A release whose loader does not look where its own wheels put the libraries (2.16.1,
    as the compat data cites): installed is not found, unless LD_LIBRARY_PATH names them."""
    if pins.loader_gap is None or t.version is None or parse_version(t.version) != pins.version:
        return None
    dirs = _wheel_lib_dirs(env, requires)
    path = ctx.snapshot.system.env.get("LD_LIBRARY_PATH", "").split(":")
    absent = [d for d in dirs if d not in path]
    if not dirs or not absent:
        return None
    return Outcome.fail(
        f"{t.name} will not find its tensorflow[and-cuda] libraries: {pins.loader_gap}",
        "LD_LIBRARY_PATH " + ("is unset" if path == [""] else "lacks " + ", ".join(absent[:3])),
        f"source: {pins.loader_gap_source or pins.source}",
        fix=Fix.of(
            Step.set_env(
                "LD_LIBRARY_PATH",
                ":".join(dirs),
                "name the wheels' library folders on the loader path (in the environment's "
                "activation script to keep it)",
                then="${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}",
            )
        ),
    )


def _system_cover(ctx: Context, name: str, major: str | None) -> str | None:
    """A system copy on the loader path that TensorFlow would load instead of the wheel's:
    cuDNN of the same major; for a CUDA library, a CUDA runtime of the same CUDA major (a
    toolkit's libraries sit beside it)."""
    if _key(name) == "cudnn":
        found = _loader_copies(ctx.snapshot.cudnn.libraries, major) if major else []
    else:
        match = re.search(r"-cu([0-9]+)$", name)
        found = _loader_copies(ctx.snapshot.cuda.runtimes, match.group(1)) if match else []
    return f"{found[0].version} at {found[0].path}" if found else None


def _expected(ctx: Context, t: TfFacts) -> tuple[str, str] | None:
    """(CUDA, cuDNN) a TensorFlow before 2.14 loads: its build_info, else the compat data."""
    rel = tf_release(ctx, t)
    cuda = t.cuda or (rel.cuda if rel else None)
    cudnn = t.cudnn or (rel.cudnn if rel else None)
    if rel and rel.cudnn and cudnn and "." not in cudnn and rel.cudnn.split(".")[0] == cudnn:
        cudnn = rel.cudnn  # build_info says "8"; the tested configuration says which 8.x
    if not cuda or not cudnn or parse_version(cuda) is None or parse_version(cudnn) is None:
        return None
    return cuda, cudnn


def _system_fix(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Fix:
    expected = _expected(ctx, t)
    steps: list[Step | Literal["or"]] = []
    if expected:
        cuda, cudnn = expected
        steps += [
            Step.run(
                f"install CUDA {cuda} and cuDNN {cudnn} where the loader finds them, e.g. "
                "with conda",
                join(
                    [
                        "conda",
                        "install",
                        "-c",
                        "conda-forge",
                        f"cudatoolkit={cuda}",
                        f"cudnn={cudnn}",
                    ]
                ),
                Tool.CONDA,
                changes=[Change("cudatoolkit", None, cuda), Change("cudnn", None, cudnn)],
                environment=env.python,
                layer=Layer.CUDA,
            ),
            Step.set_env(
                "LD_LIBRARY_PATH", "", layer=Layer.CUDA, then="$CONDA_PREFIX/lib:$LD_LIBRARY_PATH"
            ),
        ]
    else:
        steps.append(
            Step.manual("install its CUDA and cuDNN where the loader finds them", Layer.CUDA)
        )
    pick = pick_tensorflow(ctx, env, cc_list(targets(ctx)), ctx.driver_version)
    if pick and Version(pick.version) >= TF_AND_CUDA_FIRST:
        steps += [
            OR,
            pip_step(
                ctx,
                env,
                f"move to TensorFlow {pick.version}, which brings its own",
                tf_uninstall(t) + pick.install,
                [change(env, "tensorflow", requirement=f"=={pick.version}.*")],
            ),
        ]
    return Fix.of(*steps)


def _older_minor(version: str | None, want: Version) -> bool:
    have = parse_version(version or "")
    return have is not None and have.release[:2] < want.release[:2]


def _system_libraries(ctx: Context, env: PythonEnvironment, t: TfFacts) -> Outcome:
    """Before 2.14: TensorFlow dlopens the system's CUDA and cuDNN by soname."""
    expected = _expected(ctx, t)
    if expected is None:
        return Outcome.skip(f"{t.name}: the CUDA/cuDNN it expects are not known")
    cuda, cudnn = expected
    want_cuda, want_cudnn = Version(cuda), Version(cudnn)
    runtimes = _loader_copies(ctx.snapshot.cuda.runtimes, str(want_cuda.major))
    if want_cuda.major < 11:  # before CUDA 11, sonames carry the minor too (libcudart.so.10.1)
        mm = f"{want_cuda.major}.{want_cuda.minor}"
        runtimes = [c for c in runtimes if same_version(c.version or "", mm)]
    cudnns = _loader_copies(ctx.snapshot.cudnn.libraries, str(want_cudnn.major))
    evidence = [f"{t.name} loads CUDA {cuda} and cuDNN {cudnn} from the system"]
    evidence += [f"found: libcudart {c.version} at {c.path}" for c in runtimes]
    evidence += [f"found: libcudnn {c.version} at {c.path}" for c in cudnns]
    problems = []
    if not runtimes:
        problems.append(f"no CUDA {cuda} runtime (libcudart) on the loader path")
    if not cudnns:
        problems.append(f"no cuDNN {want_cudnn.major} (libcudnn.so.{want_cudnn.major}) on it")
    elif all(_older_minor(c.version, want_cudnn) for c in cudnns):
        # TensorFlow refuses an older minor: "Loaded runtime CuDNN library: 8.0.4 but source
        # was compiled with: 8.1.0. CuDNN library needs to have matching major version and
        # equal or higher minor version."
        problems.append(
            f"the cuDNN on the loader path ({', '.join(c.version or '?' for c in cudnns)}) is "
            f"older than the cuDNN {cudnn} it was built with (it needs the same major and an "
            "equal or higher minor)"
        )
    if not problems:
        return Outcome.passed(
            f"{t.name}: CUDA {cuda} and cuDNN {cudnn} are on the loader path", *evidence
        )
    return Outcome.fail(
        f"{t.name} cannot use the GPU: {'; '.join(problems)}",
        *evidence,
        fix=_system_fix(ctx, env, t),
    )
