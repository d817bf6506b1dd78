"""Read which GPU architectures a compiled library (a .so of torch, vLLM, flash-attn, TensorFlow)
carries code for, from its fat binary's headers: the `.nv_fatbin` ELF section holds one or more
fat binary containers (magic 0xBA55ED50), each a list of entries whose headers name the kind
(PTX or ELF/SASS), the SM number and flags (arch-specific "a" builds; compressed payloads).

Only headers are read, seeking past every payload, so a 1 GB library takes milliseconds and no
code is loaded or run. A file that is not a 64-bit little-endian ELF, or whose headers do not
add up, gives None: unknown, never a guess."""

from __future__ import annotations

import struct
from collections import Counter
from typing import BinaryIO

from gpucheck.model.compiled_code import CompiledCode
from gpucheck.probes.elf import elf_section

_FATBIN_MAGIC = 0xBA55ED50
_KIND_PTX, _KIND_ELF = 1, 2
_ARCH_SPECIFIC = 0x100000  # entry flag: sm_90a, sm_100a (the cubin's e_flags say the same)
_MAX_ENTRIES = 2_000_000  # bounds a corrupt file's walk; libtorch_cuda.so has tens of thousands
_SECTION = b".nv_fatbin"
_MAGIC_BYTES = struct.pack("<I", _FATBIN_MAGIC)
_CHUNK = 1 << 20
# An arch stands for the library when it has at least a quarter of the entries (compiled files)
# of its largest portable (not arch-specific) arch; PTX, which must stand in for the whole
# library, at least half. What that leaves out: the one to three files nvcc built for its
# default arch (sm_52) beside 30 to 250 (vLLM 0.9.2's _C: one sm_52 and one compute_52 entry,
# so no Pascal GPU runs it).
_SASS_SHARE, _PTX_SHARE = 4, 2


def _arch(sm: int) -> str:
    return f"{sm // 10}.{sm % 10}"


def _entries(fh: BinaryIO, start: int, size: int) -> tuple[Counter[str], Counter[str]] | None:
    """How many entries (one per compiled source file and architecture) carry SASS, and PTX,
    for each architecture."""
    sass: Counter[str] = Counter()
    ptx: Counter[str] = Counter()
    pos, end, seen = start, start + size, 0
    while pos + 16 <= end:
        fh.seek(pos)
        head = fh.read(16)
        magic, _version, head_size, body_size = struct.unpack("<IHHQ", head)
        if magic != _FATBIN_MAGIC:
            pos = _next_container(fh, pos, end)
            continue
        entry, stop = pos + head_size, pos + head_size + body_size
        if stop > end:
            return None
        while entry + 48 <= stop:
            seen += 1
            if seen > _MAX_ENTRIES:
                return None
            fh.seek(entry)
            raw = fh.read(48)
            kind, _v, entry_head, payload = struct.unpack_from("<HHIQ", raw)
            sm = struct.unpack_from("<I", raw, 28)[0]
            flags = struct.unpack_from("<Q", raw, 40)[0]
            if entry_head < 48 or not 10 <= sm <= 1000:
                return None
            arch = _arch(sm) + ("a" if flags & _ARCH_SPECIFIC else "")
            if kind == _KIND_PTX:
                ptx[arch] += 1
            elif kind == _KIND_ELF:
                sass[arch] += 1
            entry += entry_head + payload
        pos = stop
    return sass, ptx


def _next_container(fh: BinaryIO, pos: int, end: int) -> int:
    """Where the next container's magic lies after `pos` (containers are 8-byte aligned, with
    padding between them), found a chunk at a time: a section of zeros costs one pass, not a
    seek per 8 bytes."""
    pos += 8
    while pos < end:
        fh.seek(pos)
        chunk = fh.read(min(_CHUNK, end - pos))
        if not chunk:
            return end
        at = chunk.find(_MAGIC_BYTES)
        while at >= 0 and at % 8:
            at = chunk.find(_MAGIC_BYTES, at + 1)
        if at >= 0:
            return pos + at
        pos += max(8, (len(chunk) - len(_MAGIC_BYTES) + 1) // 8 * 8)
    return end


def _sort_key(arch: str) -> tuple[int, int, str]:
    major, _, rest = arch.partition(".")
    minor = rest.rstrip("af")
    return int(major), int(minor), rest[len(minor) :]


def read_entry_counts(path: str) -> tuple[dict[str, int], dict[str, int]] | None:
    """({arch: SASS entries}, {arch: PTX entries}) of `path`'s fat binary, sorted by arch: an
    arch with a handful of entries beside one with hundreds covers a few source files only
    (those built with the compiler's default arch), not the library. Empty where it has no fat
    binary; None where it cannot be read or is not an ELF64 library."""
    try:
        with open(path, "rb") as fh:
            found = elf_section(fh, _SECTION)
            if found is None:
                return None
            offset, size = found
            counted = (Counter(), Counter()) if size == 0 else _entries(fh, offset, size)
    except (OSError, struct.error, ValueError):
        return None
    if counted is None:
        return None
    sass, ptx = counted
    return _sorted(sass), _sorted(ptx)


def _sorted(counts: dict[str, int]) -> dict[str, int]:
    return {arch: counts[arch] for arch in sorted(counts, key=_sort_key)}


def read_compiled_code(path: str) -> CompiledCode | None:
    """The architectures `path` carries code for, as a whole (`standing`); an empty
    CompiledCode where it has no fat binary (a CPU-only library); None where it cannot be read
    or is not an ELF64 library."""
    counts = read_entry_counts(path)
    return None if counts is None else standing(*counts)


def standing(sass: dict[str, int], ptx: dict[str, int]) -> CompiledCode:
    """The architectures that stand for a library, from its entry counts (see _SASS_SHARE)."""
    # Measured against the largest portable arch: a build heavy in sm_90a / sm_100a kernels
    # (CUTLASS work for one capability) must not push the portable archs out.
    portable = [n for counts in (sass, ptx) for a, n in counts.items() if not a.endswith("a")]
    top = max(portable or [*sass.values(), *ptx.values()], default=0)
    return CompiledCode(
        sass=tuple(a for a, n in sass.items() if n * _SASS_SHARE >= top),
        ptx=tuple(a for a, n in ptx.items() if n * _PTX_SHARE >= top),
    )
