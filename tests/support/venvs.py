"""Real virtual environments with real frameworks, built once and cached for the tests (and the
benchmark): torch's CPU wheel (torch==2.13.0, a +cpu build) and tensorflow-cpu from PyPI.

Each lives under the test cache (see reallibs.cache_root) in `venvs/<name>`, complete only
once its marker is written; a half-built one is rebuilt. Nothing is installed outside it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.reallibs import FetchError, _locked, _read_marker, _write_marker, cache_root, offline

# name -> pip requirements. torch 2.13.0 resolves to the machine's +cpu wheel where one is
# provided (pip's find-links), else to PyPI's; either way a build gpucheck must diagnose.
ENVIRONMENTS: dict[str, tuple[str, ...]] = {
    "torch-2.13.0": ("torch==2.13.0",),
    "tensorflow-cpu-2.21.0": ("tensorflow-cpu==2.21.0",),
    "torch-and-tensorflow": ("torch==2.13.0", "tensorflow-cpu==2.21.0"),
    # fit's activation measurement: Hugging Face's own Llama modelling code, random weights.
    "torch-transformers": ("torch==2.13.0", "transformers==5.23.0"),
}
INSTALL_TIMEOUT = 1800  # seconds: the wheels are hundreds of MB


def venv_python(name: str) -> Path:
    """The interpreter of the named environment, building it if needed (FetchError on failure)."""
    requirements = ENVIRONMENTS[name]
    base = cache_root() / "venvs" / name
    wanted: dict[str, object] = {
        "requirements": list(requirements),
        "python": sys.version.split()[0],
    }
    with _locked(base):
        python = base / "env" / "bin" / "python"
        if _read_marker(base) == wanted and python.exists():
            return python
        if offline():
            raise FetchError(f"{name}: not built yet and GPUCHECK_TEST_OFFLINE is set")
        shutil.rmtree(base / "env", ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(base / "env")])
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        _run([*pip, "--retries=3", "--timeout=60", *requirements])
        _write_marker(base, wanted)
        return python


def require(name: str) -> Path:
    """For fixtures: the environment's interpreter; a failed build fails the test run (it is
    not a reason to skip), unless GPUCHECK_TEST_OFFLINE=1 says the registries are out of reach."""
    try:
        return venv_python(name)
    except FetchError as exc:
        problem = str(exc)
    if offline():
        pytest.skip(f"offline: {problem}")
    pytest.fail(f"could not build the {name} environment: {problem}", pytrace=False)


def _run(cmd: list[str]) -> None:
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise FetchError(f"{' '.join(cmd)}: no answer within {INSTALL_TIMEOUT} s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise FetchError(f"{' '.join(cmd)} exited with status {proc.returncode}:\n{tail}")
