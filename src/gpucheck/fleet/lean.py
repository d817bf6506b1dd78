"""The few fields of a `doctor --json` report that the fleet keeps, as msgspec types: a report
is decoded once, straight into these, and msgspec skips the rest (the snapshot's evidence,
the findings' fixes) without building it, which costs less than decoding the JSON into
dicts. Every field read is type-checked as the full model would; fields the fleet does not
read are not (a report that fails here is read again with the full model, which names what
is wrong exactly as before).

The names mirror the full model's (Snapshot, Finding), so records.py reads either.
"""

from __future__ import annotations

from msgspec import Struct, field

from gpucheck.model.finding import Status
from gpucheck.model.requirements import Requirements
from gpucheck.model.snapshot import HostIdentity


class LeanPciGpu(Struct):
    device_id: str
    name: str | None = None


class LeanSystem(Struct):
    hostname: str = ""
    pci_gpus: list[LeanPciGpu] = field(default_factory=list)
    nvidia_module_version: str | None = None
    host: HostIdentity = field(default_factory=HostIdentity)


class LeanGpu(Struct):
    index: int
    name: str | None = None
    serial: str | None = None


class LeanNvml(Struct):
    driver_version: str | None = None
    cuda_driver_version: int | None = None
    gpus: list[LeanGpu] = field(default_factory=list)


class LeanCudaDriver(Struct):
    driver_version: int | None = None


class LeanCuda(Struct):
    driver: LeanCudaDriver = field(default_factory=LeanCudaDriver)


class LeanDistribution(Struct):
    name: str
    version: str


class LeanTorch(Struct):
    version: str | None = None


class LeanEnvironment(Struct):
    distributions: list[LeanDistribution] = field(default_factory=list)
    torch: LeanTorch | None = None

    def dist(self, name: str) -> LeanDistribution | None:
        return next((d for d in self.distributions if d.name == name), None)


class LeanSnapshot(Struct):
    schema_version: str = ""
    created_at: str = ""
    system: LeanSystem = field(default_factory=LeanSystem)
    nvml: LeanNvml = field(default_factory=LeanNvml)
    cuda: LeanCuda = field(default_factory=LeanCuda)
    environments: list[LeanEnvironment] = field(default_factory=list)


class LeanGpuRef(Struct):
    index: int
    uuid: str | None = None
    pci_bus_id: str | None = None


class LeanSubjects(Struct):
    gpus: list[LeanGpuRef] = field(default_factory=list)


class LeanFinding(Struct):
    id: str
    status: Status
    title: str
    subjects: LeanSubjects = field(default_factory=LeanSubjects)


class LeanSummary(Struct):
    exit_code: int
    strict: bool = False
    requirements: Requirements | None = None  # report schema 2.1 on


class LeanReport(Struct):
    """A report as the fleet reads it; findings None: not a report (a snapshot)."""

    schema_version: str | None = None
    created_at: str | None = None
    summary: LeanSummary | None = None
    findings: list[LeanFinding] | None = None
    snapshot: LeanSnapshot | None = None
