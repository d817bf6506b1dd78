"""What a failed smoke test means: the framework's error mapped to its cause on this machine
(memory held by other processes, exclusive mode, no kernel image, the driver too old), else
to what the message catalog `gpucheck explain` reads says of it (one matcher, shared)."""

from __future__ import annotations

import re

from gpucheck.checks.context import Context
from gpucheck.checks.cuda.causes import CUINIT_CAUSES
from gpucheck.checks.fixes import share_gpus
from gpucheck.checks.frameworks.builds import (
    pick_change,
    pick_tensorflow,
    tf_facts,
    torch_facts,
    torch_fix,
)
from gpucheck.checks.frameworks.driver_fit import Target, cc_list, targets, upgrade_driver
from gpucheck.checks.frameworks.per_environment import pip_step
from gpucheck.compat.catalog_step import catalog_step
from gpucheck.compat.frameworks import major_minor
from gpucheck.compat.matching import Lines, matcher
from gpucheck.model.environments import FrameworkRuntime, PythonEnvironment
from gpucheck.model.finding import Status, severity
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.frameworks import TENSORFLOW, TORCH
from gpucheck.model.layers import Layer

XID = Step.run("look for Xid errors", "sudo dmesg | grep -i xid", layer=Layer.GPUS)


def built_cuda(env: PythonEnvironment, rt: FrameworkRuntime) -> str | None:
    if rt.framework == TORCH.key and (t := torch_facts(env)) is not None:
        return t.cuda
    if rt.framework == TENSORFLOW.key and (tf := tf_facts(env)) is not None:
        return tf.cuda
    return rt.cuda_version


def _device_gpu(ctx: Context, device: str | None) -> Target | None:
    """The GPU behind a framework's device ("cuda:1", "/GPU:1", "cuda(id=1)"), when CUDA's
    order surely matches the driver's: CUDA_DEVICE_ORDER=PCI_BUS_ID, or identical GPUs."""
    match = re.search(r"([0-9]+)\)?$", (device or "").strip())
    found = targets(ctx)
    if match is None or int(match.group(1)) >= len(found):
        return None
    names = {g.name for g in ctx.visibility.visible}
    same = len(names) == 1 or ctx.snapshot.system.env.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID"
    return found[int(match.group(1))] if same else None


def cause_of(
    ctx: Context, env: PythonEnvironment, rt: FrameworkRuntime, error: str, device: str | None
) -> tuple[str, Fix] | None:
    """(what happened, the fix) for the CUDA errors whose cause the other facts name."""
    low = error.lower()
    gpu = _device_gpu(ctx, device)
    where = gpu.label if gpu else (device or "the GPU")
    cuda = built_cuda(env, rt)
    if "out of memory" in low:
        return _out_of_memory(ctx, gpu, where)
    if "busy or unavailable" in low:
        return _busy(ctx)
    if "no kernel image" in low:
        return _no_kernel_image(ctx, env, rt, gpu)
    if "invalid_ptx" in low or "a ptx jit compilation failed" in low:
        # No SASS for this GPU, and the PTX the build carries for it does not JIT-compile
        # (TensorFlow on compute capability 12.0: tensorflow#99592, #101746): the build with
        # code for this GPU is the fix, not the driver.
        title, fix = _no_kernel_image(ctx, env, rt, gpu)
        return (
            title.replace("the build has no code", "the build has no SASS")
            + f", and its PTX does not JIT-compile on driver {ctx.driver_version} "
            "(CUDA_ERROR_INVALID_PTX)",
            fix,
        )
    if "system not yet initialized" in low:
        return CUINIT_CAUSES["CUDA_ERROR_SYSTEM_NOT_READY"]
    if "forward compatibility was attempted on non supported hw" in low:
        return CUINIT_CAUSES["CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"]
    if cuda and ("unsupported toolchain" in low or "unsupported_ptx_version" in low):
        return (
            f"PTX built with CUDA {major_minor(cuda)} cannot be JIT-compiled by driver "
            f"{ctx.driver_version}",
            Fix.of(upgrade_driver(ctx, cuda)),
        )
    if cuda and (
        "driver version is insufficient" in low or "driver on your system is too old" in low
    ):
        return f"the driver is too old for CUDA {major_minor(cuda)}", Fix.of(
            upgrade_driver(ctx, cuda)
        )
    if "differs from the cpu" in low:
        return (
            f"{where} computes wrong results",
            Fix.of(
                Step.manual("drain the node", Layer.JOB),
                Step.run("run NVIDIA's diagnostics", "dcgmi diag -r 3", layer=Layer.GPUS),
                Step.info("see the ECC and Xid checks above"),
                XID,
            ),
        )
    return catalog_cause(ctx, error)


