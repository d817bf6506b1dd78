"""The nvidia kernel module on disk: the one the next boot (or `modprobe nvidia`) loads, and
the versions DKMS holds. A running module can differ from it (a driver update without a
reboot); a module on disk that differs from the user-space driver survives a reboot.

Read from files under `root` (no modinfo needed, so fabricated trees test it); compressed
modules are decompressed in a stream, and a format Python cannot read (zstd before 3.14)
falls back to `modinfo -F version FILE`, bounded in time.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from io import BufferedIOBase
from pathlib import Path

# depmod's default search order: updates/ (DKMS, vendor packages) before the kernel's own.
SEARCH_ORDER = ("updates", "extra", "kernel")
# The core module under every name a distribution gives it: nvidia.ko, and Debian's packages'
# nvidia-current.ko, nvidia-tesla-535.ko, nvidia-legacy-390xx.ko (modprobe.d aliases them to
# `nvidia`), compressed or not; never the -uvm, -drm, -modeset or -peermem companions.
NAMES = re.compile(
    r"nvidia(?:-current|-tesla(?:-[0-9]+)?|-legacy-[0-9a-z]+)?\.ko(?:\.(?:xz|gz|zst|bz2))?"
)
_VERSION = re.compile(rb"\x00version=([0-9]+\.[0-9]+(?:\.[0-9]+)?)\x00")
CHUNK = 1 << 20
MODINFO_TIMEOUT_S = 5.0


def module_file(root: Path, kernel: str) -> Path | None:
    """The nvidia module the loader would pick for `kernel`, by depmod's search order."""
    base = root / "lib/modules" / kernel
    found: list[tuple[int, str, Path]] = []
    for dirpath, _dirs, files in os.walk(base):
        for name in files:
            if NAMES.fullmatch(name):
                rel = Path(dirpath).relative_to(base).parts
                rank = SEARCH_ORDER.index(rel[0]) if rel and rel[0] in SEARCH_ORDER else 3
                found.append((rank, str(Path(dirpath, name)), Path(dirpath, name)))
    return min(found)[2] if found else None


def _opened(path: Path) -> BufferedIOBase | None:
    name = path.name
    if name.endswith(".xz"):
        return lzma.open(path, "rb")
    if name.endswith(".gz"):
        return gzip.open(path, "rb")
    if name.endswith(".bz2"):
        return bz2.open(path, "rb")
    if name.endswith(".zst"):
        try:
            from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+
        except ImportError:
            return None
        return zstd.open(path, "rb")  # type: ignore[no-any-return]
    return path.open("rb")


def _chunks(fh: BufferedIOBase) -> Iterator[bytes]:
    while chunk := fh.read(CHUNK):
        yield chunk


def module_version(path: Path) -> tuple[str | None, str | None]:
    """(version from the module's .modinfo `version=` string, why unknown)."""
    try:
        fh = _opened(path)
        if fh is None:
            return _modinfo(path)
        with fh:
            tail = b""
            for chunk in _chunks(fh):
                match = _VERSION.search(tail + chunk)
                if match:
                    return match.group(1).decode(), None
                tail = chunk[-64:]
    except (OSError, EOFError, lzma.LZMAError) as exc:
        return None, f"{path}: {exc}"
    return None, f"{path}: no version string in its modinfo"


def _modinfo(path: Path) -> tuple[str | None, str | None]:
    tool = shutil.which("modinfo") or shutil.which("modinfo", path="/sbin:/usr/sbin")
    if tool is None:
        return None, f"{path}: compressed in a format Python cannot read, and no modinfo"
    try:
        out = subprocess.run(
            [tool, "-F", "version", str(path)],
            capture_output=True,
            text=True,
            timeout=MODINFO_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"modinfo {path}: {exc}"
    version = out.stdout.strip()
    return (version, None) if out.returncode == 0 and version else (None, f"modinfo {path} failed")


def dkms_versions(root: Path) -> list[str] | None:
    """nvidia versions DKMS holds (/var/lib/dkms/nvidia/VERSION); None: no DKMS tree."""
    try:
        names = os.listdir(root / "var/lib/dkms/nvidia")
    except OSError:
        return None
    return sorted(n for n in names if re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9]+)?", n))
