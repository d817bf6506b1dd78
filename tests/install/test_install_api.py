"""gpucheck.install_plan(): the same answer as `gpucheck install --json`, for Python."""

from __future__ import annotations

import pytest
from support import framework_builders as fb

import gpucheck


def test_a_described_machine() -> None:
    # RTX 5090 (12.0) on R570: CUDA 12.8 is the newest that starts; 2.11 its last torch.
    answer = gpucheck.install_plan(["torch"], gpus=["RTX 5090"], driver="570.124.06", python="3.12")
    assert answer.commands == [
        "pip install 'torch==2.11.*' --index-url https://download.pytorch.org/whl/cu128"
    ]
    assert answer.to_dict()["packages"][0]["cuda"] == "12.8"


def test_a_saved_snapshot_and_the_installer() -> None:
    snap = fb.on(fb.pascal_workstation(), fb.torch_cu124())
    answer = gpucheck.install_plan(["torch"], snap, installer="uv-pip")
    assert answer.commands == [
        "uv pip install --python /home/user/.venv/bin/python 'torch==2.14.*' "
        "--index-url https://download.pytorch.org/whl/cu126"
    ]
    assert answer.environment == "/home/user/.venv/bin/python"


def test_bad_input_raises() -> None:
    with pytest.raises(ValueError, match="numpy: not one gpucheck install resolves"):
        gpucheck.install_plan(["numpy"], gpus=["H100"])
    with pytest.raises(ValueError, match="installer: 'poetry'"):
        gpucheck.install_plan(["torch"], gpus=["H100"], installer="poetry")
    with pytest.raises(TypeError, match="not one string"):
        gpucheck.install_plan("torch", gpus=["H100"])
