"""Where the compat data lives: a leaf, so that the loader and the pre-parser both name it."""

from __future__ import annotations

from pathlib import Path


def data_dir() -> Path:
    """compat/ as shipped in the wheel, or at the top of a source checkout (editable installs)."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "compat_data"
    if packaged.is_dir():
        return packaged
    return package.parents[1] / "compat"
