"""The shipped compat files, pre-parsed: compat/parsed/NAME.json holds what tomllib makes of
compat/NAME.toml, with the TOML's size and CRC-32. Reading JSON (msgspec) is far cheaper than
parsing TOML (tomllib, pure Python) at every start; the checksum makes it safe: a JSON whose
TOML changed since is ignored, and the TOML is parsed as before. A test fails while one is
stale. (CRC-32, not SHA-256: this catches edits, not attacks, and hashlib's OpenSSL would be
loaded on every start.)

Regenerate after editing compat/*.toml: python -m gpucheck.compat.prebuilt
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import msgspec

FOLDER = "parsed"
HASH_KEY = "_toml_crc32"


def digest(raw: bytes) -> str:
    return f"{len(raw)}:{zlib.crc32(raw):08x}"


def parsed(toml: Path, raw: bytes) -> dict[str, Any] | None:
    """The pre-parsed form of `toml` (whose bytes are `raw`), or None where there is none or
    it was made from other bytes."""
    path = toml.parent / FOLDER / f"{toml.stem}.json"
    try:
        data = msgspec.json.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError):
        return None
    if not isinstance(data, dict) or data.pop(HASH_KEY, None) != digest(raw):
        return None
    return data


def build(folder: Path) -> list[Path]:
    """Write the pre-parsed form of every TOML file in `folder`."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

    written = []
    (folder / FOLDER).mkdir(exist_ok=True)
    for toml in sorted(folder.glob("*.toml")):
        raw = toml.read_bytes()
        data = {HASH_KEY: digest(raw), **tomllib.loads(raw.decode("utf-8"))}
        target = folder / FOLDER / f"{toml.stem}.json"
        target.write_bytes(msgspec.json.encode(data) + b"\n")
        written.append(target)
    return written


if __name__ == "__main__":
    from gpucheck.compat.location import data_dir

    for path in build(data_dir()):
        print(f"wrote {path}")
