"""`fleet --format html`: the fleet as a page: problems per check drawn as bars with their
hosts, each layer's version spread, the inventory and the GPUs to act on."""

from __future__ import annotations

from pathlib import Path

from conftest import run_gpucheck
from test_fleet import ecc_node, mismatch_node, node, report_text


def test_the_fleet_page_draws_problems_and_versions(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "a.json").write_text(report_text(node("node-a")))
    (folder / "b.json").write_text(report_text(ecc_node("node-b")))
    (folder / "c.json").write_text(report_text(mismatch_node("node-c<x>")))
    (folder / "d.json").write_text(report_text(ecc_node("node-d")))
    result = run_gpucheck("fleet", str(folder), "--format", "html")
    assert result.returncode == 1, result.stderr
    page = result.stdout
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "4 report(s), 4 host(s): 1 ready, 3 not ready" in page
    assert "<title>gpus.ecc-errors (fail) hosts: 2 hosts</title>" in page
    assert "<title>driver.nvml (fail) hosts: 1 hosts</title>" in page
    assert "node-b, node-d" in page and "node-c&lt;x&gt;" in page and "node-c<x>" not in page
    assert '-t">cuda: hosts per version</title>' in page
    assert "13.1: 3 host(s); unknown: 1 host(s)" in page
    assert "<td>GPU-00000002-0000-0000-0000-000000000000</td><td>1650000000002</td>" in page
