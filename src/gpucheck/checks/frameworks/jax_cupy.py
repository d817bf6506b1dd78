"""JAX and CuPy checks, per Python environment: whether JAX has its CUDA plugin, and whether
the CUDA of JAX's plugin and of CuPy's wheel runs on this driver."""

from __future__ import annotations

from collections.abc import Callable

from packaging.requirements import Requirement

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.builds import cannot_use_gpus, satisfies_text
from gpucheck.checks.frameworks.driver_fit import (
    arch_name,
    cc_list,
    driver_outcome,
    judge_driver,
    targets,
    upgrade_driver,
    upgrade_or_keep,
)
from gpucheck.checks.frameworks.jax_builds import JaxFacts, cupy_cuda, jax_facts, jaxlib_built
from gpucheck.checks.frameworks.per_environment import (
    change,
    compat_os,
    env_os,
    environment_check,
    framework_check,
    merge,
    pip_step,
    runtime,
)
from gpucheck.compat import parse_version
from gpucheck.compat.answers import cuda_targets
from gpucheck.compat.frameworks import JaxRelease, code_for, major_minor
from gpucheck.install.picks import cupy_pick
from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.finding import Outcome, Status
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.frameworks import CUPY
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join

# --- JAX ------------------------------------------------------------------------------------------


def _jax_majors(ctx: Context) -> list[int]:
    """The CUDA majors JAX has published wheels for (compat data)."""
    return sorted(
        {
            int(m)
            for r in ctx.compat.jax.releases
            for m in r.cuda_majors
            if m.isascii() and m.isdigit()
        }
    )


def _newest_toolkit(ctx: Context, major: int) -> str | None:
    versions = [t.version for t in ctx.compat.toolkits if t.version.major == major]
    return f"{max(versions).major}.{max(versions).minor}" if versions else None


def jax_major(ctx: Context) -> int | None:
    """The newest CUDA major with JAX wheels that runs on this driver and whose newest toolkit
    can target every GPU here (JAX's CUDA 13 wheels need Turing or newer, for instance)."""
    driver, ccs = ctx.driver_version, cc_list(targets(ctx))
    for major in reversed(_jax_majors(ctx)):
        if driver and not ctx.compat.cuda_runs_on_driver(f"{major}.0", driver, ctx.os):
            continue
        newest = _newest_toolkit(ctx, major)
        if newest is None or not cuda_targets(ctx.compat, newest, ccs):
            continue
        return major
    return None


def jax_step(ctx: Context, env: PythonEnvironment, remove: list[str] | None = None) -> Step:
    if env_os(ctx, env) != "linux":
        return Step.manual(
            "JAX's CUDA wheels are for Linux only: use WSL2 (Ubuntu) and, there, "
            'pip install -U "jax[cuda12]"'
        )
    major = jax_major(ctx)
    if major is None:
        majors = _jax_majors(ctx)
        if not majors:
            return Step.manual(
                "no JAX CUDA wheels in gpucheck's compat data run here: upgrade the driver",
                Layer.DRIVER,
            )
        upgrade = upgrade_driver(ctx, f"{majors[-1]}.0")
        upgrade.text = f"no JAX CUDA wheels in gpucheck's compat data run here: {upgrade.text}"
        return upgrade
    uninstall = join(["pip", "uninstall", "-y", *remove]) + " && " if remove else ""
    changes = [change(env, name, remove=True) for name in remove or []]
    return pip_step(
        ctx,
        env,
        f"install JAX for CUDA {major}: the newest JAX CUDA major this driver and these GPUs run",
        f'{uninstall}pip install -U "jax[cuda{major}]"',
        [*changes, change(env, "jax"), change(env, f"jax-cuda{major}-plugin")],
    )


def jax_fix(ctx: Context, env: PythonEnvironment, remove: list[str] | None = None) -> Fix:
    return Fix.of(jax_step(ctx, env, remove))


