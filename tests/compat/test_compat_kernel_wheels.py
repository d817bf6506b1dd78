"""[[kernel_archs]] rows read from a release's own wheel (scripts/wheel_archs.py): SASS with
arch-specific "a" builds that run on their own capability alone, PTX the driver compiles for
equal or newer GPUs (CUDA C++ Programming Guide, "Binary Compatibility", "PTX Compatibility")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpucheck.compat import CompatError
from gpucheck.compat.extensions import ExtensionData, KernelArchs

ROW: dict[str, Any] = {
    "package": "sgl-kernel",
    "from": "0.3.20",
    "archs": ["8.0", "8.9", "9.0", "9.0a", "10.0a", "12.0a"],
    "instead": "x",
    "source": "s",
}


def _row(**changes: Any) -> KernelArchs:
    data = ExtensionData.from_data(Path("extensions.toml"), {"kernel_archs": [ROW | changes]})
    return data.kernels[0]


@pytest.mark.parametrize(
    ("cc", "arch"),
    [
        ("8.6", "8.0"),  # sm_80 runs on 8.6 (same major, lower minor)
        ("9.0", "9.0"),
        ("10.0", "10.0a"),
        ("12.0", "12.0a"),
        ("10.3", None),  # B300: sm_100a is for 10.0 alone
        ("12.1", None),  # DGX Spark: sm_120a is for 12.0 alone
        ("7.5", None),
    ],
)
def test_arch_specific_sass_runs_on_its_own_capability_alone(cc: str, arch: str | None) -> None:
    assert _row().runs_on(cc) == arch


def test_ptx_reaches_equal_and_newer_gpus_after_every_sass() -> None:
    row = _row(archs=["7.0", "8.0"], ptx=["8.0", "9.0"])
    assert [row.runs_on(cc) for cc in ("7.5", "8.6", "9.0", "12.0", "6.1")] == [
        "7.0",
        "8.0",
        "9.0",
        "9.0",
        None,
    ]
    assert row.carried() == "compute capability 7.0, 8.0 and, through PTX, 8.0 and newer"
    assert _row().carried() == "compute capability 8.0, 8.9, 9.0, 9.0a, 10.0a, 12.0a only"


def test_rows_with_bad_ptx_or_arch_names_do_not_load() -> None:
    with pytest.raises(CompatError, match=r"ptx must be compute capabilities"):
        _row(ptx=["9.0a"])
    with pytest.raises(CompatError, match=r"archs must be compute capabilities"):
        _row(archs=["sm_90"])
    with pytest.raises(CompatError, match=r"and_newer rows name one arch"):
        _row(archs=["7.0"], ptx=["7.0"], and_newer=True)
    assert _row(ptx=["12.0"], cuda_for={"12.0": "12.8"}).cuda_for == {"12.0": "12.8"}
