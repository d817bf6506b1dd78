"""The GPUs a fit estimate is judged against: this machine's (NVML, read-only as the doctor
reads it), or every GPU whose memory compat/gpus.toml records (from real captures)."""

from __future__ import annotations

from gpucheck.compat import Compat
from gpucheck.fit.report import Target
from gpucheck.probes.nvml import probe_nvml
from gpucheck.probes.run import ProbeOptions, driver_init_allowed
from gpucheck.probes.system import probe_system


def machine_targets(timeout: float) -> tuple[list[Target], str | None]:
    """This machine's GPUs, or none and the sentence that says why."""
    opts = ProbeOptions(timeout=min(timeout, 15))
    system = probe_system(opts.root, opts.env)
    nvml, _ = probe_nvml(opts.timeout, opts.env, driver_init_allowed(system))
    targets = [
        Target(f"GPU {g.index} ({g.name or 'unknown GPU'})", g.memory_total, g.index)
        for g in nvml.gpus
        if g.memory_total
    ]
    if targets:
        return targets, None
    return [], (
        "No GPU on this machine to judge against (NVML sees none): pass --gpu-memory 80GiB, "
        "or --all-gpus for every GPU in the compat data"
    )


def compat_targets(compat: Compat) -> list[Target]:
    targets = []
    for model in compat.gpus.models:
        for spec in model.specs:
            if spec.memory_mib:
                name = f"{model.name} {spec.variant}" if spec.variant else model.name
                targets.append(Target(name, int(spec.memory_mib * 1024**2)))
    return sorted(targets, key=lambda t: (t.memory, t.label))
