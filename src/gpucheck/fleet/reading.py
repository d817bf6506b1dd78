"""Reading many reports: find them (files, folders, JSON lines on stdin), parse each in a pool
of worker processes, and yield one HostRecord or BadReport per report as they complete.

A report's own findings are used as they are; a snapshot, a report of another major schema,
or any report under --recheck is diagnosed here with today's checks and compat data.
"""

from __future__ import annotations

import collections
import functools
import itertools
import multiprocessing
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.pool import AsyncResult
from typing import TYPE_CHECKING, BinaryIO

import msgspec

from gpucheck.fleet.records import BadReport, HostRecord, record
from gpucheck.model.decoding import DecodeError, from_json
from gpucheck.model.finding import Finding, FindingV2
from gpucheck.model.snapshot import SNAPSHOT_LIMIT, Snapshot, SnapshotError, check_version, loads
from gpucheck.report.core import REPORT_SCHEMA_VERSION, exit_code

if TYPE_CHECKING:
    from gpucheck.compat import Compat

REPORT_MAJOR = int(REPORT_SCHEMA_VERSION.split(".")[0])
CHUNK = 64  # reports per task sent to a worker: large enough that pickling is not the cost
WINDOW = 4  # chunks in flight per worker: enough to keep every worker busy
IN_PROCESS_BELOW = 2 * CHUNK  # fewer reports than this: starting workers costs more than it saves

Result = HostRecord | BadReport
Item = tuple[str, "str | bytes"]  # (name, path to read) or (name, the report's bytes)


class _HeadSummary(msgspec.Struct):
    strict: bool = False


class _Head(msgspec.Struct):
    """The few top-level fields that tell a report from a snapshot; the rest is skipped."""

    schema_version: str | None = None
    # Raw: the findings are skipped, not parsed, here; empty when the key is absent.
    findings: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    summary: _HeadSummary | None = None  # a rechecked report keeps its --strict


@dataclass
class _Summary:
    exit_code: int
    strict: bool = False


@dataclass
class _Report:
    schema_version: str
    created_at: str
    summary: _Summary
    findings: list[Finding]
    snapshot: Snapshot


@dataclass
class _ReportV2:
    """A report of schema 2.x: its fixes are {text, commands}, read and upgraded to 3.0's."""

    schema_version: str
    created_at: str
    summary: _Summary
    findings: list[FindingV2]
    snapshot: Snapshot


# The report majors whose findings are used as they are (each decoded by its own shape).
READABLE: dict[str, type[_Report] | type[_ReportV2]] = {str(REPORT_MAJOR): _Report, "2": _ReportV2}


@dataclass
class Settings:
    """What every worker needs to know, set once per process."""

    recheck: bool = False
    compat_dirs: tuple[str, ...] = ()


_settings = Settings()


def _init(settings: Settings) -> None:
    global _settings
    _settings = settings


@functools.cache
def _compat(dirs: tuple[str, ...]) -> Compat:
    from gpucheck.compat import load

    return load(dirs)  # once per worker process: every compat file is read once there


def _worker_init(settings: Settings) -> None:
    # Ctrl-C is the parent's to handle (exit 130, one line); a worker would print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _init(settings)


def _diagnose(snapshot: Snapshot) -> list[Finding]:
    import gpucheck.checks  # noqa: F401  (registers every check)
    from gpucheck.checks.context import Context, Requirements
    from gpucheck.checks.registry import run

    return run(Context(snapshot, Requirements(), _compat(_settings.compat_dirs)))


def _json_error(message: str) -> str:
    reason = message.removeprefix("JSON is malformed: ")
    return "not valid JSON: " + reason[:1].lower() + reason[1:]


