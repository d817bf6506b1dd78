"""The kernel log's NVIDIA driver lines (NVRM: Xid, RmInitAdapter, GSP errors) since boot,
read from /dev/kmsg without blocking and without root where the kernel allows it
(kernel.dmesg_restrict=0); unknown otherwise, with the reason."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

MAX_LINES = 200  # the newest NVRM lines kept
MAX_SECONDS = 1.0
CHUNK = 8192  # /dev/kmsg returns one record per read, at most this long


def _text(record: bytes) -> str:
    """'6,1234,5678,-;NVRM: Xid ...' -> 'NVRM: Xid ...' (the prefix is level, seq, time)."""
    line = record.decode("utf-8", "replace").split("\n", 1)[0]
    return line.split(";", 1)[1] if ";" in line else line


def read_nvrm(root: Path) -> tuple[list[str] | None, str | None]:
    """(NVRM lines, None) or (None, why unknown)."""
    path = root / "dev/kmsg"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except PermissionError:
        return None, "the kernel log is not readable by this user (kernel.dmesg_restrict)"
    except OSError as exc:
        return None, f"/dev/kmsg: {exc.strerror}"
    lines: list[str] = []
    deadline = time.monotonic() + MAX_SECONDS
    try:
        while time.monotonic() < deadline:
            try:
                record = os.read(fd, CHUNK)
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten while reading: skip ahead
                    continue
                if exc.errno == errno.EAGAIN:  # the end of what is logged
                    break
                if exc.errno in (errno.EPERM, errno.EACCES):
                    return None, "the kernel log is not readable by this user"
                return None, f"/dev/kmsg: {exc.strerror}"
            if not record:
                break
            if b"NVRM" in record:
                # A regular file (a fabricated tree) holds many lines per read.
                for raw in record.splitlines():
                    if b"NVRM" in raw:
                        lines.append(_text(raw))
        return lines[-MAX_LINES:], None
    finally:
        os.close(fd)
