"""TensorRT, per Python environment (the pip tensorrt / tensorrt-cuXX wheels) and on the system
(libnvinfer copies): the CUDA major each build needs from the driver, and the GPUs the release
supports (compat/tensorrt.toml); TF-TRT where TensorFlow no longer has it."""

from __future__ import annotations

import re
from typing import Literal

from msgspec import Struct

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.builds import tf_facts
from gpucheck.checks.frameworks.driver_fit import Target, driver_outcome, targets, upgrade_driver
from gpucheck.checks.frameworks.per_environment import change, framework_check, merge, pip_step
from gpucheck.checks.registry import check
from gpucheck.compat import parse_version
from gpucheck.compat.extensions import TensorrtRelease
from gpucheck.model.environments import Distribution, ExtensionImport, PythonEnvironment
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.frameworks import TENSORRT
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join, quote

# (Patterns as text: re compiles one on first use, not at every start-up.)
_CU = r"^tensorrt-cu(\d+)(?:-|$)"
_REQ_CU = r"-cu(\d+)\b"
MAIN_DISTS = ("tensorrt", "tensorrt-cu13", "tensorrt-cu12", "tensorrt-cu11", "tensorrt-libs")


class Trt(Struct):
    dist: Distribution  # the one whose version is TensorRT's
    majors: list[int]  # CUDA majors of the builds installed
    evidence: str


def trt_facts(env: PythonEnvironment) -> Trt | None:
    dists = [d for d in env.distributions if TENSORRT.related(d.name)]
    main = next((d for n in MAIN_DISTS for d in dists if d.name == n), None)
    if main is None:
        return None
    majors = sorted({int(m.group(1)) for d in dists if (m := re.match(_CU, d.name))})
    how = "its package names"
    if not majors:  # tensorrt-libs 8.6: the CUDA wheels it requires
        requires = [line for d in dists for line in d.requires]
        majors = sorted({int(m.group(1)) for line in requires if (m := re.search(_REQ_CU, line))})
        how = "the nvidia-*-cuNN wheels it requires"
    names = ", ".join(f"{d.name} {d.version}" for d in dists)
    return Trt(main, majors, f"{names} (CUDA major from {how})")


# (why, the pip command, the distribution it moves): a TensorRT release for these GPUs.
Install = tuple[str, str, Change]


def _gpu_support(
    ctx: Context, row: TensorrtRelease, fix_spec: str, installed: str | None
) -> tuple[list[Target], list[Target], list[Install]]:
    """(GPUs below the release's range, GPUs above it, the installs that fit them)."""
    low = [t for t in targets(ctx) if row.min_cc and (v := parse_version(t.cc)) and v < row.min_cc]
    high = [t for t in targets(ctx) if row.max_cc and (v := parse_version(t.cc)) and v > row.max_cc]
    fixes: list[Install] = []
    for t in low[:1]:
        dropped, _ = ctx.compat.tensorrt.newest_for_cc(t.cc)
        if dropped is not None:
            text = f"install the last releases for {t.cc}"
            fixes.append(_pip_pin(text, fix_spec, installed, f"<{dropped}"))
    for t in high[:1]:
        _, added = ctx.compat.tensorrt.newest_for_cc(t.cc)
        if added is not None:
            text = f"install the first release with {t.cc} or newer"
            fixes.append(_pip_pin(text, fix_spec, installed, f">={added}", upgrade=True))
    return low, high, fixes


def _pip_pin(
    text: str, spec: str, installed: str | None, requirement: str, upgrade: bool = False
) -> Install:
    """An install step that moves `spec` to `requirement` with pip."""
    flag = "-U " if upgrade else ""
    return (
        text,
        f"pip install {flag}{quote(spec + requirement)}",
        Change(spec, installed, None, requirement),
    )


def _gpu_outcome(
    ctx: Context,
    name: str,
    row: TensorrtRelease,
    spec: str,
    env: PythonEnvironment | None,
) -> Outcome | None:
    """`env`: the environment whose wheels to change; None for a system TensorRT."""
    dist = env.dist(spec) if env else None
    installed = dist.version if dist else None
    low, high, installs = _gpu_support(ctx, row, spec, installed)
    if not (low or high):
        return None
    steps: list[Step | Literal["or"]] = []
    if env is None:
        steps += [
            Step.manual(
                "install a TensorRT release that supports these GPUs from NVIDIA's TensorRT "
                "downloads"
            ),
            OR,
        ]
    for i, (why, command, moved) in enumerate(installs):
        if i:
            steps.append(OR)
        if env is not None:
            steps.append(pip_step(ctx, env, why, command, [moved]))
        else:
            steps.append(Step.run(f"use the pip wheels: {why}", command, Tool.PIP, changes=[moved]))
    if not installs:
        steps.append(Step.manual(f"install a {name} release that supports these GPUs"))
    fix = Fix.of(*steps)
    bad = "; ".join(f"{t.label}, compute {t.cc}" for t in [*low, *high])
    span = f"{row.min_cc or '?'} to {row.max_cc or '?'}"
    return Outcome.fail(
        f"{name} does not support {bad}: it supports compute capability {span}",
        f"compat data: TensorRT {row.version}+ rows: {row.source}",
        fix=fix,
    )


