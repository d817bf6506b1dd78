"""What a user hands gpucheck, read and checked: a saved snapshot (or any bounded input
file), extra compat folders, and the options of a probe run. Errors are UserError: one line
for the user (the command line exits 2 with it; the Python API raises ValueError)."""

from __future__ import annotations

import math
import os
import re
import stat
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gpucheck.compat import Compat
    from gpucheck.model.snapshot import Snapshot
    from gpucheck.probes.run import ProbeOptions


class UserError(Exception):
    """Bad input: reported as one line, exit 2."""


def unreadable(path: object, exc: OSError, folder: str = "is a folder") -> str:
    """Why a file could not be read, in the words every reader of user files uses; `folder`
    says what to pass instead of a folder."""
    if isinstance(exc, FileNotFoundError):
        return f"{path}: no such file"
    if isinstance(exc, IsADirectoryError):
        return f"{path} {folder}"
    return f"cannot read {path}: {exc.strerror}"


# The regular files this command has read, as the user named them -> (device, inode): no
# -o writes over one (outputs.refuse_input_as_output). The command line starts each command
# with none (forget_inputs); every reader of a user's file notes it (note_input).
_INPUTS: dict[str, tuple[int, int]] = {}


def note_input(path: str | os.PathLike[str]) -> None:
    """Remember that this command reads `path` (a regular file; `-`, a pipe or a device is
    not one a report could replace)."""
    name = os.fspath(path)
    if name == "-":
        return
    try:
        st = os.stat(name)
    except (OSError, ValueError):
        return
    if stat.S_ISREG(st.st_mode):
        _INPUTS[name] = (st.st_dev, st.st_ino)


def inputs_read() -> dict[str, tuple[int, int]]:
    """The regular files noted as read so far (name -> (device, inode))."""
    return dict(_INPUTS)


def forget_inputs() -> None:
    _INPUTS.clear()


def empty_input(path: str) -> str:
    """What an input with nothing in it is called: said so, not "not valid JSON: Input data
    was truncated" from a decoder that was handed nothing."""
    return "-: standard input is empty" if path == "-" else f"{path} is empty"


