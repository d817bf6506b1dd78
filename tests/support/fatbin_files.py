"""Small ELF64 libraries with a `.nv_fatbin` section, laid out as nvcc lays out a fat binary, for
the reader (gpucheck/probes/fatbin.py) and the installed-library probe: a container header
(<IHHQ: magic 0xBA55ED50, version 1, header size 16, body size) and entries (<HHIQ: kind 1 PTX
or 2 ELF/SASS, version 0x0101, header size 64, payload size; the SM number, a u32 at +28; the
flags, a u64 at +40, 0x100000 for an arch-specific "a" build), each followed by its payload.
Also the real bitsandbytes wheel, fetched once into the test cache."""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from support import reallibs

FATBIN_MAGIC = 0xBA55ED50
PTX, SASS = 1, 2
ARCH_SPECIFIC = 0x100000
ENTRY_HEADER = 64


def _sm(arch: str) -> int:
    """ "9.0a" -> 90, "10.0" -> 100."""
    major, _, minor = arch.rstrip("a").partition(".")
    return int(major) * 10 + int(minor)


def entry(kind: int, arch: str, payload: bytes = b"\xc0" * 24) -> bytes:
    """One entry: its 64-byte header, then the payload (a cubin or PTX text in a real file)."""
    flags = ARCH_SPECIFIC if arch.endswith("a") else 0
    head = bytearray(ENTRY_HEADER)
    struct.pack_into("<HHIQ", head, 0, kind, 0x0101, ENTRY_HEADER, len(payload))
    struct.pack_into("<I", head, 28, _sm(arch))
    struct.pack_into("<Q", head, 40, flags | 0x11)  # 0x11: the 64-bit host flags nvcc sets
    return bytes(head) + payload


def container(sass: Iterable[str] = (), ptx: Iterable[str] = ()) -> bytes:
    """One fat binary container: SASS entries, then PTX entries."""
    body = b"".join([*(entry(SASS, a) for a in sass), *(entry(PTX, a) for a in ptx)])
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body


def elf(sections: Sequence[tuple[str, bytes]]) -> bytes:
    """A 64-bit little-endian ELF shared object holding `sections` (name, contents), with a
    section name table; section headers last, as linkers write them."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _ in sections) + b".shstrtab\0"
    blobs = [*(data for _, data in sections), names]
    offsets, at = [], 64
    for blob in blobs:
        at += -at % 8
        offsets.append(at)
        at += len(blob)
    shoff = at + (-at % 8)
    count = len(blobs) + 1  # the null section first
    header = bytearray(64)
    header[:16] = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    struct.pack_into(
        "<HHIQQQIHHHHHH", header, 16, 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, count, count - 1
    )
    out = bytearray(header)
    for offset, blob in zip(offsets, blobs, strict=True):
        out += b"\0" * (offset - len(out)) + blob
    out += b"\0" * (shoff - len(out))
    out += b"\0" * 64
    name_at = 1
    for (name, data), offset in zip(sections, offsets, strict=False):
        out += struct.pack("<IIQQQQIIQQ", name_at, 1, 2, 0, offset, len(data), 0, 0, 8, 0)
        name_at += len(name) + 1
    out += struct.pack("<IIQQQQIIQQ", name_at, 3, 0, 0, offsets[-1], len(names), 0, 0, 1, 0)
    return bytes(out)


def library(sass: Iterable[str] = (), ptx: Iterable[str] = (), containers: int = 1) -> bytes:
    """A library whose .nv_fatbin carries `sass` and `ptx` (split over `containers`, 8-byte
    padding between them, as the linker aligns them)."""
    sass, ptx = list(sass), list(ptx)
    parts = [container(sass, ptx)] if containers == 1 else [container(sass), container((), ptx)]
    body = b""
    for part in parts:
        body += part + b"\0" * (-len(part) % 8) + b"\0" * 8
    return elf([(".text", b"\x90" * 32), (".nv_fatbin", body)])


def cpu_library() -> bytes:
    """A library with no fat binary at all (a CPU-only build)."""
    return elf([(".text", b"\x90" * 32)])


# --- the real bitsandbytes wheel -------------------------------------------------------------

BNB_VERSION = "0.45.5"
# bitsandbytes 0.45.5's own build script: the `-DCOMPUTE_CAPABILITY` each CUDA build of the
# wheel gets (https://github.com/bitsandbytes-foundation/bitsandbytes/blob/
# d72cb9cb6046ae17a2cec9bd628b860aa4891110/.github/scripts/build-cuda.sh, tag 0.45.5: "By default,
# target Maxwell through Hopper" 50;52;60;61;70;75;80;86;89;90; CUDA 11.7 "Remove sm89 and sm90";
# CUDA 12.8 "Add sm100 and sm120; remove sm50 through sm61" 70;75;80;86;89;90;100;120).
BNB_BUILD_CAPABILITIES = {
    "117": ("5.0", "5.2", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6"),
    "124": ("5.0", "5.2", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0"),
    "128": ("7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"),
}


def bitsandbytes_site(cache: Path | None = None) -> Path:
    """A site folder holding the real bitsandbytes 0.45.5 wheel, unpacked whole as pip installs
    it (its .dist-info with RECORD); downloaded once into the test cache (reallibs' lock and
    marker). Raises reallibs.FetchError when it cannot be fetched."""
    base = (cache or reallibs.cache_root()) / f"bitsandbytes-{BNB_VERSION}"
    site = base / "site"
    with reallibs._locked(base):
        marker = reallibs._read_marker(base)
        if marker is not None and marker.get("version") == BNB_VERSION and site.is_dir():
            return site
        reallibs._wipe(base, keep={".lock"})
        wheels = base / "wheels"
        wheels.mkdir()
        wheel = reallibs._download_wheel("bitsandbytes", BNB_VERSION, wheels)
        try:
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(site)
        except (zipfile.BadZipFile, OSError) as exc:
            raise reallibs.FetchError(f"{wheel.name}: cannot unpack: {exc}") from exc
        for unpacked in wheels.iterdir():
            unpacked.unlink()
        wheels.rmdir()
        reallibs._write_marker(base, {"version": BNB_VERSION, "wheel": wheel.name})
        return site
