"""Where `fit` reads a model from: a local config.json, a *.safetensors file or index, or a
folder holding them. Never the network: a Hub id is an error that says to pass a local copy."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from gpucheck.fit.config import from_config
from gpucheck.fit.safetensors import from_safetensors
from gpucheck.fit.shape import ModelError, ModelShape

# A Hub id: "org/name" or "name" that is not a file here. Nothing is downloaded.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def local_model(model: str) -> ModelShape:
    path = Path(model)
    if not path.exists():
        if _HUB_ID.match(model) and not model.endswith((".json", ".safetensors")):
            raise ModelError(
                f"{model!r} is not a local file: gpucheck fit does not download models; pass "
                "the model's config.json (or its safetensors index) from a local copy, or "
                "--params N"
            )
        raise ModelError(f"{model}: no such file")
    if path.is_dir():
        return from_folder(path)
    if path.name.endswith(".safetensors") or path.name.endswith(".safetensors.index.json"):
        return with_config(from_safetensors(path), path.parent)
    return from_config(path)


def from_folder(folder: Path) -> ModelShape:
    for name in ("model.safetensors.index.json", "model.safetensors"):
        if (folder / name).is_file():
            return with_config(from_safetensors(folder / name), folder)
    if (folder / "config.json").is_file():
        return from_config(folder / "config.json")
    raise ModelError(f"{folder}: no config.json or model.safetensors in it")


def with_config(counted: ModelShape, folder: Path) -> ModelShape:
    """Exact counts from safetensors, architecture from the config.json beside them."""
    config = folder / "config.json"
    if not config.is_file():
        return counted
    try:
        arch = from_config(config)
    except ModelError:
        return counted
    return replace(
        arch,
        source=counted.source,
        # A quantised checkpoint packs several weights in one stored element (GPTQ's I32
        # qweight): its count is the config's, its bytes the files'.
        params=arch.params if arch.quantization or not counted.params else counted.params,
        param_bytes=counted.param_bytes,
        param_dtypes=counted.param_dtypes,
        notes=counted.notes,
    )
