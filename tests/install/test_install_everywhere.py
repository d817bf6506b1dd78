"""Wherever the doctor gives a torch install step, it is `gpucheck install torch`'s answer:
the same release, CUDA variant and index for the same machine (literals from the sources
cited in tests/install/test_install_resolve.py)."""

from __future__ import annotations

from support import framework_builders as fb

from gpucheck.compat import load
from gpucheck.fixplan import diagnose
from gpucheck.install.flow import answer_for
from gpucheck.install.machine import from_snapshot
from gpucheck.install.request import parse_wanted

PASCAL_TORCH = "pip install 'torch==2.14.*' --index-url https://download.pytorch.org/whl/cu126"


def test_the_arch_fix_on_a_pascal_card_with_torch_2_15_is_the_install_answer() -> None:
    compat = load()
    snap = fb.on(fb.pascal_workstation(), fb.with_torch(fb.environment(), "2.15.0", "13.2"))
    (finding,) = [f for f in diagnose(snap, compat) if f.id == "frameworks.torch.arch-support"]
    assert finding.status.value == "fail" and finding.fix is not None
    commands = [s.command for s in finding.fix.steps if s.command]
    assert any(PASCAL_TORCH in c for c in commands), commands
    answer = answer_for(compat, from_snapshot(snap, compat), parse_wanted(["torch"]))
    # install names the environment it judged: its interpreter's own pip
    assert answer.commands == [f"/home/user/.venv/bin/python -m {PASCAL_TORCH}"]
