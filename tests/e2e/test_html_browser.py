"""Every HTML output opened in a real browser (headless Chromium, tests/support/browser.py):
no console error, no network request, the findings and commands in the DOM, no horizontal
scroll on a phone (390 x 844) or a desktop (1280 x 900), screenshots that are not blank, and
no serious or critical axe-core violation. The doctor's page comes from a simulated machine
(tests/sim) with an uncorrectable ECC error on one GPU.

GPUCHECK_SCREENSHOTS=DIR keeps the screenshots there (docs/images/ is made this way)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from conftest import Simulate, run_gpucheck
from sim.scenario import Scenario, h100, replace
from support import builders
from support.bench_runs import two_h100_report
from support.browser import Browser, axe_source, browser, inked_share
from support.builders import workstation
from support.evaluate import run_checks
from support.framework_builders import on, tensorflow_cpu
from support.sim_doctor import HOST_DEPENDENT
from support.watch_run import FIXTURES

from gpucheck.bench.report import FORMATS as BENCH_FORMATS
from gpucheck.fixplan import diagnose, plan_for
from gpucheck.fixplan.render import FORMATS as PLAN_FORMATS
from gpucheck.inputs import load_compat
from gpucheck.model.decoding import to_json
from gpucheck.report.core import Report

pytestmark = pytest.mark.slow

PHONE, DESKTOP = (390, 844, True), (1280, 900, False)
SERIOUS = ("serious", "critical")


def _run(*args: str, env: dict[str, str] | None = None) -> str:
    result = run_gpucheck(*args, env=env)
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


def _pages(simulate: Simulate, folder: Path) -> dict[str, tuple[Path, list[str]]]:
    """Each command's page, and the texts its DOM must hold."""
    machine = simulate(Scenario(gpus=[replace(h100(0), ecc_uncorrected=(3, 3)), h100(1)]))
    skips = [a for check_id in HOST_DEPENDENT for a in ("--skip", check_id)]
    report = json.loads(_run("doctor", "--json", *skips, env=machine.env))
    commands = [
        s["command"]
        for f in report["findings"]
        for s in (f["fix"] or {}).get("steps", [])
        if s["command"] is not None
    ]
    problems = [f["title"] for f in report["findings"] if f["status"] in ("warn", "fail")]
    assert commands and problems
    pages: dict[str, tuple[Path, list[str]]] = {}

    def page(name: str, html: str, wanted: list[str]) -> None:
        path = folder / f"{name}.html"
        path.write_text(html, encoding="utf-8")
        pages[name] = (path, wanted)

    page("doctor", _run("doctor", "--format", "html", *skips, env=machine.env), problems + commands)
    log = str(FIXTURES / "nvsmi-h100-query-gpu.csv")
    page("watch", _run("watch", "--from", log, "--format", "html"), ["GPU 0"])
    bench = io.StringIO()
    BENCH_FORMATS["html"].write(two_h100_report(), bench)
    page("bench", bench.getvalue(), ["GPU-to-GPU copies"])
    reports = folder / "reports"
    reports.mkdir()
    for name, ecc in (("node-a", 0), ("node-b", 3)):
        snap = builders.h100_node(4)
        snap.system.hostname = name
        snap.nvml.gpus[2].ecc_uncorrected_volatile = ecc
        text = to_json(Report(snap, run_checks(snap)).to_dict()).decode()
        (reports / f"{name}.json").write_text(text)
    page("fleet", _run("fleet", str(reports), "--format", "html"), ["gpus.ecc-errors"])
    fit = _run("fit", "--params", "7B", "--train", "--gpu-memory", "80GiB", "--format", "html")
    page("fit", fit, ["does not fit"])
    oom = "RuntimeError: CUDA error: out of memory"
    page("explain", _run("explain", "--text", oom, "--format", "html"), [oom])
    snap = on(workstation(), tensorflow_cpu())
    plan = io.StringIO()
    PLAN_FORMATS["html"].write(plan_for(snap, diagnose(snap, load_compat(None)), None), plan)
    page("fix", plan.getvalue(), ["pip uninstall -y tensorflow-cpu"])
    return pages


def _check(b: Browser, path: Path, size: tuple[int, int, bool], wanted: list[str]) -> bytes:
    width, height, mobile = size
    session = b.open(path.as_uri(), width, height, mobile)
    text = b.evaluate("document.body.innerText", session)
    codes = b.evaluate(
        "[...document.querySelectorAll('pre code')].map(e => e.textContent)", session
    )
    for want in wanted:
        assert want in text or want in codes, (path.name, want)
    overflow = b.evaluate("document.documentElement.scrollWidth - window.innerWidth", session)
    assert overflow <= 0, f"{path.name} at {width}px: {overflow}px of horizontal scroll"
    shot = b.screenshot(session)
    assert inked_share(shot) > 0.02, f"{path.name} at {width}px looks blank"
    events = b.session_events(session)
    requests = [
        e["params"]["request"]["url"]
        for e in events
        if e["method"] == "Network.requestWillBeSent"
        and e["params"]["request"]["url"] != path.as_uri()
    ]
    assert requests == [], requests
    errors = [
        e["params"]
        for e in events
        if e["method"] == "Runtime.exceptionThrown"
        or (e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
        or (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
    ]
    assert errors == [], errors
    if not mobile:
        b.evaluate(axe_source(), session)
        found = b.evaluate(
            "axe.run(document).then(r => r.violations.map(v => [v.impact, v.id, v.help, "
            "v.nodes.map(n => n.target.join(' ')).slice(0, 3)]))",
            session,
        )
        serious = [v for v in found if v[0] in SERIOUS]
        assert serious == [], (path.name, serious)
    return shot


def test_every_html_output_in_a_real_browser(simulate: Simulate, tmp_path: Path) -> None:
    keep = os.environ.get("GPUCHECK_SCREENSHOTS")
    with browser() as b:
        for name, (path, wanted) in _pages(simulate, tmp_path).items():
            for label, size in (("phone", PHONE), ("desktop", DESKTOP)):
                shot = _check(b, path, size, wanted)
                if keep:
                    (Path(keep) / f"{name}-{label}.png").write_bytes(shot)
