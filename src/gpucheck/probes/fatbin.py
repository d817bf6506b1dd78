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
            pos += 8  # containers are 8-byte aligned; padding between them
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
            if kind == _KIND_PTX:
                ptx[_arch(sm)] += 1
            elif kind == _KIND_ELF:
                sass[_arch(sm) + ("a" if flags & _ARCH_SPECIFIC else "")] += 1
            entry += entry_head + payload
        pos = stop
    return sass, ptx


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
    """The architectures `path` carries code for; an empty CompiledCode where it has no fat
    binary (a CPU-only library); None where it cannot be read or is not an ELF64 library."""
    counts = read_entry_counts(path)
    if counts is None:
        return None
    sass, ptx = counts
    return CompiledCode(sass=tuple(sass), ptx=tuple(ptx))
