"""Running the real `gpucheck` command on a simulated GPU machine (tests/sim) and reading its
report back, for the simulator tests. The CUDA toolkit, runtime and cuDNN checks look at this
machine's own disks (/usr/local/cuda, ldconfig, site-packages), not at the simulated machine,
so the end-to-end runs skip them (HOST_DEPENDENT)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest
from conftest import run_gpucheck
from sim.scenario import (
    Machine,
)

from gpucheck.report.schema import report_schema

HOST_DEPENDENT = ("cuda.toolkit", "cuda.runtime-libraries", "cudnn")
ROOT_HOOK = (
    "gpucheck must read /proc, /sys, /dev and /etc under $GPUCHECK_ROOT (ProbeOptions.root "
    "defaulting to Path(os.environ.get('GPUCHECK_ROOT') or '/') in gpucheck/probes/__init__.py)"
)


# --- running the doctor -----------------------------------------------------------------------


@dataclass
class Doctor:
    returncode: int
    report: dict[str, Any]
    stderr: str
    seconds: float

    @property
    def findings(self) -> dict[str, dict[str, Any]]:
        return {f["id"]: f for f in self.report["findings"]}

    def finding(self, check_id: str) -> dict[str, Any]:
        found = self.findings.get(check_id)
        assert found is not None, f"no {check_id} finding in {sorted(self.findings)}"
        return found

    def status(self, check_id: str) -> str | None:
        found = self.findings.get(check_id)
        return found["status"] if found else None

    def text(self, check_id: str) -> str:
        """Title, evidence and fix of one finding, as one string to search."""
        f = self.finding(check_id)
        return "\n".join([f["title"], *f["evidence"], (f["fix"] or {}).get("text", "")])

    def statuses(self, *wanted: str) -> set[str]:
        return {i for i, f in self.findings.items() if f["status"] in wanted}

    @property
    def snapshot(self) -> dict[str, Any]:
        return self.report["snapshot"]  # type: ignore[no-any-return]

    def gpu(self, index: int) -> dict[str, Any]:
        return self.snapshot["nvml"]["gpus"][index]  # type: ignore[no-any-return]

    def probe(self, name: str) -> dict[str, Any]:
        return next(p for p in self.snapshot["probes"] if p["name"] == name)


def _on_the_simulated_machine(report: dict[str, Any], machine: Machine) -> None:
    system = report["snapshot"]["system"]
    want = sorted(g.pci_address for g in machine.scenario.gpus)
    got = sorted(d["address"] for d in system["pci_gpus"])
    if got != want:
        pytest.fail(
            f"gpucheck did not read the simulated machine's files: PCI GPUs {got}, expected "
            f"{want} from {machine.root}. {ROOT_HOOK}.",
            pytrace=False,
        )
    assert system["nvidia_module_version"] == machine.scenario.kernel_module_version
    library = report["snapshot"]["nvml"]["library_path"]
    assert library is None or library.startswith(str(machine.lib_dir)), library


def doctor(
    machine: Machine, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> Doctor:
    """`gpucheck doctor --json ARGS` on the simulated machine."""
    skips = [a for check_id in HOST_DEPENDENT for a in ("--skip", check_id)]
    start = time.monotonic()
    result = run_gpucheck(
        "doctor", "--json", *skips, *args, env={**machine.env, **(env or {})}, timeout=timeout
    )
    seconds = time.monotonic() - start
    assert result.returncode in (0, 1), (result.returncode, result.stderr)
    try:
        report = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"not JSON: {result.stdout[:500]!r}\nstderr: {result.stderr}")
    jsonschema.Draft202012Validator(report_schema()).validate(report)
    assert report["summary"]["exit_code"] == result.returncode
    assert "Traceback" not in result.stderr, result.stderr
    _on_the_simulated_machine(report, machine)
    return Doctor(result.returncode, report, result.stderr, seconds)


def doctor_text(machine: Machine, *args: str, env: dict[str, str] | None = None) -> str:
    """The human report (no colour: not a terminal)."""
    skips = [a for check_id in HOST_DEPENDENT for a in ("--skip", check_id)]
    result = run_gpucheck("doctor", *skips, *args, env={**machine.env, **(env or {})})
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


EVERYTHING_PASSES = {
    "system.gpu-present",
    "system.nouveau",
    "driver.kernel-module",
    "driver.nvml",
    "driver.device-nodes",
    "driver.uvm",
    "driver.persistence-mode",
    "gpus.lost",
    "gpus.ecc-errors",
    "gpus.memory-remapping",
    "gpus.throttling",
    "gpus.pcie-link",
    "gpus.xid-events",
    "gpus.compute-mode",
    "gpus.memory-in-use",
    "cuda.driver-api",
}
