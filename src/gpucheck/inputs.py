"""What a user hands gpucheck, read and checked: a saved snapshot (or any bounded input
file), extra compat folders, and the options of a probe run. Errors are UserError: one line
for the user (the command line exits 2 with it; the Python API raises ValueError)."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpucheck.compat import Compat
    from gpucheck.model.snapshot import Snapshot
    from gpucheck.probes.run import ProbeOptions


class UserError(Exception):
    """Bad input: reported as one line, exit 2."""


def read_input(path: str, limit: int, too_large: str, option: str = "--from") -> bytes:
    """A file's bytes (`-`: standard input), read up to `limit`: more is `too_large`."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
    except FileNotFoundError:
        raise UserError(f"{option}: {path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{option}: {path} is a folder") from None
    except OSError as exc:
        raise UserError(f"{option}: cannot read {path}: {exc.strerror}") from None
    if len(data) > limit:
        raise UserError(f"{option}: {path} {too_large}")
    return data


def read_snapshot(path: str) -> Snapshot:
    from gpucheck.model.snapshot import SNAPSHOT_LIMIT, SnapshotError, loads

    data = read_input(path, SNAPSHOT_LIMIT, "is too large to be a snapshot (over 64 MiB)")
    try:
        return loads(data)
    except SnapshotError as exc:
        raise UserError(f"--from: {path}: {exc}") from None


def load_compat(dirs: list[str] | None, every_topic: bool = False) -> Compat:
    """The compat data, loaded once per command and handed to whatever needs it; with
    `every_topic`, every file read now rather than when first asked for (a caller with time
    to spare, such as the doctor while its probes run)."""
    from gpucheck.compat import CompatError, load

    try:
        compat = load(tuple(dirs or ()))
        if every_topic:
            compat.read_all()
        return compat
    except CompatError as exc:
        raise UserError(f"compat data: {exc}") from None


def probe_options(
    timeout: float, python: str | None, deep: bool, host_id: str | None = None
) -> ProbeOptions:
    from gpucheck.probes.frameworks import PythonNotFound, interpreters
    from gpucheck.probes.run import ProbeOptions

    if host_id is not None and not (0 < len(host_id) <= 256 and host_id.isprintable()):
        raise UserError("--host-id: expected 1 to 256 printable characters")
    options = ProbeOptions(timeout=timeout, python=python, deep=deep, host_id=host_id)
    try:
        interpreters(options.env, python)  # a bad --python is a usage error, not a finding
    except PythonNotFound as exc:
        raise UserError(str(exc)) from None
    return options


def parse_size(text: str) -> int:
    """--min-memory: 40G and 40GiB are binary, 40GB decimal (fit's --gpu-memory reads alike)."""
    from gpucheck.fit.units import UnitError
    from gpucheck.fit.units import parse_size as size

    try:
        return size(text, "--min-memory")
    except UnitError as exc:
        raise UserError(str(exc)) from None


def parse_job_pids(text: str) -> frozenset[int]:
    """--job-pids: PIDs separated by commas, spaces or newlines (`scontrol listpids`'s PID
    column fits); empty means no job runs."""
    words = [w for w in re.split(r"[\s,]+", text.strip()) if w]
    if not all(re.fullmatch(r"[0-9]{1,10}", w) and int(w) > 0 for w in words):
        bad = next(w for w in words if not (re.fullmatch(r"[0-9]{1,10}", w) and int(w) > 0))
        raise UserError(f"--job-pids: {bad!r} is not a process id")
    return frozenset(int(w) for w in words)


def parse_compute_capability(text: str) -> str:
    if not re.fullmatch(r"\d{1,2}(\.\d{1,2})?", text.strip()):
        raise UserError(
            f"--min-compute-capability: {text!r} is not a compute capability (like 8.0)"
        )
    major, _, minor = text.strip().partition(".")
    return f"{int(major)}.{int(minor or 0)}"
