"""The one ELF reading the probes share: where a named section lies in a 64-bit little-endian
ELF file (a shared library), from its section headers alone."""

from __future__ import annotations

import struct
from typing import BinaryIO

_ELF_MAGIC = b"\x7fELF"


def elf_section(fh: BinaryIO, name: bytes) -> tuple[int, int] | None:
    """(offset, size) of section `name` in a 64-bit little-endian ELF, (0, 0) where it has no
    such section; None where the file is not one or its headers do not add up."""
    ident = fh.read(64)
    if len(ident) < 64 or ident[:4] != _ELF_MAGIC or ident[4] != 2 or ident[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", ident, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 0x3A)
    if shoff == 0 or shnum == 0 or shentsize < 64 or shstrndx >= shnum:
        return None
    fh.seek(shoff)
    table = fh.read(shentsize * shnum)
    if len(table) < shentsize * shnum:
        return None
    headers = [struct.unpack_from("<IIQQQQ", table, i * shentsize) for i in range(shnum)]
    str_off, str_size = headers[shstrndx][4:6]
    fh.seek(str_off)
    names = fh.read(min(str_size, 1 << 20))
    for name_at, _type, _flags, _addr, offset, size in headers:
        end = names.find(b"\0", name_at)
        if names[name_at : end if end >= 0 else None] == name:
            return offset, size
    return 0, 0
