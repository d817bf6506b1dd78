"""The GPUs a fit estimate is judged against: this machine's (NVML, read-only as the doctor
reads it; a MIG-enabled GPU by the one MIG device a CUDA process gets there), or every GPU whose
memory compat/gpus.toml records (from real captures)."""

from __future__ import annotations

from dataclasses import dataclass

from gpucheck.checks.context import Visibility, parse_visible_devices, process_slice
from gpucheck.compat import Compat
from gpucheck.exit_status import ExitStatus
from gpucheck.fit.report import Target
from gpucheck.fit.units import gib
from gpucheck.model.plural import counted
from gpucheck.model.snapshot import GpuFacts, NvmlFacts, SystemFacts
from gpucheck.probes.nvml import probe_nvml
from gpucheck.probes.run import ProbeOptions, driver_init_allowed
from gpucheck.probes.system import probe_system


def _mig_target(g: GpuFacts, cvd: str | None, vis: Visibility) -> tuple[Target | None, str]:
    """A MIG-enabled GPU as a CUDA process sees it (the doctor's gpus.mig rule: process_slice),
    and the note that says so."""
    gpu = (g.name or "unknown GPU").removeprefix("NVIDIA ")
    picked = process_slice(g, vis)
    if picked is None or not picked.memory_total:
        return None, (
            f"GPU {g.index} ({gpu}) has MIG on but no MIG device CUDA can use: not judged "
            "(nvidia-smi mig -lgip lists the profiles to create one)"
        )
    profile = (picked.name or "").rpartition("MIG ")[2] or "device"
    label = f"GPU {g.index} MIG {profile} ({gpu})"
    named = any(picked.uuid and picked.uuid.startswith(t) for t in vis.mig_named)
    which = picked.uuid or "no UUID reported"
    how = (
        f"the slice CUDA_VISIBLE_DEVICES names ({which})"
        if named
        else f"the first slice CUDA enumerates ({which}; CUDA_VISIBLE_DEVICES "
        f"{'unset' if cvd is None else '= ' + repr(cvd)})"
    )
    whole = f" of the GPU's {gib(g.memory_total)}" if g.memory_total else ""
    note = (
        f"MIG is on for GPU {g.index} ({len(g.mig_devices)} MIG devices): a CUDA process gets "
        f"one, not the whole GPU; judged by {how}: {gib(picked.memory_total)}{whole}. "
        "CUDA_VISIBLE_DEVICES=MIG-<uuid> picks another slice (nvidia-smi -L lists them)"
    )
    return Target(label, picked.memory_total, g.index), note


@dataclass
class MachineTargets:
    """This machine's GPUs to judge, how they were judged, and, where the answer is not "fits"
    or "does not fit" for every GPU, why: `why` (no GPU judged) and `status` (the exit the
    command owes: UNKNOWN where a GPU could not be read, as procs exits for a lost GPU)."""

    targets: list[Target]
    notes: list[str]
    why: str | None = None
    status: ExitStatus | None = None
    gpu_count: int = 0  # GPUs the driver listed, judged or not


def _no_target_reason(system: SystemFacts, nvml: NvmlFacts) -> tuple[str, ExitStatus]:
    """Why no GPU could be judged: no GPU (a fact), or a driver that is not there to ask (the
    GPUs on the PCI bus cannot be measured: could not tell)."""
    on_bus = len(system.pci_gpus)
    error = nvml.init_error.name if nvml.init_error else None
    unread = "The GPUs here could not be read"
    if on_bus and (system.nvidia_module_loaded is False or error == "DriverNotLoaded"):
        return (
            f"{unread}: the NVIDIA driver is not loaded ({counted(on_bus, 'NVIDIA GPU')} on "
            "the PCI bus; `gpucheck doctor` says how to load it)",
            ExitStatus.UNKNOWN,
        )
    if system.pci_scanned and system.pci_device_count and not on_bus:
        return "No GPU on this machine to judge against (none on the PCI bus)", ExitStatus.FAILED
    if error is not None or nvml.init_skipped_reason:
        cause = error or nvml.init_skipped_reason
        return f"{unread}: the NVIDIA driver does not answer (NVML: {cause})", ExitStatus.UNKNOWN
    seen = "NVML sees none" if not nvml.gpus else "CUDA can use none of its GPUs"
    return f"No GPU on this machine to judge against ({seen})", ExitStatus.FAILED


def machine_targets(timeout: float) -> MachineTargets:
    """This machine's GPUs and notes on how they were judged, or none and the sentence that
    says why."""
    opts = ProbeOptions(timeout=min(timeout, 15))
    system = probe_system(opts.root, opts.env)
    nvml, _ = probe_nvml(opts.timeout, opts.env, driver_init_allowed(system))
    cvd = opts.env.get("CUDA_VISIBLE_DEVICES")
    vis = parse_visible_devices(cvd, nvml.gpus)
    targets: list[Target] = []
    notes: list[str] = []
    status: ExitStatus | None = None
    for g in nvml.gpus:
        if g.handle_error is not None:
            # A GPU NVML cannot open (lost, fallen off the bus) has no memory to judge: its
            # verdict is "could not tell", never a silent omission.
            notes.append(
                f"GPU {g.index}: could not tell: NVML cannot open it ({g.handle_error.name}); "
                "`gpucheck doctor` says why"
            )
            status = ExitStatus.UNKNOWN
        elif g.mig_enabled:
            target, note = _mig_target(g, cvd, vis)
            notes.append(note)
            if target:
                targets.append(target)
        elif g.memory_total:
            targets.append(
                Target(f"GPU {g.index} ({g.name or 'unknown GPU'})", g.memory_total, g.index)
            )
    count = len(nvml.gpus)
    if targets:
        return MachineTargets(targets, notes, None, status, count)
    lead, no_target = _no_target_reason(system, nvml)
    why = f"{lead}: pass --gpu-memory 80GiB, or --all-gpus for every GPU in the compat data"
    return MachineTargets([], notes, why, status or no_target, count)


def compat_targets(compat: Compat) -> list[Target]:
    targets = []
    for model in compat.gpus.models:
        for spec in model.specs:
            if spec.memory_mib:
                name = f"{model.name} {spec.variant}" if spec.variant else model.name
                targets.append(Target(name, int(spec.memory_mib * 1024**2)))
    return sorted(targets, key=lambda t: (t.memory, t.label))
