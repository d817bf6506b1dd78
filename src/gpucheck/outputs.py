"""Where commands write: stdout, or `-o FILE` replaced only by a complete file. Shared by every
command (the CLI, the API); OutputError is exit 4, UserError (inputs.py) exit 2."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
from collections.abc import Callable, Iterable
from typing import IO

from gpucheck.inputs import UserError, inputs_read

# What a file written with -o does with a character UTF-8 cannot hold (a lone surrogate: the
# undecodable bytes of a path given on the command line): escaped, never an error mid-report.
UNENCODABLE = "backslashreplace"


class OutputError(Exception):
    """The report could not be written (a full disk, a closed device): one line, exit 4."""


class StdoutError(OSError):
    """Standard output cannot be written: closed when gpucheck started (`>&-`), a full disk,
    a descriptor opened for reading. What would go there cannot (exit 4), one line says why.
    (A pipe whose reader left stays BrokenPipeError: not an error, the exit code stands.)"""


class _StandardStream(io.TextIOWrapper):
    """sys.stdout or sys.stderr as the program uses them (usable_standard_streams)."""

    refused: str | None = None  # stdout closed by the shell: every write fails, saying this
    quiet = False  # stderr: a message that cannot be shown is dropped, never an error

    def write(self, text: str) -> int:
        if self.refused is not None:
            raise StdoutError(errno.EBADF, self.refused)
        try:
            return super().write(text)
        except OSError as exc:
            return self._failed(exc, len(text))

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            self._failed(exc, 0)

    def _failed(self, exc: OSError, written: int) -> int:
        if self.quiet:
            return written
        if isinstance(exc, BrokenPipeError):
            raise exc
        raise StdoutError(exc.errno, exc.strerror) from None


def usable_standard_streams() -> None:
    """The program's standard streams made safe to use, whatever it was started with.

    A stream closed by the shell (`<&-`, `>&-`, `2>&-`) is None in Python, and writing to it
    raised AttributeError: its descriptor now holds /dev/null, so that no file opened later
    takes its number (stdin reads as empty, stderr's messages go nowhere, as the user asked,
    stdout refuses every write). Writing to stdout fails only as StdoutError (exit 4: a full
    disk, a read-only descriptor, closed); to stderr never (the exit code is the answer). An
    encoding that cannot say every character (PYTHONIOENCODING=ascii, a Latin-1 locale)
    escapes what it cannot encode (`\\u00b7`) rather than raising in the middle of a report.
    """
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        stream = getattr(sys, name)
        closed = stream is None
        if closed:
            with contextlib.suppress(OSError):
                os.fstat(fd)
                continue  # (open but unusable to Python: left as it is)
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if fd == 0:
            if closed:
                sys.stdin = open(fd, encoding="utf-8", closefd=False)  # noqa: SIM115
            continue
        if not closed and not isinstance(stream, io.TextIOWrapper):
            continue  # (replaced by an embedding program: its own)
        encoding = "utf-8" if closed else stream.encoding
        errors = "backslashreplace" if closed else stream.errors
        if encoding.lower().replace("-", "").replace("_", "") not in ("utf8", "utf8sig"):
            errors = "backslashreplace"
        replacement = _StandardStream(
            open(fd, "wb", closefd=False),  # noqa: SIM115  (the descriptor stays open)
            encoding=encoding,
            errors=errors,
            line_buffering=fd == 2 or (not closed and stream.line_buffering),
        )
        if fd == 1 and closed:
            replacement.refused = "it was closed (>&-)"
        replacement.quiet = fd == 2
        _REPLACED.append(stream)  # (the old one, collected, would close the descriptor)
        setattr(sys, name, replacement)


_REPLACED: list[object] = []


def output_target(path: str, option: str = "--output") -> tuple[str, bool]:
    """Where `-o PATH` writes, and whether by replacing a regular file (`option`: the option
    that named it, which its errors name).

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
            raise UserError(f"{option}: folder {os.path.dirname(real)} does not exist") from None
        return real, True
    except OSError as exc:
        raise UserError(f"{option}: {path}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{option}: {path} is a folder")
    # /dev/stdout, /dev/fd/N and /proc/self/fd/N name an open descriptor, whatever it is.
    special = os.path.abspath(path).startswith(("/dev/", "/proc/"))
    if stat.S_ISREG(st.st_mode) and not special:
        # Renaming into place needs only the folder's permission: a file this user may not
        # write (another user's, or read-only) is refused, as the shell's `>` refuses it.
        if not _may_write(path):
            raise UserError(f"{option}: {path}: Permission denied (it is not replaced)")
        return os.path.realpath(path), True
    return path, False


