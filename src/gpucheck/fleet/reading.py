"""Reading many reports: find them (files, folders, JSON lines on stdin), parse each in a pool
of worker processes, and yield folded batches (store.Folded, msgpack: one row per host) as
they complete. Only those batches travel between processes, a bounded number at a time.

A report's own findings are used as they are, read through the lean types (lean.py) in one
decode; a snapshot, a report of another major schema, or any report under --recheck is
diagnosed here with today's checks and compat data, and the report's requirements with them.
"""

from __future__ import annotations

import collections
import functools
import itertools
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterable, Iterator
from multiprocessing.pool import AsyncResult, Pool
from typing import TYPE_CHECKING

import msgspec
from msgspec.structs import replace

import gpucheck.checks  # noqa: F401  (registers every check)
from gpucheck.checks.context import Context
from gpucheck.checks.registry import run
from gpucheck.checks.renamed import current_id
from gpucheck.compat import CompatError, load
from gpucheck.fleet.lean import LeanFinding, LeanReport
from gpucheck.fleet.records import BadReport, HostRecord, record
from gpucheck.fleet.sources import Item
from gpucheck.fleet.store import Folded, HostRow, host_row
from gpucheck.model.bundle import REPORT_MEMBER, BundleError, bundle_member, is_bundle
from gpucheck.model.decoding import DecodeError, from_json
from gpucheck.model.finding import Finding, FindingV2, GpuRef, Subjects
from gpucheck.model.layers import Layer
from gpucheck.model.requirements import Requirements
from gpucheck.model.snapshot import SNAPSHOT_LIMIT, Snapshot, SnapshotError, check_version, loads
from gpucheck.report.core import REPORT_SCHEMA_VERSION, exit_code

if TYPE_CHECKING:
    from gpucheck.compat import Compat

REPORT_MAJOR = int(REPORT_SCHEMA_VERSION.split(".")[0])
CHUNK = 256  # reports per task sent to a worker: fewer, larger messages cost the parent less
WINDOW = 2  # chunks in flight per worker: enough to keep every worker busy
MAX_DEFAULT_JOBS = 8
IN_PROCESS_BELOW = 2 * CHUNK  # fewer reports than this: starting workers costs more than it saves
# Seconds the workers are given to end once the reading is over: a busy machine ends them in
# well under a second.
SHUTDOWN_S = 20.0

READ_FIRST = 64 * 1024  # under malloc's mmap threshold: a heap buffer, trimmed after the read
TOO_LARGE = "too large to be a gpucheck report (over 64 MiB)"

Result = HostRecord | BadReport


class _HeadSummary(msgspec.Struct):
    strict: bool = False
    requirements: Requirements | None = None  # report schema 2.1 on


class _Head(msgspec.Struct):
    """The few top-level fields that tell a report from a snapshot; the rest is skipped."""

    schema_version: str | None = None
    # Raw: the findings are skipped, not parsed, here; empty when the key is absent.
    findings: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    summary: _HeadSummary | None = None  # a rechecked report keeps its --strict


class _Summary(msgspec.Struct):
    exit_code: int
    strict: bool = False


class _Report(msgspec.Struct):
    """A report read in full: only where the lean read failed, to name what is wrong."""

    schema_version: str
    created_at: str
    summary: _Summary
    findings: list[Finding]
    snapshot: Snapshot


class _ReportV2(msgspec.Struct):
    """A report of schema 2.x: its fixes are {text, commands}, read and upgraded to 3.0's."""

    schema_version: str
    created_at: str
    summary: _Summary
    findings: list[FindingV2]
    snapshot: Snapshot


# The report majors whose findings are used as they are (each decoded by its own shape; the
# check ids of those before 4.0 read as 4.0 names them, checks/renamed.py).
READABLE: dict[str, type[_Report] | type[_ReportV2]] = {
    str(REPORT_MAJOR): _Report,
    "3": _Report,
    "2": _ReportV2,
}


class Settings(msgspec.Struct):
    """What every worker needs to know, set once per process."""

    recheck: bool = False
    compat_dirs: tuple[str, ...] = ()


_settings = Settings()


def _init(settings: Settings) -> None:
    global _settings
    _settings = settings


@functools.cache
def _compat(dirs: tuple[str, ...]) -> Compat:
    return load(dirs)  # once per worker process: every compat file is read once there


def _worker_init(settings: Settings) -> None:
    # Ctrl-C is the parent's to handle (exit 130, one line); a worker would print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _init(settings)


