"""Requirements a job states on the command line (--min-gpus, --min-memory,
--min-compute-capability): each is a check of its own, present only when asked for."""

from __future__ import annotations

from collections.abc import Callable

from packaging.version import Version

from gpucheck.checks.context import Context, gib, gpu_label, gpu_refs, indices
from gpucheck.checks.registry import check
from gpucheck.compat import parse_version
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import GpuFacts

SEE_ABOVE = Fix.of(Step.info("see the problems above"))


def _usable(ctx: Context) -> list[GpuFacts]:
    """The GPUs a CUDA program would get: answering, and shown by CUDA_VISIBLE_DEVICES."""
    return [g for g in ctx.visibility.visible if g.handle_error is None]


def usable_memory(gpu: GpuFacts) -> int | None:
    """What one CUDA process gets: with MIG on, one MIG device, not the whole GPU."""
    if gpu.mig_enabled and gpu.mig_devices:
        sizes = [m.memory_total for m in gpu.mig_devices if m.memory_total is not None]
        return max(sizes) if sizes else None
    return gpu.memory_total


@check("requirements.min-gpus", "at least N usable GPUs (--min-gpus)")
def min_gpus(ctx: Context) -> Outcome | None:
    want = ctx.requirements.min_gpus
    if want is None:
        return None
    usable = _usable(ctx)
    whole = [g for g in usable if not g.mig_enabled]
    sliced = [g for g in usable if g.mig_enabled and g.mig_devices]
    # One CUDA process enumerates a single MIG device, whatever CUDA_VISIBLE_DEVICES lists
    # (NVIDIA's MIG user guide, "CUDA Device Enumeration"): the slices count as one.
    have = len(whole) + (1 if sliced else 0)
    shown = f"{have} usable GPU(s)" + (
        f" of {len(ctx.gpus)} (CUDA_VISIBLE_DEVICES)" if len(usable) < len(ctx.gpus) else ""
    )
    if have >= want:
        return Outcome.passed(f"At least {want} GPU(s): {shown}")
    evidence = [shown]
    if sliced:
        count = sum(len(g.mig_devices) for g in sliced)
        evidence.append(f"MIG is on: {count} MIG slice(s), of which one CUDA process sees one")
        first = next((m.uuid for g in sliced for m in g.mig_devices if m.uuid), "MIG-<uuid>")
        fix = Fix.of(
            Step.set_env(
                "CUDA_VISIBLE_DEVICES",
                first,
                "a CUDA process uses one MIG slice: run one process per slice, each with "
                "CUDA_VISIBLE_DEVICES=MIG-<uuid> of its own (nvidia-smi -L lists them)",
                Layer.JOB,
            ),
            OR,
            Step.run(
                f"for {want} GPUs in one process, turn MIG off (then reset the GPUs)",
                f"sudo nvidia-smi -i {indices(sliced)} -mig 0",
                gpus=gpu_refs(sliced),
            ),
        )
    else:
        fix = Fix.of(
            Step.manual(f"run the job on a node with {want} or more GPUs", Layer.JOB),
            OR,
            Step.info("fix the problems above that hide GPUs"),
        )
    return Outcome.fail(
        f"Needs {want} GPU(s), has {have}",
        *evidence,
        *([] if ctx.nvml_ok else ["the driver gives no GPU list (see driver checks)"]),
        fix=fix,
    )


def _every_gpu(
    ctx: Context,
    need: str,
    below: Callable[[GpuFacts], str | None],
    every: str,
    some: str,
    fix: Fix,
) -> Outcome:
    """A minimum every usable GPU must meet: `below` says what a GPU short of it has (None: it
    meets it); the fail names each such GPU."""
    gpus = _usable(ctx)
    if not gpus:
        return Outcome.fail(f"{need}; no usable GPU", fix=SEE_ABOVE)
    short = [(g, has) for g in gpus if (has := below(g)) is not None]
    if not short:
        return Outcome.passed(f"All {len(gpus)} usable GPU(s) {every}")
    return Outcome.fail(
        f"{len(short)} GPU(s) {some}", *[f"{gpu_label(g)}: {has}" for g, has in short], fix=fix
    )


@check(
    "requirements.min-memory",
    "every usable GPU has at least this memory (--min-memory)",
)
def min_memory(ctx: Context) -> Outcome | None:
    want = ctx.requirements.min_memory_bytes
    if want is None:
        return None
    text = ctx.requirements.min_memory_text or gib(want)

    def below(g: GpuFacts) -> str | None:
        if (usable_memory(g) or 0) >= want:
            return None
        return gib(usable_memory(g)) + (" in its largest MIG device" if g.mig_enabled else "")

    return _every_gpu(
        ctx,
        f"Needs GPUs with {text} each",
        below,
        f"have at least {text}",
        f"have less than {text} of memory",
        Fix.of(
            Step.manual(f"run on GPUs with at least {text} each"),
            OR,
            Step.manual("reduce the job's memory (batch size, precision, sharding)"),
        ),
    )


@check(
    "requirements.min-compute-capability",
    "every usable GPU has at least this compute capability (--min-compute-capability)",
)
def min_cc(ctx: Context) -> Outcome | None:
    want_text = ctx.requirements.min_compute_capability
    if want_text is None:
        return None
    want = Version(want_text)

    def below(g: GpuFacts) -> str | None:
        if (parse_version(g.compute_capability or "") or Version("0")) >= want:
            return None
        return g.compute_capability or "unknown"

    return _every_gpu(
        ctx,
        f"Needs compute capability {want_text}",
        below,
        f"have compute capability >= {want_text}",
        f"are below compute capability {want_text}",
        Fix.of(
            Step.manual(
                f"run on GPUs of compute capability {want_text} or newer (gpucheck's compat "
                "data lists which GPUs those are)"
            )
        ),
    )
