"""The CUDA toolkit check: the nvcc a build uses (PATH, CUDA_HOME) against the driver and GPUs."""

from __future__ import annotations

from typing import Literal

from gpucheck.checks.context import Context
from gpucheck.checks.cuda.loading import needs_newer_driver
from gpucheck.checks.fixes import upgrade_driver
from gpucheck.checks.registry import check
from gpucheck.compat import parse_version
from gpucheck.model.finding import Outcome, Subjects
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join


@check("cuda.toolkit", "the CUDA toolkit (nvcc) fits the driver and the GPUs")
def toolkit(ctx: Context) -> Outcome | None:
    cuda = ctx.snapshot.cuda
    env = ctx.snapshot.system.env
    home_var = next((v for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)), None)
    nvcc = cuda.nvcc
    chosen = home_var is not None and cuda.cuda_home and cuda.cuda_home_source == home_var
    no_toolkit = cuda.cuda_home_nvcc is False or (cuda.cuda_home_nvcc is None and nvcc is None)
    if home_var is not None and chosen and no_toolkit:
        # Builds (torch extensions, CMake's FindCUDAToolkit) take the toolkit from here, not
        # from the nvcc on PATH: a wrong home breaks them even where nvcc runs.
        on_path = f"nvcc on PATH is {nvcc.path}" if nvcc else "no nvcc on PATH either"
        root = (nvcc.toolkit if nvcc else None) or "/usr/local/cuda-X.Y"
        return Outcome.warn(
            f"{home_var} points to a folder without a CUDA toolkit",
            f"{home_var}={env[home_var]} has no bin/nvcc; {on_path}",
            fix=Fix.of(
                Step.set_env(home_var, root, "point it at the toolkit's folder"),
                OR,
                Step.unset_env(home_var),
            ),
            subjects=Subjects(paths=[env[home_var]]),
        )
    if nvcc is None:
        return Outcome.info(
            "No CUDA toolkit (nvcc): fine for pip/conda frameworks, which ship their own CUDA "
            "libraries; needed only to compile CUDA code or extensions"
        )
    if nvcc.version is None:
        return Outcome.warn(
            f"nvcc at {nvcc.path} does not say its version",
            str(nvcc.error),
            fix=Fix.of(
                Step.run("see why", join([nvcc.path, "--version"])),
                Step.manual("reinstall the toolkit if it is broken"),
            ),
        )
    evidence = [f"nvcc {nvcc.version} at {nvcc.path}"]
    if cuda.cuda_home:
        evidence.append(f"CUDA home {cuda.cuda_home} (from {cuda.cuda_home_source})")
    if ctx.driver_cuda is None:
        return Outcome.info(
            f"CUDA toolkit {nvcc.version} installed (no driver to run it)", *evidence
        )
    newer = needs_newer_driver(ctx, nvcc.version)
    if newer:
        severity, why = newer
        steps: list[Step | Literal["or"]] = [
            upgrade_driver(ctx, nvcc.version),
            OR,
            Step.set_env(
                "PATH",
                f"/usr/local/cuda-{ctx.driver_cuda}/bin",
                f"use a toolkit no newer than CUDA {ctx.driver_cuda} (where one is installed)",
                then=":$PATH",
            ),
        ]
        jit = []
        if severity == "warn":
            # Minor-version compatibility runs SASS only: nvcc's default build (no -arch for
            # these GPUs) leaves them PTX to JIT, which a driver older than the toolkit cannot
            # load (nvbandwidth#61: cudaErrorUnsupportedPtxVersion). Default builds fail here.
            sms = sorted(
                {
                    f"sm_{g.compute_capability.replace('.', '')}"
                    for g in ctx.gpus
                    if g.compute_capability
                }
            )
            jit.append(
                "what it builds without SASS for these GPUs carries PTX, which this driver "
                "cannot JIT-compile (cudaErrorUnsupportedPtxVersion: 'the provided PTX was "
                "compiled with an unsupported toolchain')"
            )
            if sms:
                flags = " ".join(f"-gencode arch=compute_{s[3:]},code={s}" for s in sms)
                steps += [
                    OR,
                    Step.manual(f"build SASS for these GPUs only: nvcc {flags} ...", Layer.JOB),
                ]
        # Only what this nvcc builds is at stake: pip and conda frameworks bring their own
        # CUDA and ignore the toolkit on PATH. A warning that names it, never a failure of
        # the machine: a CI gate must not block a healthy node for the nvcc on its PATH.
        return Outcome.warn(
            f"CUDA toolkit {nvcc.version} is newer than the driver supports: "
            + (
                "code built with it runs, but not its PTX"
                if severity == "warn"
                else "code built with it does not run here"
            ),
            why,
            *jit,
            "frameworks from pip or conda bring their own CUDA libraries and do not use this "
            "toolkit",
            *evidence,
            fix=Fix.of(*steps),
        )
    arch = ctx.compat.cc_range(nvcc.version)
    if arch is not None:
        outside = [
            g
            for g in ctx.gpus
            if (cc := parse_version(g.compute_capability or "")) is not None
            and not (arch.min_cc <= cc <= arch.max_cc)
        ]
        if outside:
            return Outcome.warn(
                f"nvcc {nvcc.version} cannot build for {len(outside)} of the GPUs",
                *[
                    f"GPU {g.index} {g.name}: compute capability {g.compute_capability}, "
                    f"this toolkit builds for {arch.min_cc} to {arch.max_cc}"
                    for g in outside
                ],
                *evidence,
                fix=Fix.of(
                    Step.manual(
                        "use a CUDA toolkit whose architecture range includes these GPUs "
                        "(see gpucheck's compat data, compat/cuda.toml)"
                    )
                ),
            )
    return Outcome.passed(
        f"CUDA toolkit {nvcc.version} runs on this driver (CUDA {ctx.driver_cuda})", *evidence
    )
