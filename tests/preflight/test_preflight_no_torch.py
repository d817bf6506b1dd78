"""Could not tell (exit 5), never a verdict on other nodes: rank 0 with no interpreter that has
torch (it could not join, so it blames no other rank), and a rank whose rank 0 went dark (it
gives up on its own, inside the Slurm wrapper's margin, rather than be killed and drained)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from conftest import run_gpucheck

JOB = {
    "RANK": "0",
    "WORLD_SIZE": "2",
    "LOCAL_RANK": "0",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29555",
}


def test_rank_0_without_torch_could_not_tell_and_names_no_missing_rank(tmp_path: Path) -> None:
    # An interpreter that cannot import torch wherever this test runs: no site-packages (-S).
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S -s "$@"\n')
    python.chmod(0o755)
    done = run_gpucheck(
        "preflight", "--timeout", "5", "--skip", "system", "--python", str(python), env=JOB
    )
    assert done.returncode == 5, done.stdout + done.stderr
    assert "never arrived" not in done.stdout
    last = done.stdout.splitlines()[-1]
    assert last.startswith("Could not tell: no interpreter with torch to join the job"), last


def test_a_rank_whose_rank_0_went_dark_gives_up_inside_the_wrappers_margin(
    tmp_path: Path,
) -> None:
    # A torch whose store never answers (rank 0's node gone dark): importable, with its
    # distribution's metadata, as gpucheck looks for it.
    site = tmp_path / "site"
    (site / "torch" / "distributed").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text('__version__ = "2.4.0"\n')
    (site / "torch" / "distributed" / "__init__.py").write_text(
        "import time\n\ndef TCPStore(*args, **kwargs):\n    time.sleep(3600)\n"
    )
    (site / "torch-2.4.0.dist-info").mkdir()
    (site / "torch-2.4.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.4.0\n"
    )
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} -S -s "$@"\n')
    python.chmod(0o755)
    follower = {**JOB, "RANK": "1"}
    started = time.monotonic()
    done = run_gpucheck(
        "preflight", "--timeout", "5", "--skip", "system", "--python", str(python), env=follower
    )
    took = time.monotonic() - started
    assert done.returncode == 5, done.stdout + done.stderr
    assert "no verdict from rank 0" in done.stderr
    # The Slurm wrapper passes --timeout TIMEOUT - 10 and kills at TIMEOUT: the follower must
    # have said so itself before then (the interpreter's start counted in).
    assert took < 5 + 10, took
