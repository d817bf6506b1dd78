"""The kernel log's NVIDIA driver lines (NVRM: Xid, RmInitAdapter, GSP errors) and its
module-loading lines (a signature key refused) since boot, read from /dev/kmsg without blocking
and without root where the kernel allows it (kernel.dmesg_restrict=0); unknown otherwise, with
the reason."""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

MAX_LINES = 200  # the newest NVRM lines kept
MAX_SECONDS = 1.0
CHUNK = 8192  # /dev/kmsg returns one record per read, at most this long


def _text(record: bytes) -> str:
    """'6,1234,5678,-;NVRM: Xid ...' -> 'NVRM: Xid ...' (the prefix is level, seq, time)."""
    line = record.decode("utf-8", "replace").split("\n", 1)[0]
    return line.split(";", 1)[1] if ";" in line else line


# The kernel's own lines when it refuses a module (kernel/module/signing.c's "Loading of module
# with unavailable key is rejected", modprobe's EKEYREJECTED, lockdown), and nvidia's other
# load errors; NVRM lines are read_nvrm's.
MODULE_LOAD = re.compile(
    rb"unavailable key|Key was rejected|module verification failed|PKCS#7 signature|"
    rb"Lockdown:.*(?:module|unsigned)|nvidia\S*: (?:Unknown symbol|disagrees about version)"
)


def read_nvrm(root: Path) -> tuple[list[str] | None, str | None]:
    """(NVRM lines, None) or (None, why unknown)."""
    return read_matching(root, lambda raw: b"NVRM" in raw)


def read_module_load(root: Path) -> tuple[list[str] | None, str | None]:
    """(the module-loading lines MODULE_LOAD matches, None) or (None, why unknown)."""
    return read_matching(root, lambda raw: MODULE_LOAD.search(raw) is not None)


def read_matching(root: Path, keep: Callable[[bytes], bool]) -> tuple[list[str] | None, str | None]:
    """(the newest MAX_LINES lines `keep` accepts, None) or (None, why unknown)."""
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
            # A regular file (a fabricated tree) holds many lines per read.
            lines += [_text(raw) for raw in record.splitlines() if keep(raw)]
        return lines[-MAX_LINES:], None
    finally:
        os.close(fd)
