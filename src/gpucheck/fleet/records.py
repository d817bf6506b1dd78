"""What the fleet keeps of one report: a HostRecord (its inventory line, its problems, the GPUs
to act on), or a BadReport saying why a file could not be read. msgspec Structs: a worker
sends them to the fleet's store as msgpack, and the JSON output encodes them as they are."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct, field

from gpucheck.compat import cuda_from_int
from gpucheck.fleet.lean import LeanDistribution, LeanFinding, LeanSnapshot
from gpucheck.model.environments import Distribution
from gpucheck.model.finding import PROBLEM, Finding
from gpucheck.model.frameworks import PROBED, TORCH
from gpucheck.model.snapshot import HostIdentity, Snapshot

# Findings whose GPUs need a person with hands or an RMA, not a software change: the GPUs a
# fleet operator drains and replaces.
HARDWARE_CHECKS = ("gpus.lost", "gpus.ecc-errors", "gpus.memory-remapping", "gpus.throttling")


class Problem(Struct):
    check: str
    status: str  # fail | warn | error
    title: str


class GpuToActOn(Struct):
    index: int
    uuid: str | None
    serial: str | None
    pci_bus_id: str | None
    model: str | None
    check: str
    status: str
    title: str


class HostRecord(Struct):
    source: str  # the file (or "<stdin>:LINE") the report came from
    hostname: str
    host: HostIdentity
    created_at: str
    ready: bool
    exit_code: int
    rechecked: bool  # the findings are today's checks on its snapshot, not the report's own
    gpus: list[str] = field(default_factory=list)  # one model name per GPU
    driver: str | None = None
    cuda: str | None = None  # the driver's CUDA version ("13.1")
    frameworks: list[str] = field(default_factory=list)  # "torch 2.5.1+cu124", per environment
    problems: list[Problem] = field(default_factory=list)
    gpus_to_act_on: list[GpuToActOn] = field(default_factory=list)

    @property
    def key(self) -> str:
        """One host however many reports it sent: its id, else its name, else the file."""
        return self.host.host_id or self.hostname or self.source


class BadReport(Struct):
    source: str
    reason: str  # one line


def frameworks(snapshot: Snapshot | LeanSnapshot) -> list[str]:
    found: dict[str, None] = {}  # in order, once each
    for env in snapshot.environments:
        named: dict[str, Distribution | LeanDistribution] = {}
        for d in env.distributions:
            named.setdefault(d.name, d)  # the first of a name, as env.dist() finds it
        for framework in PROBED:
            is_torch = framework is TORCH
            version = env.torch.version if is_torch and env.torch else None
            dist = next((named[d] for d in framework.dists if d in named), None)
            if dist is None and version is None:
                continue
            name = dist.name if dist and not is_torch else framework.key
            found.setdefault(f"{name} {version or (dist.version if dist else '?')}")
    return list(found)


def record(
    source: str,
    snapshot: Snapshot | LeanSnapshot,
    findings: Sequence[Finding | LeanFinding],
    exit_code: int,
    created_at: str,
    rechecked: bool,
) -> HostRecord:
    sysf, nvml = snapshot.system, snapshot.nvml
    gpus = [g.name or "unknown GPU" for g in nvml.gpus] or [
        p.name or f"NVIDIA {p.device_id}" for p in sysf.pci_gpus
    ]
    problems = [f for f in findings if f.status in PROBLEM]
    act: list[GpuToActOn] = []
    for f in problems:
        if f.id in HARDWARE_CHECKS:
            by_index = {g.index: g for g in nvml.gpus}
            for ref in f.subjects.gpus:
                gpu = by_index.get(ref.index)
                act.append(
                    GpuToActOn(
                        ref.index,
                        ref.uuid,
                        gpu.serial if gpu else None,
                        ref.pci_bus_id,
                        gpu.name if gpu else None,
                        f.id,
                        f.status.value,
                        f.title,
                    )
                )
    return HostRecord(
        source=source,
        hostname=sysf.hostname,
        host=sysf.host,
        created_at=created_at or snapshot.created_at,
        ready=exit_code == 0,
        exit_code=exit_code,
        rechecked=rechecked,
        gpus=gpus,
        driver=nvml.driver_version or sysf.nvidia_module_version,
        cuda=cuda_from_int(nvml.cuda_driver_version or snapshot.cuda.driver.driver_version),
        frameworks=frameworks(snapshot),
        problems=[Problem(f.id, f.status.value, f.title) for f in problems],
        gpus_to_act_on=act,
    )
