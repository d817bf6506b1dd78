"""The pre-parsed compat data (compat/parsed/*.json): in step with the TOML files it was made
from, and never trusted once they differ."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

from gpucheck.compat import Compat, data_dir
from gpucheck.compat.prebuilt import HASH_KEY, digest, parsed


def test_every_shipped_file_has_a_current_prebuilt_form() -> None:
    tomls = sorted(data_dir().glob("*.toml"))
    # images.toml: gpucheck dockerfile; messages.toml, xids.toml: explain; driver_branches.toml;
    # cupy.toml: gpucheck install; nvml_bindings.toml: frameworks.nvml-bindings
    assert len(tomls) == 14
    for toml in tomls:
        raw = toml.read_bytes()
        prebuilt = data_dir() / "parsed" / f"{toml.stem}.json"
        assert prebuilt.is_file(), f"{prebuilt} is missing: run python -m gpucheck.compat.prebuilt"
        data = json.loads(prebuilt.read_text(encoding="utf-8"))
        assert data.pop(HASH_KEY) == digest(raw), (
            f"{prebuilt} is stale: run python -m gpucheck.compat.prebuilt"
        )
        assert data == tomllib.loads(raw.decode("utf-8")), toml.name


def test_a_prebuilt_form_of_other_bytes_is_ignored(tmp_path: Path) -> None:
    folder = tmp_path / "compat"
    shutil.copytree(data_dir(), folder)
    cuda = folder / "cuda.toml"
    edited = cuda.read_text(encoding="utf-8").replace(
        'data_as_of = "2026-11-23"', 'data_as_of = "2031-01-01"', 1
    )
    assert edited != cuda.read_text(encoding="utf-8")
    cuda.write_text(edited, encoding="utf-8")
    assert parsed(cuda, cuda.read_bytes()) is None  # its JSON was made from the old bytes
    assert Compat.from_dir(folder).data_as_of == "2031-01-01"
