"""What the commands share: the one-line user error, option types, reading a snapshot, and
writing output (to stdout, or to a file that is replaced only by a complete one)."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from gpucheck.compat import Compat
    from gpucheck.model.snapshot import Snapshot
    from gpucheck.probes.run import ProbeOptions


class UserError(Exception):
    """Bad input: reported as one line, exit 2."""


class OutputError(Exception):
    """The report could not be written (a full disk, a closed device): one line, exit 4."""


def output_target(path: str) -> tuple[str, bool]:
    """Where `-o PATH` writes, and whether by replacing a regular file.

    A regular file (or a link to one, followed) is replaced atomically by a complete one,
    keeping its owner and mode. Anything else that exists and is not a folder (a character
    device such as /dev/null, a fifo, /dev/stdout, a shell's /dev/fd/N) is written in place:
    replacing it would destroy it or leave its reader waiting.
    """
    try:
        st = os.stat(path)  # follows links
    except FileNotFoundError:
        real = os.path.realpath(path)  # a dangling link: create its target
        if not os.path.isdir(os.path.dirname(real) or "."):
            raise UserError(f"--output: folder {os.path.dirname(real)} does not exist") from None
        return real, True
    except OSError as exc:
        raise UserError(f"--output: {path}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"--output: {path} is a folder")
    # /dev/stdout, /dev/fd/N and /proc/self/fd/N name an open descriptor, whatever it is.
    special = os.path.abspath(path).startswith(("/dev/", "/proc/"))
    if stat.S_ISREG(st.st_mode) and not special:
        return os.path.realpath(path), True
    return path, False


def _replace_atomically(target: str, write: Callable[[IO[str]], object]) -> None:
    folder = os.path.dirname(target) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", dir=folder)
    except OSError as exc:
        raise UserError(f"--output: cannot write in {folder}: {exc.strerror}") from None
    try:
        try:
            old = os.stat(target)
        except FileNotFoundError:
            # mkstemp makes 0600; a new report is read by collectors running as other users.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        else:
            os.chmod(tmp, stat.S_IMODE(old.st_mode))
            if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
                with contextlib.suppress(PermissionError):
                    os.chown(tmp, old.st_uid, old.st_gid)
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            write(stream)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_output(path: str | None, write: Callable[[IO[str]], object]) -> None:
    """Write to stdout, or to `path` (see output_target). A reader that goes away early
    (`gpucheck doctor | head`) is not an error: the exit code still tells the result."""
    try:
        if path is None or path == "-":
            write(sys.stdout)
            sys.stdout.flush()
        else:
            target, replace = output_target(path)
            if replace:
                _replace_atomically(target, write)
            else:
                with open(target, "w", encoding="utf-8") as stream:
                    write(stream)
    except BrokenPipeError:
        quiet_stdout()
    except OSError as exc:
        where = "standard output" if path in (None, "-") else path
        raise OutputError(f"cannot write the report to {where}: {exc.strerror or exc}") from None


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that nothing more (nor the interpreter's final flush)
    fails on a pipe whose reader has gone."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


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
