"""Where the reports are: files, folders (every *.json, *.jsonl and support bundle *.tar.gz
under them) and streams (stdin). Each report is an Item: its name and either the path a worker
reads or, for a report on a line of a stream or a *.jsonl file, its bytes.

A stream is read in one of two formats, decided once by its first line that is not blank:
JSON lines (`jq -c . *.json`), where every line is a report of its own and a bad line is one
bad report; or indented documents one after another (`gpucheck doctor --json | gpucheck
fleet -`), which begin with a line `{` and end with a line `}` of their own.

The output file (-o) must not be one of the inputs: `avoid` is its (device, inode), and a
match raises OutputIsInput before anything is written.
"""

from __future__ import annotations

import io
import itertools
import os
import sys
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from gpucheck.model.snapshot import SNAPSHOT_LIMIT

Item = tuple[str, "str | bytes"]  # (name, path to read) or (name, the report's bytes)
FileId = tuple[int, int]  # (st_dev, st_ino)


class OutputIsInput(Exception):
    """The output file is one of the inputs (the same file, by device and inode)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def file_id(path: str) -> FileId | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _stream_id(stream: BinaryIO) -> FileId | None:
    try:
        st = os.fstat(stream.fileno())
    except (OSError, io.UnsupportedOperation):  # closed, or not a file (a test's BytesIO)
        return None
    return st.st_dev, st.st_ino


def _check(path: str, avoid: FileId | None) -> None:
    if avoid is not None and file_id(path) == avoid:
        raise OutputIsInput(path)


def _walk(folder: str, avoid: FileId | None) -> Iterator[Item]:
    """A folder's reports as the folder lists them (never the whole listing held: a folder of
    a million reports costs no memory; the order is no part of the output, which is sorted),
    then its sub-folders'. Links to folders are not followed (a loop would never end)."""
    subfolders = []
    try:
        listing = os.scandir(folder)
    except OSError:
        return  # an unreadable sub-folder is skipped, as os.walk does
    with listing:
        for entry in listing:
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if not entry.is_symlink():
                    subfolders.append(entry.path)
            elif entry.name.endswith((".json", ".jsonl", ".tar.gz")):
                # The inode is in the listing already: stat (for the device) only on a match.
                if avoid is not None and (entry.is_symlink() or entry.inode() == avoid[1]):
                    _check(entry.path, avoid)
                yield from _file(entry.path, entry.is_file())
    for sub in sorted(subfolders):
        yield from _walk(sub, avoid)


def _documents(
    first: tuple[int, bytes], lines: Iterator[tuple[int, bytes]], name: str
) -> Iterator[Item]:
    """Indented documents: from a line `{` to a line `}`; a `{` line inside one starts the next
    (the one before was cut short, and is one bad report); other lines are reports of their
    own (a JSON line among them)."""
    document: list[bytes] = []
    start = 0
    for number, line in itertools.chain([first], lines):
        edge = line.rstrip()
        if edge == b"{":
            if document:
                yield f"{name}:{start}", b"".join(document)
            document, start = [line], number
        elif document:
            document.append(line)
            if edge == b"}":
                yield f"{name}:{start}", b"".join(document)
                document = []
        elif line.strip():
            yield f"{name}:{number}", line
    if document:  # cut short: the worker says it is truncated
        yield f"{name}:{start}", b"".join(document)


def _lines(stream: BinaryIO, name: str) -> Iterator[Item]:
    lines = enumerate(stream, 1)
    first = next(((n, line) for n, line in lines if line.strip()), None)
    if first is None:
        return  # empty
    if first[1].rstrip() == b"{":
        yield from _documents(first, lines, name)
        return
    for number, line in itertools.chain([first], lines):
        if line.strip():  # without its line end: a cut-off report reads as truncated
            yield f"{name}:{number}", line.rstrip(b"\r\n")


def _file(path: str, regular: bool) -> Iterator[Item]:
    if path.endswith(".jsonl"):
        yield from _json_lines_file(path)
    elif regular:
        yield path, path  # read in a worker, in one read (reading._read_file)
    else:  # a pipe (`fleet <(...)`), a device: read here, to its end, as a stream must be
        try:
            with open(path, "rb") as stream:
                yield path, stream.read(SNAPSHOT_LIMIT + 1)
        except OSError:
            yield path, path  # the worker's read fails the same way and names why


def _json_lines_file(path: str) -> Iterator[Item]:
    try:
        stream = open(path, "rb")  # noqa: SIM115  (closed below, after the lines are yielded)
    except OSError:
        yield path, path  # the worker's read fails the same way and names why
        return
    with stream:
        yield from _lines(stream, path)


def items(
    inputs: Iterable[str], stdin: BinaryIO | None = None, avoid: FileId | None = None
) -> Iterator[Item]:
    for arg in inputs:
        if arg == "-":
            stream = stdin if stdin is not None else sys.stdin.buffer
            if avoid is not None and _stream_id(stream) == avoid:
                raise OutputIsInput("- (stdin)")
            yield from _lines(stream, "<stdin>")
        elif os.path.isdir(arg):
            yield from _walk(arg, avoid)
        else:
            _check(arg, avoid)
            yield from _file(arg, not os.path.exists(arg) or os.path.isfile(arg))
