"""Minimal 64-bit little-endian ELF files with chosen sections, for readers that walk section
headers (probes/library_version.py): the layout the ELF specification gives, nothing to run."""

from __future__ import annotations

import struct

SHT_PROGBITS, SHT_STRTAB = 1, 3


def elf_with_sections(sections: dict[bytes, bytes]) -> bytes:
    """An ELF64 LE file: header, each section's bytes, .shstrtab, then the section headers."""
    names = b"\0" + b"".join(name + b"\0" for name in [*sections, b".shstrtab"])
    body, headers, offset = b"", [bytes(64)], 64  # section 0 is the null section
    name_at = 1
    for name, data in [*sections.items(), (b".shstrtab", names)]:
        kind = SHT_STRTAB if name == b".shstrtab" else SHT_PROGBITS
        headers.append(
            struct.pack("<IIQQQQIIQQ", name_at, kind, 0, 0, offset, len(data), 0, 0, 1, 0)
        )
        body += data
        offset += len(data)
        name_at += len(name) + 1
    shnum = len(headers)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, offset, 0, 64, 0, 0, 64, shnum, shnum - 1
    )
    return header + body + b"".join(headers)
