"""Where the fleet's hosts are kept while it is summarised: a private SQLite database on disk
(deleted when closed), so that memory stays flat however many reports there are. Workers
send their results here as folded batches (msgpack: one row per host, its record already
encoded), appended as they come; then `finish` keeps the newest report of each host, names
hosts that share a hostname apart, copies the hosts in the order every output lists them,
and gathers the problems, versions and GPUs to act on in one pass over them. SQLite's page
cache (CACHE_KIB) and sorter bound the memory; the rest is in the file (about 1.3 KiB a host).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator

import msgspec
from msgspec import Struct

from gpucheck.fleet.records import BadReport, HostRecord
from gpucheck.model.finding import Status, severity

# key, created_at, source, ready (0/1), name, hostname, host_id, the HostRecord as msgpack
HostRow = tuple[str, str, str, int, str, str, "str | None", bytes]
SHORT_ID = 12  # characters of a host id shown after a shared hostname: "mid-" + 8 hex digits
BATCH = 512  # rows per executemany
CACHE_KIB = 4096  # SQLite's page cache: what the store may hold in memory
PAGE_BYTES = 16384  # hosts are read in order: larger pages, fewer reads


class Folded(Struct, array_like=True):
    """A batch of results, as a worker sends it: rows for the store, and the bad reports."""

    hosts: list[HostRow]
    bad: list[tuple[str, str]]


_encode_record = msgspec.msgpack.Encoder().encode
_decode_record = msgspec.msgpack.Decoder(HostRecord).decode
_decode_folded = msgspec.msgpack.Decoder(Folded).decode


def host_row(record: HostRecord) -> HostRow:
    name = record.hostname or record.host.host_id or record.source
    return (
        record.key,
        record.created_at,
        record.source,
        int(record.ready),
        name,
        record.hostname,
        record.host.host_id,
        _encode_record(record),
    )


_SCHEMA = """
CREATE TABLE host(
    key TEXT NOT NULL, created_at TEXT NOT NULL, source TEXT NOT NULL,
    ready INTEGER NOT NULL, name TEXT NOT NULL, hostname TEXT NOT NULL, host_id TEXT,
    record BLOB NOT NULL);
CREATE TABLE bad(source TEXT NOT NULL, reason TEXT NOT NULL);
CREATE TABLE ordered(rank INTEGER PRIMARY KEY, name TEXT NOT NULL, record BLOB NOT NULL);
CREATE TABLE problem_host(problem INTEGER NOT NULL, rank INTEGER NOT NULL);
CREATE TABLE act(rank INTEGER PRIMARY KEY);  -- hosts with GPUs to act on
"""
# Hosts are appended as they come (no index to keep while loading: a random insert into an
# index of a million keys is a page miss each); the older reports of a host are found at the
# end, by sorting the keys once.
_INSERT = "INSERT INTO host VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_REPEATED = """
SELECT key, rowid FROM host WHERE key IN (SELECT key FROM host GROUP BY key HAVING COUNT(*) > 1)
ORDER BY key, created_at, source, rowid
"""
# Hosts that share a hostname: "vm (mid-3f2a9c1b)", the whole id where the short ones collide
# too, the report's file where a host has no id.
_NAME_APART = f"""
BEGIN;
CREATE TEMP TABLE shared AS
    SELECT hostname, substr(host_id, 1, {SHORT_ID}) AS short, COUNT(*) AS hosts
    FROM host WHERE hostname != '' AND hostname IN (
        SELECT hostname FROM host GROUP BY hostname HAVING COUNT(*) > 1)
    GROUP BY 1, 2;
CREATE INDEX temp.shared_names ON shared(hostname, short);
UPDATE host SET name = hostname || ' (' || (
    CASE WHEN host_id IS NULL OR host_id = '' THEN source
    WHEN (SELECT hosts FROM shared s WHERE s.hostname = host.hostname
          AND s.short IS substr(host.host_id, 1, {SHORT_ID})) > 1 THEN host_id
    ELSE substr(host_id, 1, {SHORT_ID}) END) || ')'
