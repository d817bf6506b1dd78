"""Which GPUs a library's code runs on (model/compiled_code.py), as the CUDA C++ Programming
Guide states it: SASS for X.y runs on X.z with z >= y, never across majors; arch-specific SASS
and PTX (sm_90a, compute_90a) on that capability alone; PTX is compiled by the driver for any
equal or newer capability."""

from __future__ import annotations

import pytest

from gpucheck.model.compiled_code import CompiledCode, ptx_runs_on, runs_on, sass_runs_on


@pytest.mark.parametrize(
    ("arch", "cc", "runs"),
    [
        ("8.0", "8.0", True),
        ("8.0", "8.6", True),
        ("8.6", "8.0", False),
        ("8.0", "9.0", False),
        ("9.0a", "9.0", True),
        ("10.0a", "10.3", False),
        ("x.y", "8.0", False),
    ],
)
def test_sass(arch: str, cc: str, runs: bool) -> None:
    assert sass_runs_on(arch, cc) is runs


@pytest.mark.parametrize(
    ("arch", "cc", "runs"),
    [
        ("8.0", "12.0", True),
        ("9.0", "8.9", False),
        ("9.0a", "9.0", True),
        ("9.0a", "10.0", False),
        ("", "9.0", False),
    ],
)
def test_ptx(arch: str, cc: str, runs: bool) -> None:
    assert ptx_runs_on(arch, cc) is runs


def test_a_library_runs_where_either_covers() -> None:
    fa2 = CompiledCode(sass=("8.0",), ptx=("8.0",))
    assert runs_on(fa2, "12.0") and runs_on(fa2, "8.6") and not runs_on(fa2, "7.5")
