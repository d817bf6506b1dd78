"""The doctor imports the check modules of the sections --only names (and of their
prerequisites), no more: a narrow doctor starts fast. (Each layer's package, holding only its
declaration, is always imported: the registry reads the declarations.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support import builders

from gpucheck.checks.registry import (
    ID_SECTIONS,
    SECTION_MODULES,
    all_checks,
    sections_named,
)
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import Snapshot, dumps


def test_every_check_is_found_from_its_id_and_module() -> None:
    for chk in all_checks():
        assert ID_SECTIONS[chk.id.split(".")[0]] is chk.section, chk.id
        module = chk.func.__module__
        assert any(
            module == m or module.startswith(m + ".") for m in SECTION_MODULES[chk.section]
        ), (chk.id, module)


def test_patterns_name_their_sections_and_prerequisites() -> None:
    assert sections_named(["gpus"]) == {Layer.GPUS, Layer.SYSTEM, Layer.DRIVER}
    assert sections_named(["frameworks.torch.*"]) == {Layer.FRAMEWORKS, Layer.SYSTEM}
    assert sections_named(["cudnn"]) == {Layer.CUDNN}
    assert sections_named(["no-such-check"]) is None


def imported_check_modules(
    tmp_path: Path, *args: str, snapshot: Snapshot | None = None
) -> set[str]:
    """The gpucheck.checks modules a `doctor --from` of `snapshot` (default: a bare 2-GPU
    node) with `args` imports."""
    snap = tmp_path / "snap.json"
    snap.write_text(dumps(snapshot or builders.h100_node(2)))
    result = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "gpucheck",
            "doctor",
            "--from",
            str(snap),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    names = {line.split("|")[-1].strip() for line in result.stderr.splitlines()}
    return {n for n in names if n.startswith("gpucheck.checks.")}


def test_doctor_only_imports_the_sections_it_names(tmp_path: Path) -> None:
    narrow = imported_check_modules(tmp_path, "--only", "cudnn", "--json")
    assert "gpucheck.checks.cudnn.libraries" in narrow
    assert not {m for m in narrow if m.startswith("gpucheck.checks.frameworks.")}
    assert "gpucheck.checks.gpus.health" not in narrow
    everything = imported_check_modules(tmp_path, "--json")
    assert {"gpucheck.checks.cudnn.libraries", "gpucheck.checks.gpus.health"} <= everything
    # (The framework modules: those the snapshot can use, see test_check_loading_frameworks;
    # asked for by name, a check is reported even with nothing to judge, so all load.)
    torch = imported_check_modules(tmp_path, "--only", "frameworks.torch.python", "--json")
    assert {"gpucheck.checks.frameworks.torch", "gpucheck.checks.frameworks.runtime"} <= torch