@framework_check(
    "frameworks.jax.cpu-build", "JAX has its CUDA plugin where NVIDIA GPUs are", jax_facts
)
def jax_cpu_build(ctx: Context, env: PythonEnvironment, j: JaxFacts) -> Outcome:
    if j.jaxlib is None:
        return Outcome.skip("jax without jaxlib cannot be imported (see frameworks.smoke-test)")
    plugins = [f"{p.name} {p.version}" for p in j.plugins]
    if j.majors:
        lib = parse_version(j.jaxlib)
        stale = [
            p
            for p in j.plugins
            if p.name.endswith("-plugin")
            and lib is not None
            and (v := parse_version(p.version)) is not None
            and v.release != lib.release
        ]
        if stale:
            # JAX refuses a plugin built for another jaxlib: no GPU at all, so a FAIL.
            # The aligning fix keeps the installed jaxlib and moves the plugin pair to it.
            assert lib is not None
            # All of it: jaxlib's plugin_support compares every dotted number (0.9.0.1).
            version = lib.base_version
            prefixes = {s.name.removesuffix("plugin") for s in stale}  # "jax-cuda12-"
            names = sorted(
                p.name
                for p in j.plugins
                if p.name.removesuffix("plugin").removesuffix("pjrt") in prefixes
                and (v := parse_version(p.version)) is not None
                and v.release != lib.release
            )
            wanted = join(f"{n}=={version}" for n in names)
            return Outcome.fail(
                f"{stale[0].name} {stale[0].version} does not match {j.name}: JAX does not "
                "load a CUDA plugin built for another jaxlib, and runs on the CPU",
                *plugins,
                fix=Fix.of(
                    pip_step(
                        ctx,
                        env,
                        f"align the CUDA plugin with jaxlib {version} (jaxlib stays)",
                        f"pip install {wanted}",
                        [change(env, n, version) for n in names],
                    )
                ),
            )
        short = _conda_cudnn_short(env)
        if short is not None:
            spec, have = short
            return Outcome.fail(
                f"{j.name} from conda needs cuDNN {spec}; conda's cudnn here is {have}: JAX "
                "fails to load its cuDNN and cannot run convolutions",
                *plugins,
                f"conda's jaxlib {j.jaxlib} depends on cudnn {spec}",
                fix=Fix.of(
                    Step.run(
                        "install the cuDNN this jaxlib was built for (in its conda "
                        f"environment, {env.prefix})",
                        join(["conda", "install", "-c", "conda-forge", f"cudnn{spec}"]),
                        Tool.CONDA,
                        changes=[Change("cudnn", have, None, requirement=spec)],
                        environment=env.python,
                    )
                ),
            )
        how = "a CUDA jaxlib" if j.monolithic else "the CUDA plugin"
        majors = ", ".join(map(str, j.majors))
        return Outcome.passed(f"{j.name} with {how} for CUDA {majors}", *plugins)
    evidence = f"{j.name} is installed without a jax-cuda*-plugin: a CPU-only jaxlib"
    if ctx.has_gpu is False:
        return Outcome.info(
            f"{j.name} is CPU-only; this machine has no NVIDIA GPU, so there is nothing to fix",
            evidence,
        )
    if ctx.has_gpu is None:
        return Outcome.skip(
            f"{j.name} is CPU-only; whether this machine has an NVIDIA GPU is not known"
        )
    # A jaxlib another package pulled in, beside a working torch or TensorFlow, costs only
    # what runs JAX: a warning on JAX, not a machine that cannot use its GPUs.
    title = f"{j.name} is CPU-only: JAX cannot use this machine's NVIDIA GPU(s)"
    return cannot_use_gpus(ctx, env, "jax", title, evidence, jax_fix(ctx, env))


def _conda_cudnn_short(env: PythonEnvironment) -> tuple[str, str] | None:
    """(the cuDNN floor a conda-forge jaxlib's depends set, the cudnn conda installed) where
    that cudnn is below it (a --force or a pip install over conda's)."""
    jaxlib = env.dist("jaxlib")
    have = env.conda_libraries.get("cudnn")
    if jaxlib is None or not jaxlib.build or have is None:
        return None
    for line in jaxlib.conda_depends:
        name, _, spec = line.partition(" ")
        spec = spec.split(" ")[0]
        if name == "cudnn" and spec and not satisfies_text(spec, have):
            return spec, have
    return None


