"""The fat-binary reader's entry counts (probes/fatbin.py `read_entry_counts`): how many entries
(one per compiled source file and architecture) carry SASS and PTX for each arch, which is what
tells a library's own archs from the few files nvcc built for its default sm_52. The library
here is laid out as nvcc lays one out: an ELF64 `.nv_fatbin` section of containers (<IHHQ magic
0xBA55ED50, version, header size 16, body size) holding entries (<HHIQ kind 1 PTX / 2 SASS,
version, header size 64, payload size; SM number at +28; flags at +40, 0x100000 for "a")."""

from __future__ import annotations

import struct
from pathlib import Path

from gpucheck.model.compiled_code import CompiledCode
from gpucheck.probes.fatbin import read_compiled_code, read_entry_counts


def _entry(kind: int, sm: int, arch_specific: bool = False) -> bytes:
    head = bytearray(64)
    struct.pack_into("<HHIQ", head, 0, kind, 0x0101, 64, 8)
    struct.pack_into("<I", head, 28, sm)
    struct.pack_into("<Q", head, 40, 0x100000 if arch_specific else 0)
    return bytes(head) + b"\0" * 8


def _library(path: Path, entries: list[bytes]) -> Path:
    body = b"".join(entries)
    fatbin = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body
    names = b"\0.nv_fatbin\0.shstrtab\0"
    fat_at = 64
    names_at = fat_at + len(fatbin)
    shoff = names_at + len(names) + (-(names_at + len(names)) % 8)
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHH", header, 0x3A, 64, 3, 2)
    sections = bytes(64)  # the null section
    sections += struct.pack("<IIQQQQ", 1, 1, 0, 0, fat_at, len(fatbin)).ljust(64, b"\0")
    sections += struct.pack("<IIQQQQ", 12, 3, 0, 0, names_at, len(names)).ljust(64, b"\0")
    data = bytes(header) + fatbin + names
    path.write_bytes(data + b"\0" * (shoff - len(data)) + sections)
    return path


SASS, PTX = 2, 1


def test_entries_are_counted_per_arch(tmp_path: Path) -> None:
    entries = [_entry(SASS, 52), _entry(PTX, 52)]
    entries += [_entry(SASS, 80) for _ in range(3)] + [_entry(SASS, 90, arch_specific=True)]
    entries += [_entry(SASS, 120) for _ in range(2)] + [_entry(PTX, 90)]
    lib = _library(tmp_path / "_C.abi3.so", entries)
    assert read_entry_counts(str(lib)) == (
        {"5.2": 1, "8.0": 3, "9.0a": 1, "12.0": 2},
        {"5.2": 1, "9.0": 1},
    )
    assert read_compiled_code(str(lib)) == CompiledCode(
        sass=("5.2", "8.0", "9.0a", "12.0"), ptx=("5.2", "9.0")
    )


def test_an_empty_fat_binary_counts_nothing_and_not_an_elf_is_unknown(tmp_path: Path) -> None:
    assert read_entry_counts(str(_library(tmp_path / "cpu.so", []))) == ({}, {})
    text = tmp_path / "notes.so"
    text.write_bytes(b"not a library")
    assert read_entry_counts(str(text)) is None
