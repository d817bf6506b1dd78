"""A real H200's snapshot (tests/fixtures/real/h200-2026-11-28, captured by
scripts/on_a_gpu.sh on the device lent to a session): a healthy machine the doctor must not
fail, judged again from the saved snapshot as any later gpucheck would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CAPTURE = Path(__file__).parents[1] / "fixtures" / "real" / "h200-2026-11-28"


def test_the_real_h200_is_ready_with_the_loader_cache_warning_it_showed() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpucheck",
            "doctor",
            "--from",
            str(CAPTURE / "snapshot.json"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert [f["id"] for f in findings if f["status"] == "fail"] == []
    assert [f["id"] for f in findings if f["status"] == "warn"] == ["frameworks.loader-cache"]
    gpus = json.loads((CAPTURE / "snapshot.json").read_text())["nvml"]["gpus"]
    assert [g["name"] for g in gpus] == ["NVIDIA H200"]