def catalog_cause(ctx: Context, error: str) -> tuple[str, Fix] | None:
    """What the message catalog says of an error text (its best match: the worst, then the
    most specific): its title and its fix, with what it means and its source; None where the
    catalog knows nothing of it (the caller then says to run it by hand)."""
    found = [m for m in matcher(ctx.compat).matches(Lines(error)) if m.message.severity != "info"]
    if not found:
        return None
    best = min(
        found,
        key=lambda m: (-severity(Status(m.message.severity)), -m.specificity, m.first_line),
    )
    message = best.message
    means = f"it means: {message.cause} (gpucheck explain's catalog: {message.source})"
    fix = catalog_step(best, ctx.snapshot)  # its blanks filled, or no command
    return message.title, Fix.of(fix, Step.info(means, message.section))


def _out_of_memory(ctx: Context, gpu: Target | None, where: str) -> tuple[str, Fix]:
    gpus = [g for g in ctx.gpus if gpu is None or g.index == gpu.index]
    procs = [(g, p) for g in gpus for p in (g.processes or [])]
    if not procs:
        return (
            f"{where} ran out of memory, and no other process is listed on it (another "
            "container or VM?)",
            Fix.of(
                Step.run(
                    "find what holds the memory (on the host)", "nvidia-smi", layer=Layer.GPUS
                ),
                OR,
                Step.manual("use another GPU", Layer.JOB),
            ),
        )
    pids = sorted({p.pid for _, p in procs})
    holders = ", ".join(
        f"PID {p.pid} {p.name or '?'} on GPU {g.index}"
        + (f", {p.used_memory // 1024**2} MiB" if p.used_memory else "")
        for g, p in procs
    )
    return (
        f"{where} ran out of memory: other processes hold it ({holders})",
        Fix.of(
            Step.run("check what they are", f"ps -o pid,user,cmd -p {','.join(map(str, pids))}"),
            Step.run("then stop them (or wait)", f"kill {' '.join(map(str, pids))}"),
            OR,
            Step.manual("use a free GPU (CUDA_VISIBLE_DEVICES)", Layer.JOB),
        ),
    )


def _busy(ctx: Context) -> tuple[str, Fix]:
    modes = ("exclusive_process", "exclusive_thread", "prohibited")
    gpus = [g for g in ctx.gpus if g.compute_mode in modes]
    if not gpus:
        return (
            "the GPU is busy or unavailable",
            Fix.of(
                Step.run(
                    "check its compute mode and the processes on it",
                    "nvidia-smi -q -d COMPUTE,PIDS",
                    layer=Layer.GPUS,
                )
            ),
        )
    said = ", ".join(f"GPU {g.index} is in {g.compute_mode} compute mode" for g in gpus)
    return (
        f"the GPU is busy or unavailable: {said}",
        Fix.of(
            share_gpus(gpus, "if not set on purpose by the scheduler, share the GPU again"),
            OR,
            Step.run("wait for the process that holds it", "nvidia-smi", layer=Layer.GPUS),
        ),
    )


def _no_kernel_image(
    ctx: Context, env: PythonEnvironment, rt: FrameworkRuntime, gpu: Target | None
) -> tuple[str, Fix]:
    ccs = [gpu.cc] if gpu else cc_list(targets(ctx))
    what = f"compute capability {', '.join(ccs)}" if ccs else "this GPU"
    title = f"no kernel image for {what}: the build has no code for this GPU"
    if rt.framework == "torch":
        return title, torch_fix(ctx, env, ccs)
    if rt.framework == "tensorflow":
        pick = pick_tensorflow(ctx, env, ccs, ctx.driver_version)
        if pick is not None:
            return title, Fix.of(
                pip_step(
                    ctx,
                    env,
                    f"install TensorFlow {pick.version}",
                    pick.install,
                    [pick_change(env, "tensorflow", pick)],
                )
            )
    if rt.framework == "tensorflow":
        # No TensorFlow release on PyPI has it: NVIDIA's NGC container builds for it
        # (tensorflow#99592: "the only way I can get it to work is ... NVIDIA's NGC container").
        return title, Fix.of(
            Step.manual(
                f"no TensorFlow wheel has code for {what}: run NVIDIA's NGC TensorFlow "
                "container (nvcr.io/nvidia/tensorflow), built for it, or build TensorFlow "
                "from source with this compute capability",
                Layer.FRAMEWORKS,
            )
        )
    return title, Fix.of(
        Step.manual(f"install a {rt.framework} build with code for {what} (see {rt.framework}.*)")
    )