def _cuda_runtime_dist(env: PythonEnvironment, major: int) -> Distribution | None:
    """The pip CUDA runtime JAX's plugin loads (CUDA 13's wheel dropped the -cuNN suffix)."""
    return env.dist(f"nvidia-cuda-runtime-cu{major}") or (
        env.dist("nvidia-cuda-runtime") if major >= 13 else None
    )


@framework_check("frameworks.jax.cuda-driver", "JAX's CUDA runs on this driver", jax_facts)
def jax_cuda_driver(ctx: Context, env: PythonEnvironment, j: JaxFacts) -> Outcome | None:
    if not j.majors or ctx.has_gpu is False:
        return None
    items: list[tuple[str | None, Outcome | None]] = []
    for major in j.majors:
        dist = _cuda_runtime_dist(env, major)
        mm = major_minor(dist.version) if dist else None
        # Without its pip runtime, only the major is known: judged at the major's floor.
        tagged = j.monolithic_cuda if j.monolithic == major else None
        # +cuda11.cudnn82 names the major only; the compat data knows some wheels' build CUDA.
        built = jaxlib_built(ctx.compat.jax, j.jaxlib) if tagged == str(major) else None
        source = f"its CUDA runtime: {dist.name} {dist.version}" if dist else None
        if mm is not None and mm.major == major:
            cuda = str(mm)
        elif tagged is not None and "." in tagged:
            cuda = tagged  # the 0.1.x tag names the minor too: +cuda112 is CUDA 11.2
        elif built is not None:
            cuda = built[0]
            source = f"jaxlib {j.jaxlib} was built with CUDA {cuda} (jax.toml, {built[1].version})"
        else:
            cuda = f"{major}.0"
        plugins = [p.name for p in j.plugins if p.name.startswith(f"jax-cuda{major}-")]

        def fix(major: int = major, cuda: str = cuda, plugins: list[str] = plugins) -> Fix:
            other = jax_major(ctx)
            keep = jax_step(ctx, env, plugins) if other is not None and other != major else None
            return upgrade_or_keep(ctx, cuda, keep)

        name = f"JAX's CUDA {major} " + ("plugin" if plugins else "jaxlib")
        evidence = [source] if source else []
        jit = _kernel_ptx(ctx, name, cuda, built[1], fix, evidence) if built else None
        items.append((None, jit or driver_outcome(ctx, name, cuda, fix, *evidence)))
        items.append((None, _ptxas(ctx, env, major)))
    return merge(items)


def _kernel_ptx(
    ctx: Context,
    name: str,
    cuda: str,
    row: JaxRelease,
    fix: Callable[[], Fix],
    evidence: list[str],
) -> Outcome | None:
    """FAIL where a monolithic jaxlib's CUDA runs through minor version compatibility only but a
    GPU here has no SASS in the wheel: the driver must JIT-compile jaxlib's own kernels from PTX
    written by a newer CUDA than its own, and refuses ('the provided PTX was compiled with an
    unsupported toolchain'). JAX's README of Jan 2022 (compat data) asked such GPUs for the
    driver of the wheels' CUDA."""
    verdict = judge_driver(ctx, cuda)
    sass = [(v, False) for v in map(parse_version, row.sass) if v is not None]
    if verdict is None or verdict[0] is not Status.INFO or not sass:
        return None
    jit = [t for t in targets(ctx) if code_for(t.cc, sass, []) is None]
    if not jit:
        return None
    gpus = "; ".join(f"{t.label}, {arch_name(ctx, t.cc)}" for t in jit)
    have = major_minor(ctx.driver_cuda)
    return Outcome.fail(
        f"{name} (CUDA {major_minor(cuda)}) needs a newer NVIDIA driver than "
        f"{ctx.driver_version}: its kernels are JIT-compiled from PTX on {gpus}",
        f"jaxlib {row.version}+ carries SASS for compute capability {', '.join(row.sass)} "
        f"only; on other GPUs the driver JIT-compiles its kernels' PTX, written by CUDA "
        f"{major_minor(cuda)}, which driver {ctx.driver_version}"
        + (f" (CUDA {have})" if have else "")
        + " cannot ('the provided PTX was compiled with an unsupported toolchain')",
        *evidence,
        fix=fix(),
    )


