"""What the CUDA-check tests share: a driver minimum read straight off compat/cuda.toml, the
driver version a fix asks for, and a snapshot with an nvcc."""

from __future__ import annotations

import sys

from gpucheck import compat
from gpucheck.model.finding import Fix
from gpucheck.model.snapshot import NvccFacts, Snapshot
from support import more_builders as mb

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]


def toml_min_driver(version: str) -> str:
    """The minimum Linux driver exactly as compat/cuda.toml (and NVIDIA's table) prints it."""
    data = tomllib.loads((compat.data_dir() / "cuda.toml").read_text(encoding="utf-8"))
    row = next(r for r in data["toolkit"] if r["version"] == version)
    return str(row["min_driver_linux"])


def upgrade_target(fix: Fix | None) -> object:
    """The driver version a fix's driver step asks for, parsed (so that 580.65.06 ==
    580.65.6)."""
    assert fix is not None
    wanted = [
        c.requirement for s in fix.steps for c in s.changes if c.name.startswith("nvidia-driver")
    ]
    assert wanted and wanted[0] and wanted[0].startswith(">="), fix
    return compat.parse_version(wanted[0][2:])


def with_nvcc(snap: Snapshot, version: str | None, path: str = "/usr/local/cuda/bin/nvcc"):  # type: ignore[no-untyped-def]
    snap.cuda.nvcc = NvccFacts(path=path, version=version)
    snap.cuda.cuda_home = "/usr/local/cuda"
    snap.cuda.cuda_home_source = "default"
    return snap


def cuinit_fails(snap: Snapshot, name: str) -> Snapshot:
    drv = snap.cuda.driver
    drv.init_result = mb.CU_RESULTS[name]
    drv.init_error_name = name
    drv.device_count = None
    drv.devices = []
    return snap
