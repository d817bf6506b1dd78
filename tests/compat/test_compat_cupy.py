"""compat/cupy.toml against CuPy's own install.rst at the release tags (literals read there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucheck.compat import CompatError, load
from gpucheck.compat.cupy import CupyData, wheel_major


def test_lines_and_wheels_as_the_install_guide_lists_them() -> None:
    data = load().cupy
    lines = [str(r.version) for r in data.releases]
    assert lines[0] == "12.0" and lines[-1] == "14.2" and len(lines) == 14
    v12 = data.releases[0]
    # v12.0.0: cupy-cuda102 (v10.2), -cuda110 (v11.0), -cuda111 (v11.1), -cuda11x (v11.2 ~ 11.8)
    assert v12.wheel_cuda("cupy-cuda110") == ["11.0"]
    assert v12.wheel_cuda("cupy-cuda11x") == [
        "11.2",
        "11.3",
        "11.4",
        "11.5",
        "11.6",
        "11.7",
        "11.8",
    ]
    assert v12.wheel_cuda("cupy-cuda12x") == ["12.0", "12.1"]
    v14 = data.releases[-1]
    assert v14.packages == ("cupy-cuda12x", "cupy-cuda13x") and v14.ctk_extra
    assert v14.wheel_cuda("cupy-cuda13x") == ["13.0", "13.1", "13.2"]
    assert v14.python == ("3.10", "3.11", "3.12", "3.13", "3.14")
    assert not any(r.ctk_extra for r in data.releases if r.version.major < 14)


def test_wheel_names() -> None:
    assert wheel_major("cupy-cuda12x") == ("12", None)
    assert wheel_major("cupy-cuda102") == ("10", "10.2")
    assert wheel_major("cupy-rocm-5-0") is None


def test_a_row_with_an_unknown_package_is_refused(tmp_path: Path) -> None:
    row = {
        "version": "15.0",
        "released": "2027-01-01",
        "cuda": ["13.0"],
        "python": ["3.12"],
        "packages": ["cupy-rocm-7-0"],
        "min_cc": "3.0",
        "ctk_extra": True,
        "source": "x",
    }
    with pytest.raises(CompatError, match="cupy-rocm-7-0"):
        CupyData.from_data(tmp_path / "cupy.toml", {"release": [row]})
