"""Shared test helpers: run the real `gpucheck` command in a subprocess."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from sim import scenario as sim
from sim.scenario import Machine, Scenario
from support import reallibs

# The real-library fixtures (Debian's driver packages, pip wheels), shared by the
# test_probes_reallibs*.py modules.
pytest_plugins = ["support.reallibs_fixtures"]

REPO = Path(__file__).resolve().parents[1]
# Real nvidia-smi outputs (MIT-licensed test data from other projects, origins in its README),
# carried with the tests so that a fresh clone runs them all.
SHARED_NVSMI = REPO / "tests" / "fixtures" / "nvsmi"
# The probe scripts must run under old interpreters too (the user's environment, 3.8+).
PYTHON38 = next(
    iter(sorted(glob.glob("/root/.pyenv/versions/3.8*/bin/python3.8"))),
    shutil.which("python3.8"),
)
VENV_FIXTURES = {"torch_python", "tf_python"}  # fixtures that build real framework venvs


def require_python38() -> str:
    """A Python 3.8 interpreter, or a failure that says how to get one (never a skip)."""
    if PYTHON38 is None:
        pytest.fail(
            "this test needs a Python 3.8 interpreter (python3.8 on PATH or under "
            "/root/.pyenv/versions): install one, e.g. `pyenv install 3.8`"
        )
    return PYTHON38


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The fast tier (`pytest -m "not slow" -n auto`) leaves out every test that fetches real NVIDIA
    libraries or builds framework environments."""
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        uses_venv = VENV_FIXTURES & set(getattr(item, "fixturenames", ()))
        if uses_venv:
            item.add_marker(pytest.mark.frameworks)
        if marks & {"reallibs", "frameworks"} or uses_venv:
            item.add_marker(pytest.mark.slow)


def run_gpucheck(
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m gpucheck ARGS` as a user would, with `env` added to a clean environment."""
    base = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "NO_COLOR")}
    base.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "gpucheck", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=base,
        check=False,
    )


@pytest.fixture
def gpucheck() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_gpucheck


# --- simulated GPU machines (tests/sim), for every test module that needs one -----------------


@pytest.fixture(scope="session")
def sim_libs(tmp_path_factory: pytest.TempPathFactory) -> sim.Libraries:
    """The fake libraries, built once per session (nvml.h fetched once into the test cache)."""
    compiler = sim.find_compiler()
    if compiler is None:
        pytest.skip("no C compiler (cc or gcc): the simulated NVIDIA libraries cannot be built")
    try:
        include = sim.nvml_include_dir()
    except reallibs.FetchError as exc:
        problem = str(exc)
    else:
        return sim.Libraries.build(include, tmp_path_factory.mktemp("sim-build"), compiler)
    if reallibs.offline():
        pytest.skip(f"{reallibs.OFFLINE_ENV}=1 and nvml.h could not be fetched: {problem}")
    pytest.fail(
        f"could not fetch NVIDIA's nvml.h ({sim.NVML_DEV_DIST}=={sim.NVML_DEV_VERSION}): "
        f"{problem}\n(set {reallibs.OFFLINE_ENV}=1 to skip where PyPI cannot be reached)",
        pytrace=False,
    )


Simulate = Callable[[Scenario], Machine]


@pytest.fixture
def simulate(sim_libs: sim.Libraries, tmp_path: Path) -> Simulate:
    count = 0

    def make(scenario: Scenario) -> Machine:
        nonlocal count
        count += 1
        return Machine.create(scenario, sim_libs, tmp_path / f"machine{count}")

    return make
