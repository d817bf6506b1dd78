"""Exact parameter counts and dtypes from safetensors headers, no weights read.

A safetensors file starts with an 8-byte little-endian length N and N bytes of JSON: one entry
per tensor with its dtype and shape (https://github.com/huggingface/safetensors, "Format").
A sharded checkpoint's `model.safetensors.index.json` maps tensors to shard files; each shard's
header is read the same way, and where the shards are not on disk the index's
`metadata.total_size` (bytes) is all there is.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

from gpucheck.fit.shape import ModelError, ModelShape, read_json
from gpucheck.fit.units import SAFETENSORS_BYTES
from gpucheck.inputs import note_input, unreadable

HEADER_LIMIT = 100 * 1024 * 1024  # bytes; the format itself caps the header at 100 MB


def read_header(path: Path) -> tuple[dict[str, Any], int]:
    """The header, and how many bytes of tensor data follow it in the file."""
    note_input(path)
    try:
        with path.open("rb") as fh:
            file_size = os.fstat(fh.fileno()).st_size
            prefix = fh.read(8)
            if len(prefix) < 8:
                raise ModelError(f"{path} is not a safetensors file (shorter than its header)")
            (size,) = struct.unpack("<Q", prefix)
            if size > HEADER_LIMIT:
                raise ModelError(f"{path} is not a safetensors file (header length {size})")
            raw = fh.read(size)
    except OSError as exc:
        raise ModelError(
            unreadable(path, exc, "is a folder (pass a .safetensors file or its index)")
        ) from None
    if len(raw) < size:
        raise ModelError(f"{path} is truncated (header says {size} bytes, file has fewer)")
    try:
        header = json.loads(raw)
    except ValueError:
        raise ModelError(f"{path} is not a safetensors file (header is not JSON)") from None
    if not isinstance(header, dict):
        raise ModelError(f"{path} is not a safetensors file (header is not an object)")
    return header, file_size - 8 - size


def count_header(path: Path, header: dict[str, Any], data_size: int) -> tuple[Counter[str], float]:
    """(elements per dtype, bytes) of the tensors a header lists, each of which must lie in
    the `data_size` bytes after the header: a shape its data cannot hold is a broken file,
    not a model of 10**12 parameters."""
    counts: Counter[str] = Counter()
    nbytes = 0.0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict):
            raise ModelError(f"{path}: tensor {name!r} has no dtype/shape entry")
        dtype, shape = entry.get("dtype"), entry.get("shape")
        if dtype not in SAFETENSORS_BYTES:
            raise ModelError(f"{path}: tensor {name!r} has unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
        ):
            raise ModelError(f"{path}: tensor {name!r} has a malformed shape {shape!r}")
        n = math.prod(shape)
        _check_data(
            path, name, entry.get("data_offsets"), n * SAFETENSORS_BYTES[str(dtype)], data_size
        )
        counts[str(dtype)] += n
        nbytes += n * SAFETENSORS_BYTES[str(dtype)]
    return counts, nbytes


def _check_data(path: Path, name: str, offsets: object, needed: float, data_size: int) -> None:
    """ModelError unless the tensor's data_offsets [begin, end] hold its shape's bytes (a
    sub-byte dtype rounds to a whole byte) inside the file's data."""
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)
        and offsets[0] <= offsets[1]
    ):
        raise ModelError(f"{path}: tensor {name!r} has malformed data_offsets {offsets!r}")
    begin, end = offsets
    if abs((end - begin) - needed) >= 1:
        raise ModelError(
            f"{path}: tensor {name!r} does not fit its data: its shape needs {needed:,.0f} "
            f"bytes, its data_offsets hold {end - begin:,}"
        )
    if end > data_size:
        raise ModelError(
            f"{path}: tensor {name!r} does not fit its data: it ends at byte {end:,} of the "
            f"data, the file holds {max(data_size, 0):,}"
        )


def from_safetensors(path: Path) -> ModelShape:
    """A .safetensors file or a *.safetensors.index.json -> exact counts per dtype."""
    if path.name.endswith(".json"):
        return _from_index(path)
    counts, nbytes = count_header(path, *read_header(path))
    return _shape(str(path), counts, nbytes)


def _from_index(path: Path) -> ModelShape:
    index = read_json(path, "safetensors index")
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ModelError(f"{path}: no weight_map (not a safetensors index)")
    shards = sorted({str(v) for v in weight_map.values()})
    for name in shards:
        # A shard is a file beside the index: a name reaching elsewhere is refused, never read.
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if not parts or name.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
            raise ModelError(f"{path}: shard {name!r} is not a file beside the index: refused")
    present = [path.parent / s for s in shards if (path.parent / s).is_file()]
    if len(present) == len(shards):
        counts: Counter[str] = Counter()
        nbytes = 0.0
        for shard in present:
            c, b = count_header(shard, *read_header(shard))
            counts.update(c)
            nbytes += b
        return _shape(f"{path} ({len(shards)} shards)", counts, nbytes)
    total = (index.get("metadata") or {}).get("total_size")
    if not isinstance(total, int) or total <= 0:
        raise ModelError(
            f"{path}: {len(shards) - len(present)} of {len(shards)} shards are missing and the "
            "index has no metadata.total_size"
        )
    # Bytes alone: the parameter count follows only with a dtype, which --dtype supplies.
    return ModelShape(
        source=f"{path} (index only: {len(shards) - len(present)} shards not on disk)",
        params=0,
        param_bytes=total,
        notes=("shards not on disk: parameter count from metadata.total_size and --dtype",),
    )


def _shape(source: str, counts: Counter[str], nbytes: float) -> ModelShape:
    params = sum(counts.values())
    if params == 0:
        raise ModelError(f"{source}: no tensors in the header")
    return ModelShape(
        source=source,
        params=params,
        param_bytes=int(nbytes),
        param_dtypes=dict(counts.most_common()),
    )
