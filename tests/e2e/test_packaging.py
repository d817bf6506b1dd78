"""The wheel carries what gpucheck reads at run time: the compat data and the JSON Schema."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
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
    # The child scripts, each in the package that runs it, and the protocol they all import.
    for shipped in (
        "probes/scripts/nvml.py",
        "probes/scripts/framework_static.py",
        "bench/scripts/bench.py",
        "bench/scripts/bench_common.py",
        "bench/scripts/allreduce.py",
        "watch/scripts/watch.py",
        "watch/scripts/watch_shared.py",
        "fit/scripts/fit_trace.py",
        "child/protocol.py",
    ):
        assert f"gpucheck/{shipped}" in names, shipped
    for path in (REPO / "src" / "gpucheck").glob("*/scripts/*.py"):
        assert path.relative_to(REPO / "src").as_posix() in names, path
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    requires = [
        line
        for line in text.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    assert not any(heavy in " ".join(requires) for heavy in ("torch", "tensorflow", "jax", "cupy"))


def _build(kind: str, outdir: Path) -> Path:
    result = subprocess.run(
        [sys.executable, "-m", "build", f"--{kind}", "--outdir", str(outdir), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (built,) = outdir.glob(
        "gpucheck_doctor-*.whl" if kind == "wheel" else "gpucheck_doctor-*.tar.gz"
    )
    return built


@pytest.mark.slow
def test_wheel_metadata_license_urls_classifiers_and_py_typed(tmp_path: Path) -> None:
    wheel = _build("wheel", tmp_path)
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    assert "gpucheck/py.typed" in names
    licenses = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert licenses and archive.read(licenses[0]).decode().startswith("MIT License")
    meta = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    lines = meta.splitlines()
    assert "License-Expression: MIT" in lines
    assert any(line.startswith("Project-URL: Homepage, https://") for line in lines)
    for version in ("3.10", "3.11", "3.12", "3.13"):
        assert f"Classifier: Programming Language :: Python :: {version}" in lines
    assert "Classifier: Typing :: Typed" in lines
    # The published test extra pins no linter (constraints-dev.txt does, for development).
    test_extra = [ln for ln in lines if ln.startswith("Requires-Dist:") and "extra == 'test'" in ln]
    assert any("ruff" in ln for ln in test_extra) and any("mypy" in ln for ln in test_extra)
    assert not [ln for ln in test_extra if "==" in ln.split(";")[0]], test_extra


@pytest.mark.slow
def test_sdist_carries_the_license_and_the_dev_constraints(tmp_path: Path) -> None:
    sdist = _build("sdist", tmp_path)
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    assert {"LICENSE", "constraints-dev.txt", "src/gpucheck/py.typed"} <= names
    pins = (REPO / "constraints-dev.txt").read_text().split()
    assert "ruff==0.17.5" in pins and "mypy==2.4.1" in pins