WHERE hostname IN (SELECT hostname FROM shared);
"""


class ProblemGroup(Struct):
    check: str
    status: str
    title: str  # the most common title among the hosts (titles carry per-host counts)
    count: int  # hosts
    first_hosts: list[str]  # the first few, in the inventory's order (all: Store.problem_hosts)
    index: int = 0


class Store:
    def __init__(self, shown_per_problem: int) -> None:
        # "": a private temporary database on disk, removed when closed.
        self._db = sqlite3.connect("", isolation_level=None)
        self._db.executescript(
            f"PRAGMA page_size = {PAGE_BYTES}; PRAGMA cache_size = -{CACHE_KIB}; "
            "PRAGMA journal_mode = OFF; "
            "PRAGMA synchronous = OFF; PRAGMA temp_store = FILE; BEGIN;" + _SCHEMA
        )
        self._shown = shown_per_problem
        self.reports = 0
        self.good = 0
        self.hosts = 0
        self.ready = 0
        self.bad = 0
        self.problems: list[ProblemGroup] = []
        self.versions: dict[str, dict[str, int]] = {}
        self.widths: list[int] = []  # of the inventory's columns, where finish was given a row

    def close(self) -> None:
        self._db.close()

    def add_folded(self, blob: bytes) -> int:
        """A worker's batch; returns how many reports it held."""
        folded = _decode_folded(blob)
        self._db.executemany(_INSERT, folded.hosts)
        if folded.bad:
            self._db.executemany("INSERT INTO bad VALUES (?, ?)", folded.bad)
        count = len(folded.hosts) + len(folded.bad)
        self.reports += count
        self.good += len(folded.hosts)
        self.bad += len(folded.bad)
        return count

    @property
    def superseded(self) -> int:
        return self.good - self.hosts

    def finish(self, row: Callable[[str, HostRecord], list[str]] | None = None) -> None:
        """Rank the hosts and gather what is said across them, in one pass over the hosts;
        with `row`, also the widths of the inventory's columns (row(name, record): cells)."""
        db = self._db
        self._drop_older()
        db.executescript(_NAME_APART)
        # The hosts copied in the order every output lists them: each later pass reads them
        # one page after another, not a seek per host.
        db.execute(
            "INSERT INTO ordered(name, record) SELECT name, record FROM host "
            "ORDER BY ready, name, source"
        )
        self.hosts, self.ready = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(ready), 0) FROM host"
        ).fetchone()
        groups: dict[tuple[str, str], ProblemGroup] = {}
        titles: dict[tuple[str, str], Counter[str]] = {}
        spread: dict[str, Counter[str]] = {"gpu": Counter(), "driver": Counter(), "cuda": Counter()}
        pending: list[tuple[int, int]] = []  # (problem, rank), inserted in batches
        for rank, name, h in self.ranked():
            if row is not None:
                cells = row(name, h)
                widths = self.widths or [0] * len(cells)
                self.widths = [max(w, len(c)) for w, c in zip(widths, cells, strict=True)]
            for p in h.problems:
                key = (p.check, p.status)
                group = groups.get(key)
                if group is None:
                    group = groups[key] = ProblemGroup(p.check, p.status, p.title, 0, [])
                    group.index = len(groups)
                    titles[key] = Counter()
                group.count += 1
                if len(group.first_hosts) < self._shown:
                    group.first_hosts.append(name)
                titles[key][p.title] += 1
                pending.append((group.index, rank))
            if len(pending) >= BATCH:
                db.executemany("INSERT INTO problem_host VALUES (?, ?)", pending)
                pending.clear()
            if h.gpus_to_act_on:
                db.execute("INSERT INTO act VALUES (?)", (rank,))
            _count_versions(h, spread)
        db.executemany("INSERT INTO problem_host VALUES (?, ?)", pending)
        for key, group in groups.items():
            group.title = titles[key].most_common(1)[0][0]
        self.problems = sorted(
            groups.values(), key=lambda g: (-severity(Status(g.status)), -g.count, g.check)
        )
        self.versions = {
            category: dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
            for category, counts in spread.items()
            if counts
        }
        db.execute("CREATE INDEX problem_hosts ON problem_host(problem, rank)")

    def _drop_older(self) -> None:
        """Keep the newest report of each host: the latest created_at (ISO 8601 UTC times
        compare as text), then the greatest source, then the last read, as a tuple compares."""
        db = self._db
        db.execute("CREATE TEMP TABLE older(id INTEGER PRIMARY KEY)")
        losers: list[tuple[int]] = []
        previous: tuple[str, int] | None = None
        for key, rowid in db.execute(_REPEATED):
            if previous is not None and previous[0] == key:
                losers.append((previous[1],))
                if len(losers) >= BATCH:
                    db.executemany("INSERT INTO older VALUES (?)", losers)
                    losers.clear()
            previous = (key, rowid)
        db.executemany("INSERT INTO older VALUES (?)", losers)
        db.execute("DELETE FROM host WHERE rowid IN (SELECT id FROM older)")

    def ranked(self) -> Iterator[tuple[int, str, HostRecord]]:
        """(rank, name, record) of every host, not ready first, then by name."""
        rows = self._db.execute("SELECT rank, name, record FROM ordered ORDER BY rank")
        for rank, name, record in rows:
            yield rank, name, _decode_record(record)

    def problem_hosts(self, group: ProblemGroup) -> Iterator[str]:
        rows = self._db.execute(
            "SELECT o.name FROM problem_host p JOIN ordered o ON o.rank = p.rank "
            "WHERE p.problem = ? ORDER BY p.rank",
            (group.index,),
        )
        for (name,) in rows:
            yield name

    def acts(self) -> Iterator[tuple[str, HostRecord]]:
        """The hosts with GPUs to act on, in the inventory's order, with their names."""
        rows = self._db.execute(
            "SELECT o.name, o.record FROM act a JOIN ordered o ON o.rank = a.rank ORDER BY a.rank"
        )
        for name, record in rows:
            yield name, _decode_record(record)

    def bad_reports(self) -> Iterator[BadReport]:
        for source, reason in self._db.execute("SELECT * FROM bad ORDER BY source, rowid"):
            yield BadReport(source, reason)


def _count_versions(h: HostRecord, spread: dict[str, Counter[str]]) -> None:
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
