"""[[kernel_library]] rows (compat/extensions.toml) are checked as they load: `by_gpu` belongs
to pick "by-gpu" and names globs of `files`, `fallback_from` to pick "torch-cuda"; a row's
globs match one folder's files, never a path below or above it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from gpucheck.compat import CompatError
from gpucheck.compat.extensions import ExtensionData

SGL: dict[str, object] = {
    "package": "sgl-kernel",
    "files": ["sgl_kernel/sm90/common_ops.*.so", "sgl_kernel/sm100/common_ops.*.so"],
    "pick": "by-gpu",
    "by_gpu": {
        "9.0": "sgl_kernel/sm90/common_ops.*.so",
        "other": "sgl_kernel/sm100/common_ops.*.so",
    },
    "instead": "vLLM",
    "source": "s",
}


def _load(row: Mapping[str, object]) -> ExtensionData:
    return ExtensionData.from_data(Path("extensions.toml"), {"kernel_library": [row]})


def test_a_by_gpu_row_loads_with_its_table() -> None:
    (row,) = _load(SGL).libraries
    assert row.by_gpu["9.0"] == "sgl_kernel/sm90/common_ops.*.so" and row.fallback_from is None


@pytest.mark.parametrize(
    "change",
    [
        {"by_gpu": {}},  # by-gpu without its table
        {"pick": "any"},  # a table on another pick
        {"by_gpu": {"9.0": "sgl_kernel/sm90/other.so"}},  # a glob `files` does not list
    ],
)
def test_a_by_gpu_table_must_fit_the_row(change: dict[str, object]) -> None:
    with pytest.raises(CompatError, match=r"kernel_library\[0\]: by_gpu"):
        _load({**SGL, **change})


def test_fallback_from_is_a_version_on_a_torch_cuda_row_only() -> None:
    bnb = {**SGL, "pick": "torch-cuda", "by_gpu": {}, "fallback_from": "0.50.0"}
    (row,) = _load(bnb).libraries
    assert str(row.fallback_from) == "0.50.0"
    with pytest.raises(CompatError, match=r"fallback_from is for pick torch-cuda"):
        _load({**SGL, "fallback_from": "0.50.0"})


def test_a_glob_star_matches_within_one_folder() -> None:
    (row,) = _load(SGL).libraries
    pattern = row.matcher()
    assert pattern.match("sgl_kernel/sm90/common_ops.abi3.so")
    assert not pattern.match("sgl_kernel/sm90/common_ops./../../../outside.so")
    assert not pattern.match("sgl_kernel/sm90/common_ops.x/y.so")
    assert not pattern.match("sgl_kernel/sm90/common_ops.abi3.so.bak")