def parse(source: str, data: bytes) -> Result:
    """One report or snapshot, reduced to what the fleet keeps; never raises for bad input."""
    if len(data) > SNAPSHOT_LIMIT:
        return BadReport(source, "too large to be a gpucheck report (over 64 MiB)")
    data = data.removeprefix(b"\xef\xbb\xbf")
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
        return record(source, report.snapshot, findings, code, report.created_at, False)
    # A snapshot, a report of an older major (1.x: its findings' shape differs), or --recheck: the
    # snapshot inside is what today's checks judge.
    try:
        snapshot = loads(data)
    except SnapshotError as exc:
        return BadReport(source, str(exc))
    from gpucheck.compat import CompatError

    try:
        findings = _diagnose(snapshot)
    except CompatError as exc:
        return BadReport(source, f"compat data: {exc}")
    strict = head.summary.strict if head.summary else False
    code = exit_code(findings, strict)
    return record(source, snapshot, findings, code, snapshot.created_at, True)


def _read(item: Item) -> Result:
    name, what = item
    if isinstance(what, bytes):
        return parse(name, what)
    try:
        with open(what, "rb") as fh:
            data = fh.read(SNAPSHOT_LIMIT + 1)
    except FileNotFoundError:
        return BadReport(name, "no such file or folder")
    except OSError as exc:
        return BadReport(name, f"cannot read: {exc.strerror}")
    return parse(name, data)


def _read_chunk(items: list[Item]) -> list[Result]:
    return [_read(item) for item in items]


def _walk(folder: str) -> Iterator[Item]:
    """Every *.json and *.jsonl file under `folder`, in a stable order."""
    for top, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".json", ".jsonl")):
                yield from _file(os.path.join(top, name))


def _lines(stream: BinaryIO, name: str) -> Iterator[Item]:
    """Reports one after another: JSON lines (`jq -c . *.json`), and indented documents too
    (`gpucheck doctor --json | gpucheck fleet -`), which end with a `}` line of their own."""
    document: list[bytes] = []
    start = 0
    for number, line in enumerate(stream, 1):
        stripped = line.strip()
        if document:
            document.append(line)
            if line.rstrip() == b"}":  # the top-level object's end, as indented JSON writes it
                yield f"{name}:{start}", b"".join(document)
                document = []
        elif stripped.startswith(b"{") and not stripped.endswith(b"}"):
            document, start = [line], number  # an indented document begins
        elif stripped:
            yield f"{name}:{number}", line
    if document:  # cut short: the worker says it is truncated
        yield f"{name}:{start}", b"".join(document)


def _file(path: str) -> Iterator[Item]:
    if not path.endswith(".jsonl"):
        yield path, path  # read in the worker
        return
    try:
        stream = open(path, "rb")  # noqa: SIM115  (closed below, after the lines are yielded)
    except OSError:
        yield path, path  # the worker's read fails the same way and names why
        return
    with stream:
        yield from _lines(stream, path)


def items(inputs: Iterable[str], stdin: BinaryIO | None = None) -> Iterator[Item]:
    for arg in inputs:
        if arg == "-":
            yield from _lines(stdin if stdin is not None else sys.stdin.buffer, "<stdin>")
        elif os.path.isdir(arg):
            yield from _walk(arg)
        else:
            yield from _file(arg)


def _chunks(source: Iterator[Item]) -> Iterator[list[Item]]:
    while chunk := list(itertools.islice(source, CHUNK)):
        yield chunk


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def read_all(
    source: Iterable[Item], settings: Settings, jobs: int | None = None
) -> Iterator[Result]:
    """Results as they complete (in no particular order), across `jobs` processes."""
    _init(settings)
    stream = iter(source)
    first = list(itertools.islice(stream, IN_PROCESS_BELOW))
    jobs = jobs or default_jobs()
    if len(first) < IN_PROCESS_BELOW or jobs == 1:
        for item in itertools.chain(first, stream):
            yield _read(item)
        return
    # fork where there is one: the workers start with everything already imported.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with context.Pool(jobs, initializer=_worker_init, initargs=(settings,)) as pool:
        # A bounded window of chunks in flight: a stream on stdin is read as fast as it is
        # summarised, never gathered whole in memory (Pool.imap would queue all of it).
        pending: collections.deque[AsyncResult[list[Result]]] = collections.deque()
        for chunk in _chunks(itertools.chain(first, stream)):
            pending.append(pool.apply_async(_read_chunk, (chunk,)))
            if len(pending) >= WINDOW * jobs:
                yield from pending.popleft().get()
        while pending:
            yield from pending.popleft().get()
