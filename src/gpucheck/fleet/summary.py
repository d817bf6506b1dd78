"""The fleet as a whole, from its hosts' records: the inventory (one line per host, its newest
report), each problem with the hosts that have it, the spread of versions, the GPUs to act on,
and the reports that could not be read."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gpucheck.exit_status import ExitStatus
from gpucheck.fleet.records import BadReport, GpuToActOn, HostRecord
from gpucheck.model.finding import Status, severity


@dataclass
class ProblemGroup:
    check: str
    status: str
    title: str  # the most common title among the hosts (titles carry per-host counts)
    hosts: list[str] = field(default_factory=list)


@dataclass
class HostGpu:
    """A GPU to act on, with the host it is in."""

    host: str
    host_id: str | None
    gpu: GpuToActOn


@dataclass
class Fleet:
    hosts: list[HostRecord]  # not ready first, then by name
    problems: list[ProblemGroup]  # worst status first, then most hosts
    versions: dict[str, dict[str, int]]  # "driver" -> {"590.48.01": hosts, ...}
    gpus_to_act_on: list[HostGpu]
    bad_reports: list[BadReport]
    reports: int  # read, good or bad
    superseded: int  # older reports of a host whose newer one is listed

    @property
    def ready(self) -> int:
        return sum(1 for h in self.hosts if h.ready)

    @property
    def exit_code(self) -> int:
        """0: every host ready and every report read; 1 otherwise."""
        return (
            ExitStatus.OK
            if self.ready == len(self.hosts) and not self.bad_reports
            else ExitStatus.FAILED
        )


def name(host: HostRecord) -> str:
    return host.hostname or host.host.host_id or host.source


class FleetBuilder:
    """Takes results one at a time, in any order, keeping only the newest report of a host."""

    def __init__(self) -> None:
        self._hosts: dict[str, HostRecord] = {}
        self._bad: list[BadReport] = []
        self.reports = 0
        self.superseded = 0

    def add(self, result: HostRecord | BadReport) -> None:
        self.reports += 1
        if isinstance(result, BadReport):
            self._bad.append(result)
            return
        key = result.key
        known = self._hosts.get(key)
        if known is not None:
            self.superseded += 1
            # ISO 8601 UTC times compare as text; the file name breaks ties stably.
            if (known.created_at, known.source) > (result.created_at, result.source):
                return
        self._hosts[key] = result

    def build(self) -> Fleet:
        hosts = sorted(self._hosts.values(), key=lambda h: (h.ready, name(h), h.source))
        return Fleet(
            hosts=hosts,
            problems=_problems(hosts),
            versions=_versions(hosts),
            gpus_to_act_on=[
                HostGpu(name(h), h.host.host_id, g) for h in hosts for g in h.gpus_to_act_on
            ],
            bad_reports=sorted(self._bad, key=lambda b: b.source),
            reports=self.reports,
            superseded=self.superseded,
        )


def _problems(hosts: list[HostRecord]) -> list[ProblemGroup]:
    groups: dict[tuple[str, str], ProblemGroup] = {}
    titles: dict[tuple[str, str], Counter[str]] = {}
    for h in hosts:
        for p in h.problems:
            key = (p.check, p.status)
            group = groups.setdefault(key, ProblemGroup(p.check, p.status, p.title))
            group.hosts.append(name(h))
            titles.setdefault(key, Counter())[p.title] += 1
    for key, group in groups.items():
        group.title = titles[key].most_common(1)[0][0]
    return sorted(
        groups.values(), key=lambda g: (-severity(Status(g.status)), -len(g.hosts), g.check)
    )


def _versions(hosts: list[HostRecord]) -> dict[str, dict[str, int]]:
    spread: dict[str, Counter[str]] = {
        "gpu": Counter(),
        "driver": Counter(),
        "cuda": Counter(),
    }
    for h in hosts:
        for model in set(h.gpus):
            spread["gpu"][model] += 1
        spread["driver"][h.driver or "unknown"] += 1
        spread["cuda"][h.cuda or "unknown"] += 1
        seen = set()
        for item in h.frameworks:
            framework, _, version = item.partition(" ")
            if (framework, version) not in seen:
                seen.add((framework, version))
                spread.setdefault(framework, Counter())[version] += 1
    return {
        category: dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        for category, counts in spread.items()
        if counts
    }
