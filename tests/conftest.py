"""Shared test helpers: run the real `gpucheck` command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that fetch real libraries or build framework environments are the slow tier."""
    for item in items:
        if item.get_closest_marker("reallibs") or item.get_closest_marker("frameworks"):
            item.add_marker(pytest.mark.slow)
