"""XLA, the compiler under JAX and TensorFlow's jit_compile, per Python environment:
- the flags set through XLA_FLAGS / TF_XLA_FLAGS, read from the allowlisted environment and
  explained (a flag that hides GPUs or moves CUDA's data folder is the usual surprise);
- the ptxas XLA compiles with (the pip nvidia-cuda-nvcc wheel beside it, else PATH, else the
  CUDA toolkit) against the driver: a newer ptxas writes code the driver cannot load;
- under --deep, the GPUs XLA itself lists against the GPUs CUDA shows."""

from __future__ import annotations

import shlex

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.driver_fit import judge_driver, upgrade_driver
from gpucheck.checks.frameworks.per_environment import change, environment_check, merge, pip_step
from gpucheck.compat.frameworks import major_minor
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Outcome, Status
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.frameworks import FRAMEWORKS
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join

# What the flags people set most do; a flag not listed is shown as set, without comment.
FLAGS = {
    "--xla_gpu_cuda_data_dir": "where XLA looks for ptxas, nvlink and libdevice (a CUDA home)",
    "--xla_force_host_platform_device_count": "splits the CPU into N devices (testing)",
    "--xla_gpu_autotune_level": "kernel autotuning (0 turns it off: faster start, slower run)",
    "--xla_gpu_enable_triton_gemm": "Triton for matrix multiplications",
    "--xla_gpu_strict_conv_algorithm_picker": "fail, rather than fall back, when cuDNN conv "
    "algorithms fail",
    "--xla_dump_to": "dumps the compiled programs to a folder (debugging; slow)",
    "--xla_gpu_deterministic_ops": "deterministic kernels (slower)",
    "--tf_xla_auto_jit": "TensorFlow auto-clustering (2: on for GPU)",
    "--tf_xla_cpu_global_jit": "TensorFlow XLA auto-clustering on the CPU too",
    "--tf_xla_enable_xla_devices": "TensorFlow's legacy XLA_GPU devices (removed in TF 2.x)",
}


def _uses_xla(env: PythonEnvironment) -> bool:
    return any(fw.xla and fw.installed(env) for fw in FRAMEWORKS)


def _flags(ctx: Context) -> list[str]:
    lines = []
    for var in ("XLA_FLAGS", "TF_XLA_FLAGS"):
        value = ctx.snapshot.system.env.get(var)
        if not value:
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            words = value.split()
        for word in words:
            name = word.split("=", 1)[0]
            meaning = FLAGS.get(name)
            lines.append(f"{var}: {word}" + (f": {meaning}" if meaning else ""))
    return lines


def _which(ctx: Context, env: PythonEnvironment, name: str) -> tuple[str, str] | None:
    """(version, where from) of the `name` tool XLA will use: the environment's own pip copy
    (nvidia-cuda-nvcc), else the first on PATH, else the CUDA toolkit's."""
    tools = [t for t in ctx.snapshot.cuda.ptxas if t.name == name and t.version]
    in_env = [
        t for t in tools if t.origin == "pip" and env.prefix and t.path.startswith(env.prefix)
    ]
    wheel = next((d for d in env.distributions if d.name.startswith("nvidia-cuda-nvcc")), None)
    if in_env:
        return in_env[0].version or "", f"{name}: {in_env[0].path} (pip)"
    if wheel is not None and name == "ptxas":
        return wheel.version, f"ptxas: from {wheel.name} {wheel.version}"
    others = [t for t in tools if t.origin != "pip"]
    if others:
        return others[0].version or "", f"{name}: {others[0].path} ({others[0].origin})"
    return None


