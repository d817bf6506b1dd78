"""cuDNN checks: the copies installed outside the frameworks, and whether they fit the driver."""

from __future__ import annotations

from gpucheck.checks.context import Context
from gpucheck.checks.cuda.loading import copies_line, loader_conflicts, needs_newer_driver
from gpucheck.checks.fixes import upgrade_driver
from gpucheck.checks.registry import check
from gpucheck.compat import parse_version
from gpucheck.model.finding import Outcome, Subjects
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join


def _pip_for(ctx: Context, path: str, why: str, command: str, changes: list[Change]) -> Step:
    """`command` aimed at the environment whose site folder holds `path` (plain pip when
    gpucheck cannot tell, or when that environment is the only one)."""
    from gpucheck.checks.frameworks.per_environment import pip_step

    env = next(
        (
            e
            for e in ctx.snapshot.environments
            if any(path.startswith(site.rstrip("/") + "/") for site in e.site_packages)
        ),
        None,
    )
    if env is not None:
        return pip_step(ctx, env, why, command, changes, Layer.CUDNN)
    return Step.run(why, command, Tool.PIP, changes=changes, layer=Layer.CUDNN)


def _older_than_jaxlib(ctx: Context, evidence: list[str]) -> Outcome | None:
    """A monolithic jaxlib (+cudaNN.cudnnMM) loads the cuDNN on the loader path and refuses
    one older than its tag ('Loaded runtime CuDNN library: 8.5.0 but source was compiled
    with: 8.6.0', jax#16901): DNN library initialization fails."""
    from gpucheck.checks.frameworks.jax_builds import jaxlib_cudnn
    from gpucheck.checks.frameworks.per_environment import change, pip_step

    for env in ctx.snapshot.environments:
        jaxlib = env.dist("jaxlib")
        need = parse_version(jaxlib_cudnn(jaxlib.version if jaxlib else None) or "")
        if jaxlib is None or need is None:
            continue
        loaded = [
            (v, c)
            for c in ctx.snapshot.cudnn.libraries
            if c.on_loader_path and (v := parse_version(c.version or "")) and v.major == need.major
        ]
        if not loaded or any(v >= need for v, _ in loaded):
            continue
        _, newest = max(loaded, key=lambda item: item[0])
        want = f"{need.major}.{need.minor}"
        cuda = jaxlib.version.split("+cuda", 1)[1].split(".")[0]
        release = jaxlib.version.split("+")[0]
        wheels = pip_step(
            ctx,
            env,
            f"give it cuDNN {want} or newer: the pip cuDNN wheels (a fresh environment is "
            "cleanest)",
            join(
                [
                    "pip",
                    "install",
                    "--upgrade",
                    f"jax[cuda{cuda}_pip]=={release}",
                    "-f",
                    "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html",
                ]
            ),
            [change(env, "jax", release), change(env, "jaxlib", requirement=f"=={release}")],
        )
        return Outcome.fail(
            f"jaxlib {jaxlib.version} is built for cuDNN {want}, but the cuDNN on the loader "
            f"path is {newest.version}: JAX fails with 'DNN library initialization failed'",
            *evidence,
            fix=Fix.of(
                wheels,
                OR,
                Step.manual(
                    f"install cuDNN {want}+ for CUDA {cuda} where the loader finds it in place "
                    f"of {newest.path}",
                    Layer.CUDNN,
                ),
            ),
            subjects=Subjects(environments=[env.python], paths=[newest.path]),
        )
    return None


@check("cudnn.libraries", "cuDNN copies load, agree, and fit the driver")
def libraries(ctx: Context) -> Outcome:
    copies = ctx.snapshot.cudnn.libraries
    if not copies:
        return Outcome.info(
            "No cuDNN installed outside the frameworks",
            "PyTorch and TensorFlow from pip bring theirs (nvidia-cudnn-cu* wheels)",
        )
    evidence = [
        copies_line(c) + (f", built for CUDA {c.cuda_version}" if c.cuda_version else "")
        for c in copies
    ]
    broken = [c for c in copies if c.load_error]
    if broken:
        c = broken[0]
        if c.package and " " in c.package:
            name, version = c.package.split(" ", 1)
            fix = Fix.of(
                _pip_for(
                    ctx,
                    c.path,
                    "reinstall it",
                    join(["pip", "install", "--force-reinstall", f"{name}=={version}"]),
                    [Change(name, version, version)],
                )
            )
        else:
            fix = Fix.of(
                Step.manual(
                    "reinstall cuDNN so that all its sub-libraries (libcudnn_*.so) sit beside "
                    f"{c.path}, or remove the broken copy"
                )
            )
        return Outcome.warn(
            f"cuDNN at {c.path} cannot be loaded (its version call failed)",
            *evidence,
            fix=fix,
        )
    conflicts = loader_conflicts(copies)
    if conflicts:
        return Outcome.warn(
            "Several cuDNN versions compete on the loader path: which one a program gets "
            "depends on LD_LIBRARY_PATH order",
            *evidence,
            fix=Fix.of(
                Step.manual(
                    "keep one cuDNN on LD_LIBRARY_PATH / in ldconfig: remove the stale "
                    "/etc/ld.so.conf.d entries (frameworks from pip use their own)"
                ),
                Step.run("refresh the loader cache", "sudo ldconfig"),
            ),
        )
    too_old = _older_than_jaxlib(ctx, evidence)
    if too_old is not None:
        return too_old
    driver_major = (ctx.driver_cuda or "?").split(".")[0]
    for c in copies:
        newer = needs_newer_driver(ctx, c.cuda_version) if c.cuda_version else None
        if newer and newer[0] == "fail" and c.on_loader_path:
            return Outcome.warn(
                f"cuDNN {c.version} is built for CUDA {c.cuda_version}, newer than the driver's "
                f"CUDA {ctx.driver_cuda}",
                newer[1],
                *evidence,
                fix=Fix.of(
                    Step.manual(f"use a cuDNN built for CUDA {driver_major}.x"),
                    OR,
                    upgrade_driver(ctx, c.cuda_version or ""),
                ),
            )
    versions = ", ".join(sorted({c.version or "?" for c in copies}))
    if ctx.driver_cuda is None:
        return Outcome.info(f"cuDNN {versions} installed (no driver to run it)", *evidence)
    return Outcome.passed(f"cuDNN {versions} found", *evidence)
