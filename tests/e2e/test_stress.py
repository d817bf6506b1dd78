"""Many runs at once, on a busy machine, where a rare race shows.

Hundreds of `doctor` runs on a simulated machine whose NVML crashes in every run: two runs in
about 1470 once ended in SIGSEGV with nothing in the report. The parent must never crash; a
child's crash is that child's, recorded in the report. Every run has faulthandler on
(`python -X faulthandler`): if the parent ever died of a signal, its stderr would hold the
Python stack of every thread at that moment, and the test shows it.

Dozens of `fleet` runs over thousands of reports: about one run in ten once hung forever after
the last report was read, shutting its worker pool down, and wrote nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import Simulate
from sim import scenario as sim
from support import builders
from support import framework_builders as fb
from support.evaluate import run_checks

from gpucheck.model.decoding import to_json
from gpucheck.model.snapshot import HostIdentity
from gpucheck.report.core import Report

RUNS = 300  # at most; fewer if the time bound comes first
AT_LEAST = 100
BOUND_S = 150.0  # the whole test: well under 3 minutes on a 2-core machine
PARALLEL = max(4, (os.cpu_count() or 1) * 2)  # more runs than cores: each waits on the others


def one_doctor(env: dict[str, str], faulthandler: bool = False) -> tuple[int, str, str, float]:
    started = time.monotonic()
    debug = ["-X", "faulthandler"] if faulthandler else []  # the parent's only (not its probes)
    proc = subprocess.run(
        [sys.executable, *debug, "-m", "gpucheck", "doctor", "--json", "--timeout", "20"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started


@pytest.mark.slow
def test_hundreds_of_doctor_runs_under_load_never_crash_the_parent(simulate: Simulate) -> None:
    machine = simulate(sim.h100_node(8, faults=[sim.crash("nvmlDeviceGetTemperature", 3)]))
    env = {**os.environ, **machine.env}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    deadline = time.monotonic() + BOUND_S
    results: list[tuple[int, str, str, float]] = []
    started = iter(range(RUNS))  # (next() on it is atomic under the GIL: a run's ticket)

    def worker() -> None:
        while time.monotonic() < deadline and next(started, None) is not None:
            results.append(one_doctor(env, faulthandler=True))

    with ThreadPoolExecutor(PARALLEL) as pool:
        for future in [pool.submit(worker) for _ in range(PARALLEL)]:
            future.result()
    crashed_parents = [r for r in results if r[0] < 0]
    assert not crashed_parents, "the parent died of a signal:\n" + "\n----\n".join(
        f"exit {code}\n{err[-4000:]}" for code, _, err, _ in crashed_parents[:3]
    )
    assert len(results) >= AT_LEAST, f"only {len(results)} runs in {BOUND_S} s"
    seconds = sorted(r[3] for r in results)
    print(f"{len(results)} runs, {PARALLEL} at a time: median {seconds[len(seconds) // 2]:.1f} s")
    for code, out, err, _ in results:
        assert code == 0, (code, err[-2000:])  # a crashed NVML call is a warning, not a failure
        assert "Traceback" not in err and "Fatal Python error" not in err, err[-2000:]
        child_crash_recorded(json.loads(out), code)


def child_crash_recorded(report: dict[str, Any], code: int) -> None:
    """The child's crash is the child's: the probe run names it (signal, the call, the GPU)
    as data, the doctor's report is whole and its exit code is the report's."""
    assert report["summary"]["exit_code"] == code
    nvml = next(p for p in report["snapshot"]["probes"] if p["name"] == "nvml")
    assert nvml["status"] == "crashed", nvml
    assert nvml["failure"] == {
        "how": "crashed",
        "stage": "nvmlDeviceGetTemperature gpu=3",
        "signal": "SIGSEGV",
        "exit_code": None,
        "stderr_tail": "fake libnvidia-ml: simulated crash in nvmlDeviceGetTemperature",
    }
    assert "retried without nvmlDeviceGetTemperature" in nvml["error"], nvml["error"]
    assert [g["index"] for g in report["snapshot"]["nvml"]["gpus"]] == list(range(8))
    status = {f["id"]: f["status"] for f in report["findings"]}
    assert status["driver.nvml"] == "warn"


def test_a_crashed_nvml_call_is_recorded_as_the_childs_crash(simulate: Simulate) -> None:
    """Before: the probe run said "crashed" in words, but its `failure` record (what checks
    and scripts read) was the retry's, None: the crash was recorded nowhere as data."""
    machine = simulate(sim.h100_node(8, faults=[sim.crash("nvmlDeviceGetTemperature", 3)]))
    env = {**os.environ, **machine.env}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    code, out, err, _ = one_doctor(env)
    assert code == 0 and err == "", err
    child_crash_recorded(json.loads(out), code)


FLEET_REPORTS = 3000  # enough chunks (256 reports each) for every worker to take several
FLEET_RUNS = 24
FLEET_PARALLEL = 6  # runs at once, 4 workers each: far more processes than cores
FLEET_RUN_S = 240  # one run; a run that ends does so in seconds


@pytest.mark.slow
def test_dozens_of_fleet_runs_under_load_all_finish_with_the_whole_table(tmp_path: Path) -> None:
    snap = fb.on(builders.h100_node(4), fb.torch_cu124())  # a healthy node
    snap.system.hostname = "n"
    snap.system.host = HostIdentity(host_id="mid-n", host_id_source="machine-id")
    text = to_json(Report(snap, run_checks(snap), created_at="2026-11-21T10:00:00+00:00").to_dict())
    for n in range(FLEET_REPORTS):
        host = text.replace(b'"hostname": "n"', f'"hostname": "n{n:04d}"'.encode())
        host = host.replace(b'"host_id": "mid-n"', f'"host_id": "mid-{n}"'.encode())
        (tmp_path / f"{n:04d}.json").write_bytes(host)

    def one_fleet(_: int) -> tuple[int | str, str, str]:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "gpucheck", "fleet", str(tmp_path), "--jobs", "4"],
                capture_output=True,
                text=True,
                timeout=FLEET_RUN_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            return "hung", str(exc.stdout or ""), str(exc.stderr or "")
        return proc.returncode, proc.stdout, proc.stderr

    with ThreadPoolExecutor(FLEET_PARALLEL) as pool:
        results = list(pool.map(one_fleet, range(FLEET_RUNS)))
    hung = [r for r in results if r[0] == "hung"]
    assert not hung, f"{len(hung)} of {FLEET_RUNS} fleet runs never ended"
    for code, out, err in results:
        assert (code, err) == (0, ""), err[-2000:]
        assert "3000 report(s), 3000 host(s): 3000 ready, 0 not ready" in out, out[-2000:]
