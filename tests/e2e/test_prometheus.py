"""`doctor --format prometheus` and the shipped alert rules, checked by the real Prometheus tools:
promtool (metrics and rules) and node_exporter's textfile collector scraped over HTTP."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, run_gpucheck
from support import builders
from support.components import free_port, get, program, run, serving, wait_for

from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.finding import Finding, GpuRef, Status, Subjects
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import ProbeRun, Snapshot, dumps
from gpucheck.report.core import Report
from gpucheck.report.prometheus import render_prometheus

ALERTS = REPO / "integrations" / "prometheus"


def render(report: Report) -> str:
    from io import StringIO

    out = StringIO()
    render_prometheus(report, out)
    return out.getvalue()


def awkward_report() -> Report:
    """GPU subjects, a failing check, and label values that need escaping."""
    snap = builders.h100_node(2)
    snap.environments = [
        PythonEnvironment(
            python='/home/a "quoted"\\dir\nnewline/bin/python',
            origin="--python",
            distributions=[
                Distribution("torch", "2.5.1+cu124"),
                Distribution("cupy-cuda12x", "13.3.0"),
                Distribution("numpy", "2.1.0"),
            ],
        )
    ]
    snap.probes = [ProbeRun("nvml", "ok", 81.5), ProbeRun("libraries", "timeout", 15000.0)]
    gpus = [GpuRef(g.index, g.uuid, g.pci_bus_id) for g in snap.nvml.gpus]
    findings = [
        Finding("driver.nvml", Layer.DRIVER, Status.PASS, "NVML answers"),
        Finding("gpus.ecc-errors", Layer.GPUS, Status.FAIL, "ECC", subjects=Subjects(gpus)),
        # The same GPU named twice must not give a duplicate series.
        Finding("gpus.lost", Layer.GPUS, Status.PASS, "ok", subjects=Subjects([gpus[0]] * 2)),
    ]
    # Facts gathered an hour before the report was made (a `doctor --from`).
    snap.created_at = "2026-11-21T09:00:00+00:00"
    return Report(snap, findings, created_at="2026-11-21T10:00:00+00:00")


def test_series_per_check_and_gpu_with_escaped_labels() -> None:
    text = render(awkward_report())
    lines = text.splitlines()
    uuid0, uuid1 = (g.uuid for g in awkward_report().snapshot.nvml.gpus)
    assert 'gpucheck_check_status{check="driver.nvml",section="driver",status="pass"} 1' in lines
    for index, uuid in ((0, uuid0), (1, uuid1)):
        # dcgm-exporter's label names beside ours, so that verdicts join its telemetry.
        line = (
            f'gpucheck_check_status{{check="gpus.ecc-errors",section="gpus",status="fail",'
            f'gpu="{index}",gpu_uuid="{uuid}",UUID="{uuid}",modelName="NVIDIA H100 80GB HBM3",'
            f'Hostname="gpu-node-01"}} 1'
        )
        assert line in lines
    assert sum(1 for line in lines if 'check="gpus.lost"' in line) == 1
    assert "gpucheck_ready 0" in lines and "gpucheck_exit_code 1" in lines
    assert 'gpucheck_findings{status="fail"} 1' in lines
    # The time the facts were gathered (09:00Z), not when the report was rendered (10:00Z).
    assert "gpucheck_report_timestamp_seconds 1795251600" in lines
    assert 'gpucheck_probe_duration_seconds{probe="nvml"} 0.0815' in lines
    assert 'gpucheck_probe_success{probe="libraries",status="timeout"} 0' in lines
    # The newline, a control character, is shown escaped (\x0a), then backslashes doubled.
    assert 'python="/home/a \\"quoted\\"\\\\dir\\\\x0anewline/bin/python"' in text
    assert 'package="cupy-cuda12x",version="13.3.0"' in text and "numpy" not in text
    assert re.search(r'gpucheck_driver_info\{kernel_module="590.48.01",.*cuda_version="13.1"', text)
    # Every family has HELP and TYPE before its samples, once.
    names = [line.split()[2] for line in lines if line.startswith("# TYPE")]
    assert len(names) == len(set(names)) and all(n.startswith("gpucheck_") for n in names)


def test_empty_facts_give_valid_families_only() -> None:
    text = render(Report(Snapshot(created_at="not a date"), [], created_at="2026-11-21T10:00:00Z"))
    assert "gpucheck_ready 1" in text
    assert "gpucheck_report_timestamp_seconds" not in text  # unknown is absent, never 0
    assert "gpucheck_gpu_info" not in text and "gpucheck_driver_info" not in text


def test_every_metric_the_alerts_use_is_one_the_format_writes() -> None:
    text = render(awkward_report())
    used = set(re.findall(r"\bgpucheck_[a-z_]+", (ALERTS / "alerts.yml").read_text()))
    assert used and all(f"# TYPE {name} gauge" in text for name in used), used


def test_cli_writes_the_textfile(tmp_path: Path) -> None:
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].ecc_uncorrected_volatile = 3
    source = tmp_path / "snap.json"
    source.write_text(dumps(snap))
    target = tmp_path / "gpucheck.prom"
    result = run_gpucheck(
        "doctor", "--from", str(source), "--format", "prometheus", "-o", str(target)
    )
    assert result.returncode == 1 and result.stdout == "", result.stderr
    text = target.read_text()
    assert 'check="gpus.ecc-errors",section="gpus",status="fail"' in text
    assert text.endswith("\n") and "gpucheck_ready 0\n" in text
    # An old snapshot read with --from is dated when its facts were gathered, not now.
    assert "gpucheck_report_timestamp_seconds 1795255200\n" in text
    bad = run_gpucheck("doctor", "--from", str(source), "--format", "prom")
    assert bad.returncode == 2 and "prometheus" in bad.stderr and "Traceback" not in bad.stderr


# -- the real tools ------------------------------------------------------------------------------


@pytest.mark.slow
def test_promtool_accepts_the_metrics(tmp_path: Path) -> None:
    promtool = program("promtool")
    reports = {
        "awkward": awkward_report(),
        "empty": Report(Snapshot(), []),
        "no-gpu": Report(builders.no_gpu_machine(), []),
    }
    # promtool's only complaint: the camelCase label names that join dcgm-exporter's series
    # (UUID, modelName, Hostname are its names; the lint has no switch for one rule).
    dcgm_names = {
        f"{family} label names should be written in 'snake_case' not 'camelCase'"
        for family in ("gpucheck_check_status", "gpucheck_gpu_info")
    }
    for name, report in reports.items():
        result = run(promtool, "check", "metrics", input=render(report))
        complaints = set(result.stderr.strip().splitlines()) - dcgm_names
        assert result.stdout.strip() == "" and not complaints, (name, result)
        assert result.returncode in ((3,) if name == "awkward" else (0,)), (name, result)
    # Without the dcgm labels, the same metrics lint clean.
    awkward = render(awkward_report())
    plain = re.sub(r',(UUID|modelName|Hostname)="[^"]*"', "", awkward)
    result = run(promtool, "check", "metrics", input=plain)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), result
    # And the check can fail: a counter without _total is a lint error to promtool.
    broken = "# HELP x_requests a\n# TYPE x_requests counter\nx_requests 1\n"
    assert run(promtool, "check", "metrics", input=broken).returncode != 0


@pytest.mark.slow
def test_node_exporter_serves_the_textfile(tmp_path: Path) -> None:
    exporter = program("prometheus-node-exporter")
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    healthy, failing = tmp_path / "healthy.json", tmp_path / "failing.json"
    healthy.write_text(dumps(builders.h100_node(2)))
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].ecc_uncorrected_volatile = 3
    failing.write_text(dumps(snap))
    prom = textfiles / "gpucheck.prom"
    result = run_gpucheck("doctor", "--from", str(failing), "-f", "prometheus", "-o", str(prom))
    assert result.returncode == 1, result.stderr

    with serving(
        exporter, exporter_args(port := free_port(), textfiles), port, "/", tmp_path
    ) as base:
        metrics = get(base + "/metrics")
        assert "node_textfile_scrape_error 0" in metrics, metrics
        assert re.search(
            # node_exporter sorts the labels
            r'gpucheck_check_status\{Hostname="gpu-node-01",UUID="GPU-00000001-0000-0000-0000-'
            r'000000000000",check="gpus.ecc-errors",gpu="1",gpu_uuid="GPU-00000001-0000-0000-0000-'
            r'000000000000",modelName="NVIDIA H100 80GB HBM3",section="gpus",status="fail"\} 1',
            metrics,
        ), metrics
        assert "gpucheck_ready 0" in metrics
        # The next run replaces the file whole; the next scrape serves the new verdict.
        result = run_gpucheck("doctor", "--from", str(healthy), "-f", "prometheus", "-o", str(prom))
        assert result.returncode == 0, result.stderr
        metrics = get(base + "/metrics")
        assert 'check="gpus.ecc-errors",section="gpus",status="pass"' in metrics
        assert "gpucheck_ready 1" in metrics and "node_textfile_scrape_error 0" in metrics
        assert not list(textfiles.glob(".gpucheck.prom.*"))  # no temporary file left behind


def exporter_args(port: int, textfiles: Path) -> list[str]:
    return [
        f"--web.listen-address=127.0.0.1:{port}",
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={textfiles}",
    ]


@pytest.mark.slow
def test_prometheus_scrapes_it_and_the_shipped_alert_goes_pending(tmp_path: Path) -> None:
    """The whole path: gpucheck -> textfile -> node_exporter -> Prometheus -> alerts.yml."""
    exporter, prometheus = program("prometheus-node-exporter"), program("prometheus")
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].ecc_uncorrected_volatile = 3
    (tmp_path / "failing.json").write_text(dumps(snap))
    prom = textfiles / "gpucheck.prom"
    result = run_gpucheck(
        "doctor", "--from", str(tmp_path / "failing.json"), "-f", "prometheus", "-o", str(prom)
    )
    assert result.returncode == 1, result.stderr
    exporter_port, prometheus_port = free_port(), free_port()
    target = f"127.0.0.1:{exporter_port}"
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: ['{ALERTS / 'alerts.yml'}']\n"
        f"scrape_configs: [{{job_name: node, static_configs: [{{targets: ['{target}']}}]}}]\n"
    )
    server_args = [
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{prometheus_port}",
    ]
    with (
        serving(exporter, exporter_args(exporter_port, textfiles), exporter_port, "/", tmp_path),
        serving(prometheus, server_args, prometheus_port, "/-/ready", tmp_path) as base,
    ):

        def pending() -> list[dict[str, Any]]:
            alerts = json.loads(get(base + "/api/v1/alerts"))["data"]["alerts"]
            return [a for a in alerts if a["labels"]["alertname"] == "GpucheckCheckFailed"]

        wait_for("the GpucheckCheckFailed alert", lambda: bool(pending()), 60)
        (alert,) = pending()
        assert alert["state"] == "pending"  # for: 5m
        assert (
            alert["labels"]["check"] == "gpus.ecc-errors" and alert["labels"]["instance"] == target
        )
        assert alert["labels"]["severity"] == "critical"
        assert alert["annotations"]["summary"] == (
            f"gpucheck: gpus.ecc-errors failed on {target} (GPU-00000001-0000-0000-0000-000000000000)"
        )
        ready = json.loads(get(base + "/api/v1/query?query=gpucheck_ready"))["data"]["result"]
        assert [r["value"][1] for r in ready] == ["0"]


@pytest.mark.slow
def test_alert_rules_pass_promtool(tmp_path: Path) -> None:
    promtool = program("promtool")
    checked = run(promtool, "check", "rules", str(ALERTS / "alerts.yml"))
    assert checked.returncode == 0 and "SUCCESS: 6 rules found" in checked.stdout, checked
    tested = run(promtool, "test", "rules", "alerts_test.yml", cwd=ALERTS)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr
    # The rule tests can fail: with a longer `for`, the failing check has not fired at 6m.
    for name in ("alerts.yml", "alerts_test.yml"):
        shutil.copy(ALERTS / name, tmp_path / name)
    mutated = tmp_path / "alerts.yml"
    mutated.write_text(mutated.read_text().replace("for: 5m", "for: 10m", 1))
    assert run(promtool, "test", "rules", "alerts_test.yml", cwd=tmp_path).returncode != 0
    # A bare absent() cannot name the silent node (it fires only when every node is silent).
    rules = (ALERTS / "alerts.yml").read_text()
    silent = 'up{job="node"} == 1 unless on(instance) gpucheck_report_timestamp_seconds'
    assert silent in rules
    mutated.write_text(rules.replace(silent, "absent(gpucheck_report_timestamp_seconds)"))
    assert run(promtool, "test", "rules", "alerts_test.yml", cwd=tmp_path).returncode != 0