def _ptxas_dist(env: PythonEnvironment, major: int) -> Distribution | None:
    """The pip ptxas XLA compiles with (CUDA 13's wheel dropped the -cuNN suffix)."""
    return env.dist(f"nvidia-cuda-nvcc-cu{major}") or (
        env.dist("nvidia-cuda-nvcc") if major >= 13 else None
    )


def _ptxas(ctx: Context, env: PythonEnvironment, major: int) -> Outcome | None:
    """XLA compiles its kernels with the pip ptxas. Newer than the driver's CUDA, the driver
    cannot link what it makes, so XLA turns parallel compilation off ('The NVIDIA driver's CUDA
    version is 12.4 which is older than the PTX compiler version (12.6.85)', jax#25718,
    jax#19821): it runs, compiling slower. Downgrading ptxas is no fix: JAX requires 12.6.85+
    against a Hopper miscompile (jax#25091)."""
    dist = _ptxas_dist(env, major)
    have, ptxas = major_minor(ctx.driver_cuda), major_minor(dist.version) if dist else None
    if dist is None or have is None or ptxas is None or ptxas.major != major or ptxas <= have:
        return None
    upgrade = upgrade_driver(ctx, f"{ptxas.major}.{ptxas.minor}")
    return Outcome.warn(
        f"XLA's PTX compiler ({dist.name} {dist.version}) is newer than the driver's CUDA "
        f"{have}: XLA disables parallel compilation, so every compile is slower",
        "the driver cannot link PTX from a newer toolchain (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)",
        fix=Fix.of(
            upgrade,
            OR,
            Step.manual(
                "install NVIDIA's CUDA forward compatibility package (data-centre GPUs only)",
                Layer.DRIVER,
            ),
        ),
    )


# --- CuPy -----------------------------------------------------------------------------------------


@environment_check("frameworks.cupy.cuda-driver", "CuPy's CUDA runs on this driver")
def cupy(ctx: Context, env: PythonEnvironment) -> Outcome | None:
    wheels = [(d, found) for d in env.distributions if (found := cupy_cuda(d.name)) is not None]
    if not wheels or ctx.has_gpu is False:
        return None
    deep = runtime(env, CUPY.key)
    items: list[tuple[str | None, Outcome | None]] = []
    for dist, (cuda, any_minor) in wheels:
        evidence = []
        if any_minor and deep is not None and deep.cuda_version:
            cuda = deep.cuda_version  # the CUDA runtime cupy-cudaNNx really loaded
            evidence.append(f"cupy.cuda.runtime.runtimeGetVersion(): {cuda} (doctor --deep)")

        def fix(dist: Distribution = dist, cuda: str = cuda) -> Fix:
            return Fix.of(upgrade_driver(ctx, cuda), OR, _cupy_switch(ctx, env, dist))

        name = f"{dist.name} {dist.version}"
        items.append((None, driver_outcome(ctx, name, cuda, fix, *evidence)))
    return merge(items)


def _cupy_switch(ctx: Context, env: PythonEnvironment, dist: Distribution) -> Step | None:
    """Keep this driver: the CuPy `gpucheck install cupy` names for it, these GPUs and this
    Python (the release line and the [ctk] extra where the line has one)."""
    if ctx.driver_version is None:
        return None
    ccs = cc_list(targets(ctx))
    pick = cupy_pick(ctx.compat, ccs, ctx.driver_version, env.version, compat_os(ctx, env))
    if pick is None or pick[0] == dist.name:
        return None
    package, requirement = pick
    return pip_step(
        ctx,
        env,
        "keep this driver and install the CuPy for it",
        join(["pip", "uninstall", "-y", dist.name])
        + " && "
        + join(["pip", "install", requirement]),
        [
            change(env, dist.name, remove=True),
            change(env, package, requirement=str(Requirement(requirement).specifier) or None),
        ],
    )
