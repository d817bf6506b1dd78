"""The fleet as a whole, from its hosts' records: the inventory (one line per host, its newest
report), each problem with the hosts that have it, the spread of versions, the GPUs to act on,
and the reports that could not be read.

The hosts are kept on disk (store.py), not in memory: a Fleet's lists are iterators, read
again from the store for each output, and only counts, problem groups and versions (whose
size does not grow with the number of reports) are held.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from msgspec import Struct

from gpucheck.exit_status import ExitStatus
from gpucheck.fleet.records import BadReport, GpuToActOn, HostRecord
from gpucheck.fleet.store import ProblemGroup, Store

HOSTS_SHOWN = 10  # per problem in the table; JSON lists them all


class HostGpu(Struct):
    """A GPU to act on, with the host it is in."""

    host: str
    host_id: str | None
    gpu: GpuToActOn


class Fleet:
    def __init__(self, store: Store) -> None:
        self._store = store
        self.reports = store.reports  # read, good or bad
        self.superseded = store.superseded  # older reports of a host whose newer one is listed
        self.host_count = store.hosts
        self.ready = store.ready
        self.bad_count = store.bad
        self.problems: list[ProblemGroup] = store.problems  # worst first, then most hosts
        self.versions = store.versions  # "driver" -> {"590.48.01": hosts, ...}
        self.inventory_widths = store.widths  # where build() was given the inventory's row

    @property
    def exit_code(self) -> int:
        """0: every host ready and every report read; 1 otherwise."""
        if self.ready == self.host_count and not self.bad_count:
            return ExitStatus.OK
        return ExitStatus.FAILED

    def hosts(self) -> Iterator[tuple[str, HostRecord]]:
        """(name, record): not ready first, then by name. The name is the hostname, with a short
        host id after it where hosts share one ("vm (mid-3f2a9c1b)")."""
        for _, name, record in self._store.ranked():
            yield name, record

    def problem_hosts(self, group: ProblemGroup) -> Iterator[str]:
        return self._store.problem_hosts(group)

    def gpus_to_act_on(self) -> Iterator[HostGpu]:
        for name, h in self._store.acts():
            for g in h.gpus_to_act_on:
                yield HostGpu(name, h.host.host_id, g)

    def bad_reports(self) -> Iterator[BadReport]:
        return self._store.bad_reports()


class FleetBuilder:
    """Takes folded batches of results, in any order; the newest report of a host wins."""

    def __init__(self) -> None:
        self._store = Store(HOSTS_SHOWN)

    @property
    def reports(self) -> int:
        return self._store.reports

    def add_folded(self, blob: bytes) -> int:
        return self._store.add_folded(blob)

    def close(self) -> None:
        """Remove the store (the Fleet built from it reads it until then)."""
        self._store.close()

    def build(self, row: Callable[[str, HostRecord], list[str]] | None = None) -> Fleet:
        """The fleet; `row` (a host's inventory cells) measures the inventory's columns in the
        same pass, for the table."""
        self._store.finish(row)
        return Fleet(self._store)
