"""Small ELF64 shared-object images with a `.nv_fatbin` section, laid out as NVIDIA's fat
binary containers are (a 16-byte container header, magic 0xBA55ED50, then 48-byte entry headers
naming the kind, PTX 1 or ELF 2, the SM number and the flags), so the fat-binary reader and the
tools built on it can be tested without a CUDA toolkit. Payloads are zero bytes: only headers
are ever read."""

from __future__ import annotations

import struct

PTX, SASS = 1, 2
ARCH_SPECIFIC = 0x100000  # the entry flag of an sm_90a-style build


def fatbin_entry(kind: int, sm: int, flags: int = 0, payload: int = 8) -> bytes:
    head = struct.pack("<HHIQ", kind, 0x101, 48, payload)  # kind, version, header size, payload
    head += b"\0" * 12 + struct.pack("<I", sm) + b"\0" * 8 + struct.pack("<Q", flags)
    return head + b"\0" * payload


def fatbin(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def elf_with_fatbin(section: bytes | None) -> bytes:
    """An ELF64 little-endian image with sections: null, .shstrtab and (given one) .nv_fatbin."""
    names = b"\0.shstrtab\0.nv_fatbin\0"
    data_at = 64
    fat_at = data_at + len(names)
    fat = section or b""
    table_at = (fat_at + len(fat) + 7) // 8 * 8
    count = 3 if section is not None else 2
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, table_at, 0, 64, 0, 0, 64, count, 1
    )
    sections = b"\0" * 64
    sections += struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, data_at, len(names), 0, 0, 1, 0)
    if section is not None:
        sections += struct.pack("<IIQQQQIIQQ", 11, 1, 2, 0, fat_at, len(fat), 0, 0, 8, 0)
    padding = b"\0" * (table_at - fat_at - len(fat))
    return header + names + fat + padding + sections