@framework_check(
    "frameworks.tensorrt.support",
    "TensorRT's CUDA runs on this driver and supports the GPUs",
    trt_facts,
)
def tensorrt_support(ctx: Context, env: PythonEnvironment, trt: Trt) -> Outcome | None:
    name = f"TensorRT {trt.dist.version}"
    row = ctx.compat.tensorrt.release(trt.dist.version)
    items: list[tuple[str | None, Outcome | None]] = []
    if ctx.has_gpu is not False:
        for major in trt.majors:

            def fix(major: int = major) -> Fix:
                return Fix.of(upgrade_driver(ctx, f"{major}.0"))

            items.append(
                (
                    None,
                    driver_outcome(
                        ctx,
                        name,  # the CUDA major shows as "(CUDA 12.0)"
                        f"{major}.0",
                        fix,
                        trt.evidence,
                    ),
                )
            )
    if row is not None:
        spec = next((d.name for d in env.distributions if re.match(_CU, d.name)), "tensorrt")
        gpus = _gpu_outcome(ctx, name, row, spec, env)
        if gpus is None and targets(ctx):
            span = f"{row.min_cc or '?'} to {row.max_cc or '?'}"
            gpus = Outcome.passed(
                f"{name} supports the GPUs here (compute capability {span})",
                f"compat data, TensorRT {row.version}+: CUDA {', '.join(row.cuda) or '?'}; "
                f"cuDNN {row.cudnn or 'not listed'}",
            )
        if gpus is not None:
            items.append((None, gpus))
        if trt.majors and not set(trt.majors) & set(row.cuda_majors):
            items.append(
                (
                    None,
                    Outcome.info(
                        f"{name} has no CUDA {'/'.join(map(str, trt.majors))} builds in the "
                        f"compat data ({', '.join(map(str, row.cuda_majors))})",
                        row.source,
                    ),
                )
            )
    else:
        items.append((None, Outcome.skip(f"{name}: not in the compat data (older than 8.2)")))
    imported = next((i for i in env.extension_imports if i.name == TENSORRT.module), None)
    if imported is not None:
        items.append((None, _engine(ctx, env, trt, row, imported)))
    tf = tf_facts(env)
    until = ctx.compat.tensorrt.tf_without_trt
    tf_version = parse_version(tf.version or "") if tf else None
    if tf_version is not None and until is not None and tf_version >= until:
        items.append(
            (
                None,
                Outcome.info(
                    f"TensorFlow {tf.version if tf else ''} has no TF-TRT (disabled from "
                    f"{until}): TensorRT here serves other code only",
                    ctx.compat.tensorrt.tf_trt_source,
                ),
            )
        )
    if not items:
        return None
    return merge(items)


def _engine(
    ctx: Context,
    env: PythonEnvironment,
    trt: Trt,
    row: TensorrtRelease | None,
    imported: ExtensionImport,
) -> Outcome:
    """What importing TensorRT and building a one-layer engine showed (doctor --deep)."""
    name = f"TensorRT {trt.dist.version}"
    if imported.status == "ok":
        return Outcome.passed(f"{name} {imported.detail or 'imports'} (doctor --deep)")
    error = imported.error or imported.status
    low = error.lower()
    reinstall = pip_step(
        ctx,
        env,
        "reinstall it",
        join(["pip", "install", "--force-reinstall", f"{trt.dist.name}=={trt.dist.version}"]),
        [change(env, trt.dist.name, trt.dist.version)],
    )
    if "cannot open shared object file" in low:
        return Outcome.fail(
            "import tensorrt fails: a library is missing", error, fix=Fix.of(reinstall)
        )
    if "error: 35" in low or "insufficient" in low or "too old" in low:
        major = trt.majors[-1] if trt.majors else None
        fix = Fix.of(
            upgrade_driver(ctx, f"{major}.0")
            if major
            else Step.manual("upgrade the NVIDIA driver", Layer.DRIVER)
        )
        return Outcome.fail(
            f"{name} cannot start CUDA: the driver is too old for its CUDA build",
            error,
            fix=fix,  # as the driver verdict words it, so that the two fixes merge into one
        )
    if row is not None and ("sm" in low or "kernel image" in low or "compute capab" in low):
        gpus = _gpu_outcome(ctx, name, row, trt.dist.name, env)
        if gpus is not None:
            gpus.evidence.insert(0, error)
            return gpus
    return Outcome.fail(
        f"{name} could not build a one-layer engine (doctor --deep)",
        error,
        fix=Fix.of(
            Step.run(
                "run it by hand to see TensorRT's log",
                "python -c 'import tensorrt'",
                environment=env.python,
            ),
            reinstall,
        ),
    )


@check(
    "frameworks.tensorrt.libraries",
    "system TensorRT (libnvinfer) copies support the GPUs here",
)
def tensorrt_libraries(ctx: Context) -> Outcome | None:
    copies = ctx.snapshot.cuda.tensorrt
    if not copies:
        return None
    items: list[tuple[str | None, Outcome | None]] = []
    for copy in copies:
        where = f"{copy.path} ({copy.origin})"
        row = ctx.compat.tensorrt.release(copy.version or "")
        if row is None:
            items.append(
                (None, Outcome.info(f"libnvinfer {copy.version or '?'}: not judged", where))
            )
            continue
        name = f"TensorRT {copy.version} ({copy.path})"
        gpus = _gpu_outcome(ctx, name, row, "tensorrt", None)
        if gpus is not None:
            gpus.evidence.insert(0, where)
        items.append((None, gpus or Outcome.passed(f"{name} supports the GPUs here", where)))
    return merge(items)
