"""What the commands share: the one-line user error, option types, reading a snapshot, and
writing output (to stdout, or to a file that is replaced only by a complete one)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from gpucheck.compat import Compat
    from gpucheck.model.snapshot import Snapshot
    from gpucheck.probes.run import ProbeOptions


class UserError(Exception):
    """Bad input: reported as one line, exit 2."""


def _open_output(path: str | None) -> tuple[IO[str], str | None]:
    """stdout, or a temporary file beside `path` that replaces it only once fully written."""
    if path is None or path == "-":
        return sys.stdout, None
    target = Path(path)
    if target.is_dir():
        raise UserError(f"--output: {path} is a folder")
    if not target.parent.is_dir():
        raise UserError(f"--output: folder {target.parent} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise UserError(f"--output: cannot write in {target.parent}: {exc.strerror}") from None
    # mkstemp makes 0600; a report is read by collectors running as other users.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return os.fdopen(fd, "w", encoding="utf-8"), tmp


def _finish_output(stream: IO[str], tmp: str | None, path: str | None) -> None:
    if tmp is None or path is None:
        stream.flush()
        return
    stream.close()
    os.replace(tmp, path)


def write_output(path: str | None, write: Callable[[IO[str]], object]) -> None:
    stream, tmp = _open_output(path)
    try:
        write(stream)
        _finish_output(stream, tmp, path)
    except BrokenPipeError:
        # The reader went away (gpucheck doctor | head): the exit code still tells the result.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except BaseException:
        if tmp is not None:
            stream.close()
            os.unlink(tmp)
        raise


def read_snapshot(path: str) -> Snapshot:
    from gpucheck.model.snapshot import SNAPSHOT_LIMIT, SnapshotError, loads

    try:
        if path == "-":
            data = sys.stdin.buffer.read(SNAPSHOT_LIMIT + 1)
        else:
            with open(path, "rb") as fh:
                data = fh.read(SNAPSHOT_LIMIT + 1)
    except FileNotFoundError:
        raise UserError(f"--from: {path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"--from: {path} is a folder") from None
    except OSError as exc:
        raise UserError(f"--from: cannot read {path}: {exc.strerror}") from None
    if len(data) > SNAPSHOT_LIMIT:
        raise UserError(f"--from: {path} is too large to be a snapshot (over 64 MiB)")
    try:
        return loads(data)
    except SnapshotError as exc:
        raise UserError(f"--from: {path}: {exc}") from None


def load_compat(dirs: list[str] | None) -> Compat:
    """The compat data, loaded once per command and handed to whatever needs it."""
    from gpucheck.compat import CompatError, load

    try:
        return load(tuple(dirs or ()))
    except CompatError as exc:
        raise UserError(f"compat data: {exc}") from None


TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        min=0.5,
        max=600,
        help="Seconds each probe may take (they run side by side).",
    ),
]
DeepOpt = Annotated[
    bool,
    typer.Option(
        "--deep",
        help="Also import each framework in a child process and run a tiny operation on every "
        "GPU (slower: seconds).",
    ),
]
PythonOpt = Annotated[
    str | None,
    typer.Option(
        "--python",
        metavar="PATH",
        help="Probe the frameworks of this interpreter (default: gpucheck's own and the active "
        "virtualenv/conda env).",
    ),
]
OutputOpt = Annotated[
    str | None,
    typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Answer as JSON (keys are stable).")]
CompatDirOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--compat-dir",
        metavar="DIR",
        help="Extra compat folder whose rows override or extend the shipped data (repeatable; "
        "also GPUCHECK_COMPAT_DIR).",
    ),
]


HostIdOpt = Annotated[
    str | None,
    typer.Option(
        "--host-id",
        metavar="ID",
        help="This host's name in the fleet's inventory (default: a hash of /etc/machine-id).",
    ),
]
RedactOpt = Annotated[
    bool,
    typer.Option(
        "--redact",
        help="Replace what identifies a person or site (hostname, user names, serials, UUIDs, "
        "unlisted environment values) so the JSON can be shared publicly.",
    ),
]


def redacted(snapshot: Snapshot) -> Snapshot:
    """`snapshot` for sharing: with this machine's user name too, wherever a path has it."""
    import contextlib
    import getpass

    from gpucheck.model.redact import redact

    names = [Path.home().name]
    # No passwd entry (a container run as an arbitrary uid): the home folder's name only.
    with contextlib.suppress(KeyError, OSError):
        names.append(getpass.getuser())
    return redact(snapshot, names)


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