def _may_write(path: str) -> bool:
    if os.access in os.supports_effective_ids:  # (as the kernel judges an open: effective ids)
        return os.access(path, os.W_OK, effective_ids=True)
    return os.access(path, os.W_OK)


class FolderError(OSError):
    """The folder refuses even the temporary file a replacement is written to (its
    `filename` is the folder)."""


def replace_atomically(
    target: str, write: Callable[[IO[str]], object], errors: str = UNENCODABLE
) -> None:
    """Replace (or create) the file `target` with what `write` writes, whole or not at all: a
    temporary file beside it, renamed over it, removed if anything fails. An existing file
    keeps its mode and, where this user may give it, its owner; a new one gets the mode the
    umask leaves. `errors`: what a character UTF-8 cannot hold becomes. OSError where it
    cannot (FolderError: not even the temporary file)."""
    import tempfile  # only those who replace a file pay for it

    folder = os.path.dirname(target) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", dir=folder)
    except OSError as exc:
        raise FolderError(exc.errno, exc.strerror, folder) from None
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
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors) as stream:
            write(stream)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def input_as_output(output: str, name: str, option: str = "--output") -> str:
    """The one refusal of an output that is one of the command's inputs (every command)."""
    return f"{option}: {output} is one of the inputs ({name}): it would be overwritten"


def refuse_input_as_output(
    output: str | None, inputs: Iterable[str | None] = (), option: str = "--output"
) -> None:
    """UserError if `-o output` names a file this command reads: one of `inputs` (named by the
    caller before reading them) or any file noted as read (inputs.note_input). The same file
    is caught by its resolved path (a symbolic link, `./x`) and by its (device, inode) (a
    hard link), as it was when read: a file swapped since then is still refused."""
    if output is None or output == "-":
        return
    try:
        st = os.stat(output)
    except (OSError, ValueError):
        return  # a new file is nobody's input
    if not stat.S_ISREG(st.st_mode):
        return  # a terminal or a pipe (/dev/stdout) is written, never replaced
    real = os.path.realpath(output)
    noted = inputs_read()
    for name in inputs:
        if name is not None and name != "-":
            with contextlib.suppress(OSError, ValueError):
                sub = os.stat(name)
                noted.setdefault(name, (sub.st_dev, sub.st_ino))
    for name, identity in noted.items():
        if identity == (st.st_dev, st.st_ino) or os.path.realpath(name) == real:
            raise UserError(input_as_output(output, name, option))


def write_output(
    path: str | None,
    write: Callable[[IO[str]], object],
    inputs: Iterable[str | None] = (),
    option: str = "--output",
) -> None:
    """Write to stdout, or to `path` (see output_target), which is never one of the command's
    inputs (refuse_input_as_output: `inputs`, and every file noted as read). A reader that
    goes away early (`gpucheck doctor | head`) is not an error: the exit code still tells
    the result."""
    try:
        if path is None or path == "-":
            write(sys.stdout)
            sys.stdout.flush()
        else:
            refuse_input_as_output(path, inputs, option)
            target, replace = output_target(path, option)
            if replace:
                try:
                    replace_atomically(target, write)
                except FolderError as exc:
                    raise UserError(
                        f"{option}: cannot write in {exc.filename}: {exc.strerror}"
                    ) from None
            else:
                with open(target, "w", encoding="utf-8", errors=UNENCODABLE) as stream:
                    write(stream)
    except BrokenPipeError:
        quiet_stdout()
    except StdoutError as exc:
        raise OutputError(f"cannot write the report to standard output: {exc.strerror}") from None
    except OSError as exc:
        where = "standard output" if path in (None, "-") else path
        raise OutputError(f"cannot write the report to {where}: {exc.strerror or exc}") from None


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that nothing more (nor the interpreter's final flush)
    fails on a pipe whose reader has gone."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
