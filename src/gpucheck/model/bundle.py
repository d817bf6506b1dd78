"""A support bundle (`gpucheck snapshot --bundle FILE.tar.gz`) read back: one member's bytes, for
`doctor --from BUNDLE` (the snapshot) and `fleet BUNDLE...` (the report).

A bundle comes from another machine: it is read in memory, never extracted. Only the known
member names are taken (no path is ever built from a name in the archive); a member that is not
a regular file, or is larger than its bound, is refused; and the decompressed stream is cut at
a bound, so a small file that inflates to gigabytes costs nothing."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # gzip and tarfile load only to read a bundle (4 ms of every doctor --from)
    import gzip

GZIP_MAGIC = b"\x1f\x8b"
SNAPSHOT_MEMBER = "snapshot.json"
REPORT_MEMBER = "report.json"
MANIFEST_MEMBER = "manifest.json"
# Every member a bundle holds, as `snapshot --bundle` writes them.
MEMBERS = (
    MANIFEST_MEMBER,
    SNAPSHOT_MEMBER,
    REPORT_MEMBER,
    "report.txt",
    "report.html",
    "fix-plan.txt",
    "fix-plan.json",
    "kernel-log.txt",
    "nvidia-smi-q.txt",
)
MEMBER_LIMIT = 64 << 20  # a snapshot's own bound (model/snapshot.py SNAPSHOT_LIMIT)
INFLATED_LIMIT = 256 << 20  # the whole archive, decompressed: far above any real bundle


class BundleError(ValueError):
    """Not a bundle that can be read: one line, for the user."""


def is_bundle(data: bytes) -> bool:
    return data[:2] == GZIP_MAGIC


class _Bounded(io.RawIOBase):
    """The decompressed stream, refusing to go past INFLATED_LIMIT."""

    def __init__(self, source: gzip.GzipFile) -> None:
        self.source, self.read_so_far = source, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        room = INFLATED_LIMIT - self.read_so_far
        if room <= 0:
            raise BundleError(f"over {INFLATED_LIMIT >> 20} MiB decompressed: not a bundle")
        chunk = self.source.read(min(len(buffer), room))
        buffer[: len(chunk)] = chunk
        self.read_so_far += len(chunk)
        return len(chunk)


def bundle_member(data: bytes, name: str) -> bytes:
    """The bytes of member `name` (one of MEMBERS) of the bundle `data`; BundleError where the
    archive cannot be read, lacks it, or holds it as anything but a bounded regular file."""
    import gzip
    import tarfile

    if name not in MEMBERS:
        raise BundleError(f"{name} is not a member a bundle holds")
    try:
        raw = _Bounded(gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb"))
        stream = io.BufferedReader(raw, 1 << 16)
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for member in archive:
                if member.name != name:
                    continue
                if not member.isreg():
                    raise BundleError(f"its {name} is not a regular file")
                if member.size > MEMBER_LIMIT:
                    raise BundleError(f"its {name} is over {MEMBER_LIMIT >> 20} MiB")
                content = archive.extractfile(member)
                assert content is not None  # (a regular file always has content)
                return content.read()
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise BundleError(f"not a readable bundle (a gzipped tar): {exc}") from None
    raise BundleError(f"a bundle without {name}")