def _tool(ctx: Context, env: PythonEnvironment, name: str) -> Outcome | None:
    """One tool XLA compiles with, judged against the driver like a CUDA release: minor version
    compatibility does not cover it, since the driver itself must load what it writes."""
    found = _which(ctx, env, name)
    verdict = judge_driver(ctx, found[0]) if found else None
    if found is None or verdict is None:
        return None
    version, how = found
    status, why = verdict
    mm, have = major_minor(version), major_minor(ctx.driver_cuda or "")
    if status is Status.PASS or (
        status is Status.INFO and have is not None and mm is not None and mm <= have
    ):
        return Outcome.passed(f"XLA's {name} {mm} suits driver {ctx.driver_version}", how)
    if status not in (Status.INFO, Status.FAIL):
        return None
    wheel = next((d for d in env.distributions if d.name.startswith("nvidia-cuda-nvcc")), None)
    keep = None
    if wheel is not None and have is not None and name == "ptxas":
        below = f"<{have.major}.{have.minor + 1}"
        keep = pip_step(
            ctx,
            env,
            "keep this driver and install a ptxas no newer than it",
            join(["pip", "install", f"{wheel.name}{below}"]),
            [change(env, wheel.name, requirement=below)],
            Layer.CUDA,
        )
    fix = Fix.of(upgrade_driver(ctx, version), OR, keep)
    jaxlib = env.dist("jaxlib")
    row = ctx.compat.jax.ptxas_behaviour(jaxlib.version) if jaxlib is not None else None
    if row is not None and row.behaviour == "fails":
        # Older jaxlib releases do not notice: the kernels ptxas wrote do not load.
        return Outcome.fail(
            f"XLA's {name} {mm} is newer than the driver's CUDA {have or '?'}: jaxlib "
            f"{jaxlib.version if jaxlib else '?'} does not fall back, so its kernels fail to load "
            "('no kernel image is available for execution on the device')",
            how,
            why,
            f"compat data: {row.source}",
            fix=fix,
        )
    if row is not None and row.behaviour == "unknown":
        return Outcome.warn(
            f"XLA's {name} {mm} is newer than the driver's CUDA {have or '?'}: whether jaxlib "
            f"{jaxlib.version if jaxlib else '?'} falls back to serial compilation (0.4.24 on) "
            "or fails to load its kernels (0.3.15 and before) is not known for this release",
            how,
            why,
            f"compat data: {row.source}",
            fix=fix,
        )
    # From the jaxlib releases that notice (and under TensorFlow's XLA, not judged by
    # release), XLA falls back to serial compilation and runs: a warning that names the cost.
    return Outcome.warn(
        f"XLA's {name} {mm} is newer than the driver's CUDA {have or '?'}: XLA falls back to "
        "slower, serial compilation (code it compiled itself would not load: 'the provided PTX "
        "was compiled with an unsupported toolchain')",
        how,
        why,
        *([f"compat data: {row.source}"] if row is not None else []),
        fix=fix,
    )


def _devices(ctx: Context, env: PythonEnvironment) -> list[tuple[str | None, Outcome | None]]:
    """Under --deep: XLA lists fewer GPUs than CUDA shows."""
    items: list[tuple[str | None, Outcome | None]] = []
    shown = len([g for g in ctx.visibility.visible if g.handle_error is None])
    for rt in env.runtimes:
        if rt.xla_devices is None or not shown:
            continue
        seen = len(rt.xla_devices)
        label = f"{rt.framework} {rt.version or ''}".strip()
        if seen >= shown:
            items.append((None, Outcome.passed(f"{label}: XLA sees {seen} GPU(s)")))
            continue
        items.append(
            (
                None,
                Outcome.fail(
                    f"{label}: XLA sees {seen} GPU(s) while CUDA shows {shown}",
                    *(rt.xla_devices or ["no XLA GPU device"]),
                    *([rt.xla_error] if rt.xla_error else []),
                    fix=Fix.of(
                        Step.info(
                            "check XLA_FLAGS/TF_XLA_FLAGS and the framework's CUDA plugin (see "
                            "frameworks.jax.cpu-build, frameworks.tensorflow.cuda-libraries)"
                        ),
                        Step.run(
                            "see what XLA lists",
                            "python -c 'import jax; print(jax.devices())'",
                            environment=env.python,
                        ),
                    ),
                ),
            )
        )
    return items


@environment_check(
    "frameworks.xla.compiler", "XLA's flags, the ptxas it compiles with, its GPU devices"
)
def xla(ctx: Context, env: PythonEnvironment) -> Outcome | None:
    if not _uses_xla(env):
        return None
    items: list[tuple[str | None, Outcome | None]] = []
    flags = _flags(ctx)
    if flags:
        items.append((None, Outcome.info("XLA flags are set", *flags)))
    if ctx.has_gpu:
        items += [(None, _tool(ctx, env, name)) for name in ("ptxas", "nvlink")]
        items += _devices(ctx, env)
    return merge(items)
