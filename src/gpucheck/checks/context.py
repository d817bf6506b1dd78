"""What every check sees: the snapshot, the compat matrix, the job's requirements, and a few
facts derived once from the snapshot (so that checks agree on them)."""

from __future__ import annotations

import re
from functools import cached_property

from msgspec import Struct, field

from gpucheck.compat import Compat, cuda_from_int, load
from gpucheck.model.finding import GpuRef, Subjects
from gpucheck.model.requirements import Requirements as Requirements
from gpucheck.model.shell import interpreter_pip as interpreter_pip
from gpucheck.model.snapshot import GpuFacts, MigDevice, Snapshot


class Visibility(Struct):
    """Which NVML GPUs CUDA_VISIBLE_DEVICES lets CUDA see, following CUDA's own parsing."""

    value: str | None
    visible: list[GpuFacts] = field(default_factory=list)
    invalid_token: str | None = None  # CUDA stops at the first entry it cannot resolve
    mig_entries: int = 0  # MIG-... entries, which name slices rather than whole GPUs
    mig_named: list[str] = field(default_factory=list)  # those entries, in order


def parse_visible_devices(value: str | None, gpus: list[GpuFacts]) -> Visibility:
    if value is None:
        return Visibility(None, list(gpus))
    vis = Visibility(value)
    for raw in value.split(","):
        token = raw.strip()
        # "" and negative indices ("-1") are the usual ways to hide every GPU: CUDA stops
        # there on purpose, which is not a misspelt entry.
        if token == "" or re.fullmatch(r"-[0-9]+", token):
            break
        if re.fullmatch(r"[0-9]+", token):
            match = next((g for g in gpus if g.index == int(token)), None)
        elif token.startswith("GPU-"):
            hits = [g for g in gpus if g.uuid and g.uuid.startswith(token)]
            match = hits[0] if len(hits) == 1 else None
        elif token.startswith("MIG-"):
            hits = [
                g for g in gpus if any(m.uuid and m.uuid.startswith(token) for m in g.mig_devices)
            ]
            if len(hits) == 1:
                vis.mig_entries += 1
                vis.mig_named.append(token)
            match = hits[0] if len(hits) == 1 else None
        else:
            match = None
        if match is None:
            vis.invalid_token = token
            break
        if match not in vis.visible:
            vis.visible.append(match)
    return vis


def process_slice(gpu: GpuFacts, vis: Visibility) -> MigDevice | None:
    """The MIG device a CUDA process runs on when it uses this MIG-enabled GPU: the first of
    its slices CUDA_VISIBLE_DEVICES names by UUID, else the first slice CUDA enumerates (NVML's
    order). One process enumerates a single MIG device (NVIDIA's MIG user guide, "CUDA Device
    Enumeration"), never the whole GPU. None where MIG is off or no slice exists."""
    if not gpu.mig_enabled or not gpu.mig_devices:
        return None
    for token in vis.mig_named:
        for m in gpu.mig_devices:
            if m.uuid and m.uuid.startswith(token):
                return m
    return gpu.mig_devices[0]


class Context(Struct, dict=True):
    snapshot: Snapshot
    requirements: Requirements = field(default_factory=Requirements)
    _compat: Compat | None = None

    @property
    def compat(self) -> Compat:
        if self._compat is None:
            self._compat = load()
        return self._compat

    @property
    def os(self) -> str:
        return "windows" if self.snapshot.system.os == "Windows" else "linux"

    # -- NVML ---------------------------------------------------------------------------------

    @cached_property
    def nvml_ok(self) -> bool:
        nvml = self.snapshot.nvml
        run = self.snapshot.probe("nvml")
        return (
            nvml.init_error is None
            and nvml.init_skipped_reason is None
            and nvml.driver_version is not None
            and (run is None or run.status in ("ok", "crashed"))
        )

    @cached_property
    def gpus(self) -> list[GpuFacts]:
        return self.snapshot.nvml.gpus if self.nvml_ok else []

    @cached_property
    def healthy_handles(self) -> list[GpuFacts]:
        return [g for g in self.gpus if g.handle_error is None]

    @cached_property
    def visibility(self) -> Visibility:
        return parse_visible_devices(
            self.snapshot.system.env.get("CUDA_VISIBLE_DEVICES"), self.gpus
        )

    # -- the machine at large ------------------------------------------------------------------

    @property
    def pci_gpu_count(self) -> int:
        return len(self.snapshot.system.pci_gpus)

    @cached_property
    def has_gpu(self) -> bool | None:
        """True: some layer saw an NVIDIA GPU; False: looked and saw none; None: cannot tell."""
        sysf = self.snapshot.system
        if self.pci_gpu_count or self.snapshot.nvml.gpus or self.snapshot.nvml.device_count:
            return True
        if self.snapshot.cuda.driver.device_count:
            return True
        if sysf.wsl:
            return None if not self.nvml_ok else False
        # An empty bus listing is a restricted sysfs (some sandboxes), not an absent GPU.
        if sysf.pci_scanned and sysf.pci_device_count > 0:
            return False
        return None

    @cached_property
    def driver_cuda(self) -> str | None:
        """The newest CUDA the running driver supports, from NVML or else a working libcuda.

        None when no driver runs: an installed libcuda with no kernel module behind it still
        answers cuDriverGetVersion, but nothing can run on it.
        """
        if self.nvml_ok and self.snapshot.nvml.cuda_driver_version:
            return cuda_from_int(self.snapshot.nvml.cuda_driver_version)
        if self.snapshot.cuda.driver.init_result == 0:
            return cuda_from_int(self.snapshot.cuda.driver.driver_version)
        return None

    @property
    def driver_version(self) -> str | None:
        return self.snapshot.nvml.driver_version or self.snapshot.system.nvidia_module_version


def gpu_label(gpu: GpuFacts) -> str:
    name = gpu.name or "unknown GPU"
    bus = f", {gpu.pci_bus_id}" if gpu.pci_bus_id else ""
    return f"GPU {gpu.index} ({name}{bus})"


def gpu_ref(gpu: GpuFacts) -> GpuRef:
    return GpuRef(gpu.index, gpu.uuid, gpu.pci_bus_id)


def gpu_refs(gpus: list[GpuFacts]) -> list[GpuRef]:
    return [gpu_ref(g) for g in gpus]


def gpu_subjects(gpus: list[GpuFacts]) -> Subjects:
    """The GPUs a finding concerns, by index, UUID and bus id (what a fleet joins on)."""
    return Subjects(gpus=gpu_refs(gpus))


def indices(gpus: list[GpuFacts]) -> str:
    """ "0,3": the -i argument of nvidia-smi for these GPUs."""
    return ",".join(str(g.index) for g in gpus)


def on_windows(ctx: Context) -> bool:
    """The snapshot's machine runs Windows (its commands are PowerShell's)."""
    return ctx.snapshot.system.os == "Windows"


def gib(value: int | None) -> str:
    if value is None:
        return "unknown"
    return f"{value / 1024**3:.1f} GiB"


def sentence(text: str) -> str:
    """`text` with its first letter capitalised (and nothing else changed: commands stay)."""
    return text[:1].upper() + text[1:]