def read_input(path: str, limit: int, too_large: str, option: str = "--from") -> bytes:
    """A file's bytes (`-`: standard input), read up to `limit`: more is `too_large`; none at
    all (or only blanks) is an empty input, refused."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            note_input(path)
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
    except OSError as exc:
        raise UserError(f"{option}: {unreadable(path, exc)}") from None
    if len(data) > limit:
        raise UserError(f"{option}: {path} {too_large}")
    if not data.removeprefix(b"\xef\xbb\xbf").strip():
        raise UserError(f"{option}: {empty_input(path)}")
    return data


def read_snapshot(path: str) -> Snapshot:
    from gpucheck.model.snapshot import SNAPSHOT_LIMIT

    data = read_input(path, SNAPSHOT_LIMIT, "is too large to be a snapshot (over 64 MiB)")
    return snapshot_from(data, path)


def snapshot_from(data: bytes, path: str) -> Snapshot:
    """The snapshot in `data`, the bytes of `path` (a snapshot, a whole report, or a support
    bundle holding one)."""
    from gpucheck.model.bundle import SNAPSHOT_MEMBER, BundleError, bundle_member, is_bundle
    from gpucheck.model.snapshot import SnapshotError, loads

    if is_bundle(data):
        try:
            data = bundle_member(data, SNAPSHOT_MEMBER)
        except BundleError as exc:
            raise UserError(f"--from: {path}: {exc}") from None
    try:
        return loads(data)
    except SnapshotError as exc:
        raise UserError(f"--from: {path}: {exc}") from None


def load_compat(dirs: list[str] | None, every_topic: bool = False) -> Compat:
    """The compat data, loaded once per command and handed to whatever needs it; with
    `every_topic`, every file read now rather than when first asked for (a caller with time
    to spare, such as the doctor while its probes run)."""
    from gpucheck.compat import TOPICS, CompatError, load

    try:
        compat = load(tuple(dirs or ()))
        if every_topic:
            compat.read_all()
    except CompatError as exc:
        raise UserError(f"compat data: {exc}") from None
    except OSError as exc:  # a folder name the system refuses (too long), one not readable
        raise UserError(f"compat data: {exc.filename}: {exc.strerror}") from None
    for folder in compat.dirs[1:]:  # the user's folders: no -o may write over their files
        for name in TOPICS:
            note_input(folder / name)
    return compat


# Bounds of the numbers the command line and the API share, each (lowest, highest).
PROBE_TIMEOUT = (0.5, 600.0)  # seconds each probe may take (doctor, snapshot, fit)
MIN_GPUS = (1, None)  # --min-gpus / min_gpus


def check_number(
    value: object, name: str, low: float, high: float | None, *, integer: bool = False
) -> float:
    """`value`, if it is a number (an integer, with `integer`) from `low` to `high`: the one
    judgement of a number option, for the command line (whose parser reads the text) and the
    API. NaN, which every comparison lets through, and the infinities are refused. Raises
    TypeError (not a number; bool is not one) or ValueError, each naming `name`."""
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        wanted = "an integer" if integer else "a number"
        raise TypeError(f"{name}: expected {wanted}, not {type(value).__name__} {value!r}")
    number: float = value if isinstance(value, (int, float)) else 0.0
    span = f"from {low:g} to {high:g}" if high is not None else f"of at least {low:g}"
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"{name}: {value!r} is not a number {span}")
    if number < low or (high is not None and number > high):
        raise ValueError(f"{name}: {value!r} is out of range: give a number {span}")
    return number


def python_inputs(python: str | Sequence[str] | None) -> list[str]:
    """The files --python names, inputs of the command that no -o may replace: an @FILE list
    of interpreters, an interpreter given by its path."""
    values = [python] if isinstance(python, str) else list(python or [])
    return [os.path.expanduser(v[1:] if v.startswith("@") else v) for v in values]


def probe_options(
    timeout: float,
    python: str | Sequence[str] | None,
    deep: bool,
    host_id: str | None = None,
) -> ProbeOptions:
    """`python`: --python's values (paths, names, environment folders, globs, @FILE lists),
    expanded here once: a bad one is a usage error, not a finding."""
    from gpucheck.probes.frameworks import PythonNotFound, expand_pythons
    from gpucheck.probes.run import ProbeOptions

    if host_id is not None and not (0 < len(host_id) <= 256 and host_id.isprintable()):
        raise UserError("--host-id: expected 1 to 256 printable characters")
    values = [python] if isinstance(python, str) else list(python or [])
    for named in python_inputs(values):
        note_input(named)
    try:
        pythons = expand_pythons(values)
    except PythonNotFound as exc:
        raise UserError(str(exc)) from None
    return ProbeOptions(timeout=timeout, pythons=pythons, deep=deep, host_id=host_id)


# The one reading of a size, for every option that takes one (--min-memory, fit's --gpu-memory,
# watch's --rotate): a bare letter and the IEC forms are binary, as nvidia-smi, Slurm and docker
# count (80G = 80 GiB); the SI forms are decimal, as datasheets count (an "80GB" H100 has
# 85.5e9 bytes, so --min-memory 80GB holds on it while 80G does not).
SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kib": 1024,
    "kb": 1000,
    "m": 1024**2,
    "mib": 1024**2,
    "mb": 1000**2,
    "g": 1024**3,
    "gib": 1024**3,
    "gb": 1000**3,
    "t": 1024**4,
    "tib": 1024**4,
    "tb": 1000**4,
}


def probe_here(
    timeout: float,
    python: str | Sequence[str] | None,
    deep: bool = False,
    host_id: str | None = None,
    redact: bool = False,
) -> Snapshot:
    """This machine's facts, the probes run with these options (a bad option is a UserError
    before any probe starts); `redact`: as `snapshot --redact` writes them."""
    from gpucheck.probes.run import collect

    snap = collect(probe_options(timeout, python, deep, host_id))
    if redact:  # (redaction's imports, hashlib's OpenSSL among them, only when asked)
        from gpucheck.model.redact import redact_here

        snap = redact_here(snap)
    return snap


# A number as a duration (--duration, read by float()) takes it: 80, 0.5, .5, 1e3, 1_000;
# a sign only to say "must be above zero" (nan and inf are no size).
NUMBER = r"[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?"


def parse_size(text: str, option: str = "--min-memory", require_unit: bool = False) -> int:
    """A size in bytes (see SIZE_UNITS); a bad one is a UserError naming the option. With
    require_unit, a bare number ('80': GiB? GB? bytes?) is refused."""
    match = re.fullmatch(rf"\s*({NUMBER})\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else None
    if not match or unit not in SIZE_UNITS:
        raise UserError(f"{option}: {text!r} is not a size (examples: 80GiB, 24G, 80GB, 16384MiB)")
    if require_unit and not unit:
        raise UserError(
            f"{option}: {text!r} has no unit: write {text.strip()}GiB (as nvidia-smi's MiB) "
            f"or {text.strip()}GB"
        )
    exact = float(match.group(1)) * SIZE_UNITS[unit]
    if exact >= 2**63:  # (400 digits read as infinity): no memory or file is that large
        raise UserError(f"{option}: {text!r} is too large")
    value = int(exact)
    if value <= 0:
        raise UserError(f"{option}: {text!r} must be above zero")
    return value


def parse_job_pids(text: str, option: str = "--job-pids") -> frozenset[int]:
    """--job-pids: PIDs separated by commas, spaces or newlines (`scontrol listpids`'s PID
    column fits); empty means no job runs. A bad one is a UserError naming `option`."""
    pids = set()
    for word in (w for w in re.split(r"[\s,]+", text.strip()) if w):
        if not re.fullmatch(r"[0-9]{1,10}", word) or int(word) == 0:
            raise UserError(f"{option}: {word!r} is not a process id")
        pids.add(int(word))
    return frozenset(pids)


def parse_compute_capability(text: str, option: str = "--min-compute-capability") -> str:
    if not re.fullmatch(r"\d{1,2}(\.\d{1,2})?", text.strip()):
        raise UserError(f"{option}: {text!r} is not a compute capability (like 8.0)")
    major, _, minor = text.strip().partition(".")
    return f"{int(major)}.{int(minor or 0)}"
