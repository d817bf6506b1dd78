"""Small files read as every probe reads them: bounded (a /proc or /sys file, a config), never
raising (missing or unreadable: None), text decoded leniently (firmware and kernel strings are
not always UTF-8)."""

from __future__ import annotations

from pathlib import Path

LIMIT = 1 << 16


def read_bytes(path: Path, limit: int = LIMIT) -> bytes | None:
    try:
        with path.open("rb") as fh:
            return fh.read(limit)
    except OSError:
        return None


def read_text(path: Path, limit: int = LIMIT) -> str | None:
    data = read_bytes(path, limit)
    return None if data is None else data.decode("utf-8", "replace")
