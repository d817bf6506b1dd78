"""The wheel carries what gpucheck reads at run time: the compat data and the JSON Schema."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import REPO


def test_wheel_ships_compat_data_and_schema(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (wheel,) = tmp_path.glob("gpucheck_doctor-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in (REPO / "compat").glob("*.toml"):
        assert f"gpucheck/compat_data/{data.name}" in names
    assert "gpucheck/report/report.schema.json" in names
    assert "gpucheck/probes/scripts/nvml.py" in names
    assert "gpucheck/probes/scripts/child_protocol.py" in names  # the scripts import it
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    requires = [
        line
        for line in text.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    assert not any(heavy in " ".join(requires) for heavy in ("torch", "tensorflow", "jax", "cupy"))
