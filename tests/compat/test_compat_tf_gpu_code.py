"""compat/tensorflow.toml [[gpu_code]]: the rows as read, and bad rows refused on load."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucheck.compat import CompatError, load
from gpucheck.compat.frameworks import TensorflowData

_BASE = {"windows_native_gpu_source": "x"}


def test_2_3_carries_the_list_its_cuobjdump_shows() -> None:
    code = load().tensorflow.gpu_code_for("2.3.1")
    assert code is not None
    assert code.sm == ("3.5", "3.7", "5.2", "6.0", "6.1", "7.0")
    assert code.ptx == ("7.0",)
    assert "issues/46537" in code.source


def test_a_line_with_no_source_tied_list_has_none() -> None:
    assert load().tensorflow.gpu_code_for("2.21") is None


def test_a_row_for_a_line_with_no_release_is_refused() -> None:
    data = {**_BASE, "gpu_code": [{"version": "9.9", "sm": ["3.5"], "source": "x"}]}
    with pytest.raises(CompatError, match=r"with no \[\[release\]\]: \['9\.9'\]"):
        TensorflowData.from_data(Path("tensorflow.toml"), data)


def test_a_capability_that_is_not_a_version_is_refused() -> None:
    data = {**_BASE, "gpu_code": [{"version": "2.3", "sm": ["sm_35"], "source": "x"}]}
    with pytest.raises(CompatError, match="sm_35"):
        TensorflowData.from_data(Path("tensorflow.toml"), data)


def test_a_second_row_for_a_line_is_refused() -> None:
    row = {"version": "2.3", "sm": ["3.5"], "source": "x"}
    data = {**_BASE, "gpu_code": [row, row]}
    with pytest.raises(CompatError, match="second row"):
        TensorflowData.from_data(Path("tensorflow.toml"), data)
