"""Check ids name their layer first (report schema 4.0), and the one table of the 3.x -> 4.0
rename (checks/renamed.py) maps every old id, read back by --only/--skip and old reports."""

from __future__ import annotations

import json
from pathlib import Path

from gpucheck.checks.registry import ORDER, all_checks, select
from gpucheck.checks.renamed import RENAMED, current_id, current_pattern, renamed_notices
from gpucheck.fixplan import report_findings

DOCS = Path(__file__).resolve().parents[2] / "docs" / "check-ids-4.0.md"
# Checks that came after the 3.x -> 4.0 rename: no 3.x id names them.
ADDED_SINCE_4_0 = {"system.cdi-spec", "system.image-cuda-requirement", "gpus.xid-events"}


def test_every_check_id_begins_with_its_layers_name() -> None:
    for chk in all_checks():
        assert chk.id.split(".")[0] == chk.section.value, chk.id


def test_the_rename_table_maps_every_3_x_id_to_one_check_of_today() -> None:
    assert len(RENAMED) == 56
    # Checks added after the rename (the network layer's, and those named above) never had a
    # 3.x id.
    since = {i for i in ORDER if i.startswith("network.")} | ADDED_SINCE_4_0
    assert sorted(RENAMED.values()) == sorted(set(ORDER) - since)
    assert RENAMED["gpu.ecc-errors"] == "gpus.ecc-errors"
    assert RENAMED["require.min-gpus"] == "requirements.min-gpus"
    assert RENAMED["torch.arch-support"] == "frameworks.torch.arch-support"
    assert RENAMED["xla.compiler"] == "frameworks.xla.compiler"
    assert RENAMED["frameworks.smoke-test"] == "frameworks.smoke-test"
    assert RENAMED["driver.nvml"] == "driver.nvml"
    assert current_id("gpus.lost") == "gpus.lost"  # a 4.0 id reads as itself
    assert current_id("bench.gemm") == "bench.gemm"  # and so does an id no check has


def test_old_ids_and_prefixes_select_what_they_named() -> None:
    assert current_pattern("gpu") == "gpus"
    assert current_pattern("gpu.*") == "gpus.*"
    assert current_pattern("torch") == "frameworks.torch"
    assert current_pattern("tensorflow.cuda-driver") == "frameworks.tensorflow.cuda-driver"
    assert current_pattern("cudnn") == "cudnn"
    assert [c.id for c in select(["gpu.ecc-errors"], [])] == ["gpus.ecc-errors"]
    torch = [c.id for c in select(["torch"], ["torch.python"])]
    assert "frameworks.torch.cpu-build" in torch
    assert "frameworks.torch.python" not in torch
    assert all(i.startswith("frameworks.torch.") for i in torch)
    assert renamed_notices(["gpus", "require", "require"]) == [
        "'require' is a check id from before report schema 4.0; it now reads 'requirements'"
    ]


def test_the_docs_fragment_lists_the_whole_table() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for old, new in RENAMED.items():
        assert f"| `{old}` | `{new}` |" in text, old


def test_fix_from_a_3_x_report_reads_its_findings_under_their_4_0_ids() -> None:
    finding = {"id": "torch.cpu-build", "section": "frameworks", "status": "fail", "title": "t"}
    report = {"schema_version": "3.1", "findings": [finding]}
    read = report_findings(json.dumps(report).encode())
    assert read is not None
    assert [f.id for f in read] == ["frameworks.torch.cpu-build"]
    assert report_findings(json.dumps({**report, "schema_version": "1.1"}).encode()) is None
