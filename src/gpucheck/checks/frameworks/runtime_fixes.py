"""The remedies of the deep pass's findings: run the framework by hand, reinstall it from
where it came, or install the library it misses at the version it requires."""

from __future__ import annotations

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.builds import tf_facts
from gpucheck.checks.frameworks.jax_builds import cupy_cuda, jax_facts
from gpucheck.checks.frameworks.packages import (
    canonical,
    is_package_for,
    package_key,
    parse_requirement,
    requirements_of,
    soname_major,
)
from gpucheck.checks.frameworks.per_environment import change, env_os, pip_step
from gpucheck.checks.frameworks.runtime_causes import built_cuda
from gpucheck.compat import parse_version
from gpucheck.compat.answers import TF_AND_CUDA_FIRST, TORCH_INDEX
from gpucheck.compat.frameworks import cuda_of_local_tag, major_minor
from gpucheck.model.environments import Distribution, FrameworkRuntime, PythonEnvironment
from gpucheck.model.fix import Change, Fix, Step
from gpucheck.model.frameworks import BY_KEY, CUPY, JAX, TENSORFLOW, TORCH
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join


def by_hand(framework: str) -> str:
    known = BY_KEY.get(framework)
    return known.smoke if known and known.smoke else import_command(framework)


def import_command(module: str) -> str:
    """`python -c 'import MODULE'`; for a name no import can spell (it would be Python code,
    not a module), what pip knows of it instead."""
    if all(part.isidentifier() for part in module.split(".")):
        return join(["python", "-c", f"import {module}"])
    return join(["python", "-m", "pip", "show", module])


def by_hand_step(env: PythonEnvironment, framework: str, why: str = "see the whole error") -> Step:
    """Run the framework's import and a GPU operation by hand, in this environment."""
    return Step.run(f"run it by hand to {why}", by_hand(framework), environment=env.python)


def framework_dists(env: PythonEnvironment, framework: str) -> list[Distribution]:
    """A framework's distributions here, the one that carries it first."""
    known = BY_KEY.get(framework)
    return known.installed(env) if known else []


def reinstall_step(
    ctx: Context, env: PythonEnvironment, rt: FrameworkRuntime, why: str = "reinstall it"
) -> Step:
    """The step that reinstalls the framework as it is, from where it came."""
    dists = framework_dists(env, rt.framework)
    main = dists[0] if dists else None
    name = main.name if main else rt.framework
    version = (main.version if main else None) or rt.version
    if version is None:
        return pip_step(
            ctx, env, why, join(["pip", "install", "--force-reinstall", name]), [change(env, name)]
        )
    same = [change(env, name, version)]
    tag = cuda_of_local_tag(version)
    if rt.framework == TORCH.key and tag:
        index = TORCH_INDEX.format(tag=tag.replace(".", ""))
        base = version.split("+", 1)[0]
        command = join(
            ["pip", "install", "--force-reinstall", f"torch=={base}", "--index-url", index]
        )
        return pip_step(ctx, env, why, command, same)
    line = major_minor(version)
    pip_era = line is not None and line >= TF_AND_CUDA_FIRST
    if name == TENSORFLOW.key and pip_era and env_os(ctx, env) == "linux":
        command = join(["pip", "install", "--force-reinstall", f"tensorflow[and-cuda]=={version}"])
        return pip_step(ctx, env, why, command, same)
    return pip_step(
        ctx, env, why, join(["pip", "install", "--force-reinstall", f"{name}=={version}"]), same
    )


def library_fix(ctx: Context, env: PythonEnvironment, rt: FrameworkRuntime, soname: str) -> Fix:
    """Install the missing library at the version the framework requires."""
    if soname.startswith("libcuda.so"):
        return Fix.of(
            Step.info(
                "libcuda.so.1 is the NVIDIA driver's own CUDA library, not a pip package: see "
                "cuda.driver-api",
                Layer.DRIVER,
            ),
            Step.set_env(
                "NVIDIA_DRIVER_CAPABILITIES",
                "compute,utility",
                "in a container, the capabilities must include compute",
                Layer.SYSTEM,
            ),
        )
    key = package_key(soname)
    if key is None:
        return Fix.of(reinstall_step(ctx, env, rt, f"reinstall {rt.framework}"))
    for dist in framework_dists(env, rt.framework):
        for req in requirements_of(ctx, env, dist) if dist.requires else []:
            if is_package_for(canonical(req.name), key):
                return Fix.of(
                    pip_step(
                        ctx,
                        env,
                        f"install what {dist.name} {dist.version} requires",
                        f"pip install '{req.name}{req.specifier}'",
                        [change(env, req.name, requirement=str(req.specifier) or None)],
                    )
                )
    t = tf_facts(env) if rt.framework == TENSORFLOW.key else None
    pins = ctx.compat.tensorflow.and_cuda_for(t.version) if t and t.version else None
    for line in pins.requires if pins and t else ():
        pin = parse_requirement(line)
        if pin is None:
            continue
        if t and is_package_for(canonical(pin.name), key):
            why = f"install TensorFlow's CUDA wheels (it brings {pin})"
            requirement = f"tensorflow[and-cuda]=={t.version}"
            return _install_fix(ctx, env, why, requirement, change(env, "tensorflow", t.version))
    major = parse_version(built_cuda(env, rt) or "")
    if rt.framework == JAX.key and (j := jax_facts(env)) is not None and j.majors:
        major = parse_version(str(j.majors[-1]))
    if rt.framework == CUPY.key:
        found = [c for d in env.distributions if (c := cupy_cuda(d.name))]
        major = parse_version(found[0][0]) if found else major
    if major is None:
        return Fix.of(
            reinstall_step(ctx, env, rt, f"reinstall {rt.framework} with its CUDA libraries")
        )
    lib_major = soname_major(soname)
    spec = f">={lib_major},<{int(lib_major) + 1}" if key == "cudnn" and lib_major else ""
    wheel = f"nvidia-{key}-cu{major.major}"
    changed = change(env, wheel, requirement=spec or None)
    why = f"install the wheel that brings {soname}"
    return _install_fix(ctx, env, why, f"{wheel}{spec}", changed, Layer.CUDA)


def _install_fix(
    ctx: Context,
    env: PythonEnvironment,
    why: str,
    requirement: str,
    changed: Change,
    layer: Layer | None = None,
) -> Fix:
    """A fix of one step: pip installs `requirement` into this environment."""
    command = join(["pip", "install", requirement])
    return Fix.of(pip_step(ctx, env, why, command, [changed], layer))
