"""An unpinned `RUN pip install torch` is judged as what it resolves to today (torch 2.15, PyPI's
+cu132 build: torch/version.py cuda='13.2' in the 2.15.0 wheel) against the host, and the fix
pins the build `gpucheck install torch` names for that host."""

from __future__ import annotations

from support import framework_builders as fb
from support.builders import h100_node, workstation

from gpucheck.dockerfile import judge_file
from gpucheck.inputs import load_compat
from gpucheck.model.finding import Finding, Status
from gpucheck.model.snapshot import Snapshot

RECIPE = "FROM python:3.12\nRUN pip install torch\n"
PREFIX = (
    "line 2: torch: unpinned torch resolves to torch 2.15 with CUDA 13.2 today (PyPI's build; "
    "compat data as of 2026-11-21)"
)


def pip_finding(snap: Snapshot) -> Finding:
    found = {f.id: f for f in judge_file("Dockerfile", RECIPE, snap, load_compat(None))}
    return found["dockerfile.pip-framework"]


def test_on_an_r570_host_it_says_the_driver_and_pins_the_build_that_runs() -> None:
    # CUDA 13.x needs >= 580 (minor-version table); the 3060 (8.6) runs 2.14's cu126 build.
    found = pip_finding(workstation())
    assert found.status is Status.FAIL
    assert found.evidence == [
        f"{PREFIX}; this host's driver 570.124.04 runs CUDA 12.8 at most: pin torch==2.14.* "
        "(+cu126) from https://download.pytorch.org/whl/cu126"
    ]
    assert found.fix is not None and found.fix.text == (
        "Pin torch in the recipe: RUN pip install 'torch==2.14.*' "
        "--index-url https://download.pytorch.org/whl/cu126"
    )


def test_on_a_pascal_host_it_says_the_missing_code() -> None:
    found = pip_finding(fb.pascal_workstation())
    assert found.status is Status.FAIL
    assert found.evidence[0].startswith(
        f"{PREFIX}; CUDA 13.2: has no code for compute capability 6.1 "
    )


def test_on_a_host_it_runs_on_it_passes() -> None:
    found = pip_finding(h100_node(1))
    assert found.status is Status.PASS
    assert found.evidence == [f"{PREFIX}: runs on driver 590.48.01"]