def _diagnose(snapshot: Snapshot, requirements: Requirements) -> list[Finding]:
    return run(Context(snapshot, requirements, _compat(_settings.compat_dirs)))


def _requirement_findings(raw: msgspec.Raw) -> list[Finding]:
    """The requirements.* findings of a report that did not record its requirements (before
    report schema 2.1): they cannot be judged again, so they stand as written (ids mapped)."""
    try:
        written = msgspec.json.decode(raw, type=list[LeanFinding])
    except (msgspec.ValidationError, msgspec.DecodeError):
        return []
    return [
        Finding(
            current_id(f.id),
            Layer.REQUIREMENTS,
            f.status,
            f.title,
            subjects=Subjects(
                gpus=[GpuRef(g.index, g.uuid, g.pci_bus_id) for g in f.subjects.gpus]
            ),
        )
        for f in written
        if current_id(f.id).startswith("requirements.")
    ]


_decode_lean = msgspec.json.Decoder(LeanReport, strict=True).decode


@functools.lru_cache(maxsize=64)
def _readable_snapshot(version: str) -> bool:
    """check_version, remembered: a fleet's reports carry a handful of versions."""
    try:
        check_version(version)
    except SnapshotError:
        return False
    return True


def _lean(source: str, data: bytes) -> HostRecord | None:
    """A report of the current major read in one decode into the lean types; None: anything
    else (a snapshot, another major, a bad report), which `parse` reads in full."""
    try:
        report = _decode_lean(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    version, summary, snapshot = report.schema_version, report.summary, report.snapshot
    if (
        version is None
        or version.split(".")[0] != str(REPORT_MAJOR)
        or report.findings is None
        or summary is None
        or snapshot is None
        or report.created_at is None
    ):
        return None
    if not _readable_snapshot(snapshot.schema_version):
        return None
    code = summary.exit_code
    return record(source, snapshot, report.findings, code, report.created_at, False)


def _json_error(message: str) -> str:
    reason = message.removeprefix("JSON is malformed: ")
    return "not valid JSON: " + reason[:1].lower() + reason[1:]


def parse(source: str, data: bytes) -> Result:
    """One report or snapshot, reduced to what the fleet keeps; never raises for bad input."""
    if len(data) > SNAPSHOT_LIMIT:
        return BadReport(source, TOO_LARGE)
    if is_bundle(data):  # a support bundle (snapshot --bundle): the report inside it
        try:
            data = bundle_member(data, REPORT_MEMBER)
        except BundleError as exc:
            return BadReport(source, str(exc))
    data = data.removeprefix(b"\xef\xbb\xbf")
    if not data.strip():  # (not "not valid JSON: input data was truncated")
        return BadReport(source, "the file is empty")
    if not _settings.recheck and (lean := _lean(source, data)) is not None:
        return lean
    try:
        head = from_json(_Head, data)
    except DecodeError as exc:
        if exc.path:
            return BadReport(source, f"not a gpucheck report or snapshot: {exc}")
        return BadReport(source, "not a gpucheck report or snapshot: expected a JSON object")
    except ValueError as exc:
        return BadReport(source, _json_error(str(exc)))
    version = head.schema_version or ""
    shape = READABLE.get(version.split(".")[0])
    if head.findings and shape is not None and not _settings.recheck:
        try:
            report = from_json(shape, data)
            check_version(report.snapshot.schema_version)
        except (DecodeError, SnapshotError) as exc:
            return BadReport(source, f"invalid report: {exc}")
        except ValueError as exc:  # not JSON after all: from_json's message is one line
            return BadReport(source, _json_error(str(exc)))
        code = report.summary.exit_code
        findings = [f.upgraded() if isinstance(f, FindingV2) else f for f in report.findings]
        findings = [replace(f, id=current_id(f.id)) for f in findings]
        return record(source, report.snapshot, findings, code, report.created_at, False)
    # A snapshot, a report of an older major (1.x: its findings' shape differs), or --recheck: the
    # snapshot inside is what today's checks judge.
    try:
        snapshot = loads(data)
    except SnapshotError as exc:
        return BadReport(source, str(exc))

    requirements = head.summary.requirements if head.summary else None
    try:
        findings = _diagnose(snapshot, requirements or Requirements())
    except CompatError as exc:
        return BadReport(source, f"compat data: {exc}")
    if requirements is None and head.findings:
        findings += _requirement_findings(head.findings)
    strict = head.summary.strict if head.summary else False
    code = exit_code(findings, strict)
    return record(source, snapshot, findings, code, snapshot.created_at, True)


def _read_file(path: str) -> bytes | BadReport:
    # One plain read for the usual report (tens of KiB): no 64 MiB buffer per file, which
    # would cost more than the read, and no stat; a larger file in further reads, never much
    # past the limit.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return BadReport(path, "no such file or folder")
    except OSError as exc:
        return BadReport(path, f"cannot read: {exc.strerror}")
    try:
        data = os.read(fd, READ_FIRST)
        if len(data) < READ_FIRST:
            return data  # a short read of a file: its end
        chunks = [data]
        got = len(data)
        while got <= SNAPSHOT_LIMIT and (chunk := os.read(fd, max(got, 1 << 20))):
            chunks.append(chunk)
            got += len(chunk)
        if got > SNAPSHOT_LIMIT:
            return BadReport(path, TOO_LARGE)
        return b"".join(chunks)
    except OSError as exc:
        return BadReport(path, f"cannot read: {exc.strerror}")
    finally:
        os.close(fd)


def _shown(name: str) -> str:
    """A source's name as the fleet keeps and shows it: a file name that is not UTF-8 (its
    undecodable bytes are lone surrogates here) is kept escaped (snap-\\udcff.json), which
    the store, msgpack and every output can hold."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return name


def _read(item: Item) -> Result:
    name, what = item
    name = _shown(name)
    if isinstance(what, bytes):
        return parse(name, what)
    data = _read_file(what)
    if isinstance(data, BadReport):
        return BadReport(name, data.reason)
    return parse(name, data)


_encode = msgspec.msgpack.Encoder().encode


def fold(items: list[Item]) -> bytes:
    """A batch of reports, read and reduced to what the store takes (store.Folded)."""
    hosts: list[HostRow] = []
    bad: list[tuple[str, str]] = []
    for item in items:
        result = _read(item)
        if isinstance(result, HostRecord):
            hosts.append(host_row(result))
        else:
            bad.append((result.source, result.reason))
    return _encode(Folded(hosts, bad))


def _chunks(source: Iterator[Item]) -> Iterator[list[Item]]:
    while chunk := list(itertools.islice(source, CHUNK)):
        yield chunk


def default_jobs() -> int:
    """One worker per core, up to MAX_DEFAULT_JOBS: the parent keeps up with about that many
    (it lists, stores and writes every report), and each worker costs about 3.5 MiB more."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return min(cores, MAX_DEFAULT_JOBS)


def read_all(
    source: Iterable[Item], settings: Settings, jobs: int | None = None
) -> Iterator[bytes]:
    """Folded batches as they complete (in no particular order), across `jobs` processes."""
    _init(settings)
    stream = iter(source)
    first = list(itertools.islice(stream, IN_PROCESS_BELOW))
    jobs = jobs or default_jobs()
    if len(first) < IN_PROCESS_BELOW or jobs == 1:
        for chunk in _chunks(itertools.chain(first, stream)):
            yield fold(chunk)
        return
    # fork where there is one: the workers start with everything already imported.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    pool = context.Pool(jobs, initializer=_worker_init, initargs=(settings,))
    consumed = False
    try:
        # A bounded window of chunks in flight: a stream on stdin is read as fast as it is
        # summarised, never gathered whole in memory (Pool.imap would queue all of it).
        pending: collections.deque[AsyncResult[bytes]] = collections.deque()
        for chunk in _chunks(itertools.chain(first, stream)):
            pending.append(pool.apply_async(fold, (chunk,)))
            if len(pending) >= WINDOW * jobs:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
        consumed = True
    finally:
        _shut_down(pool, consumed)


def _shut_down(pool: Pool, consumed: bool) -> None:
    """End the workers without waiting on them forever. Every result read: close() lets each
    worker take its end-of-work sentinel and exit, and join() waits for that. Pool.terminate()
    (what `with Pool` does) could instead wait forever, on a busy machine, in join() for a
    worker blocked on the task queue's lock, which terminate() itself holds. Work left (Ctrl-C,
    the reader gone, an error) can only be dropped with terminate(). Either way the command
    waits a bounded time: its exit (os._exit, entry.py) ends what is left."""

    def finish() -> None:
        if consumed:
            pool.close()
            pool.join()
        else:
            pool.terminate()

    finishing = threading.Thread(target=finish, name="gpucheck-fleet-shutdown", daemon=True)
    finishing.start()
    finishing.join(SHUTDOWN_S)
