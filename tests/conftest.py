"""Shared test helpers: run the real `gpucheck` command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
import reallibs
from sim import scenario as sim
from sim.scenario import Machine, Scenario

REPO = Path(__file__).resolve().parents[1]
SHARED_NVSMI = REPO.parent / "shared" / "nvsmi"


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
def gpucheck():  # type: ignore[no-untyped-def]
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
