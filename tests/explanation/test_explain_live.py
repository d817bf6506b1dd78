"""`gpucheck explain` joins this machine's facts where a finding needs them: probed now (the
simulated machine of tests/sim, through GPUCHECK_ROOT and the fake NVML), not at all with
--no-probe or where no finding needs a fact; and writes JUnit XML as the doctor does."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

from conftest import Simulate, run_gpucheck
from sim.scenario import Scenario, h100

NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device"


def test_a_finding_that_needs_facts_probes_this_machine_and_names_them(
    simulate: Simulate,
) -> None:
    machine = simulate(Scenario(gpus=[h100(0)]))
    done = run_gpucheck("explain", "--json", "--text", NO_KERNEL, env=machine.env)
    assert done.returncode == 1, done.stderr
    source = json.loads(done.stdout)["source"]
    assert source["facts_from"].startswith("this machine, probed now (")
    assert "GPU 0: NVIDIA H100 80GB HBM3, compute capability 9.0" in source["facts"]
    evidence = json.loads(done.stdout)["findings"][0]["evidence"]
    assert any(
        e.startswith("GPU 0 (NVIDIA H100 80GB HBM3): compute capability 9.0") for e in evidence
    )


def test_no_probe_joins_no_facts(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[h100(0)]))
    done = run_gpucheck("explain", "--no-probe", "--json", "--text", NO_KERNEL, env=machine.env)
    source = json.loads(done.stdout)["source"]
    assert source["facts_from"] is None and source["facts"] == []
    evidence = json.loads(done.stdout)["findings"][0]["evidence"]
    assert any(e.startswith("undecided: the GPU's compute capability decides") for e in evidence)


def test_junit_has_a_test_case_per_finding_and_the_exit_code() -> None:
    text = "NVRM: Xid (PCI:0000:01:00): 95, pid=1, Uncontained\nRuntimeError: CUDA error: out of memory"
    done = run_gpucheck("explain", "--no-probe", "--format", "junit", "--text", text)
    assert done.returncode == 1
    suite = ET.fromstring(done.stdout).find("testsuite")
    assert suite is not None and suite.get("name") == "gpucheck explain"
    assert (suite.get("tests"), suite.get("failures")) == ("2", "2")
    cases = [c.get("name", "") for c in suite.iter("testcase")]
    assert sorted(cases) == ["explain.cuda.out-of-memory", "explain.xid.95"]
    exit_code = suite.find("properties/property[@name='exit_code']")
    assert exit_code is not None and exit_code.get("value") == "1"


def test_fix_plans_the_findings_typed_fixes_as_gpucheck_fix_does() -> None:
    text = (
        "NVRM: Xid (PCI:0000:01:00): 95, pid=1, Uncontained\n"
        "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not "
        "installed. Falling back to cpu."
    )
    done = run_gpucheck("explain", "--no-probe", "--fix", "--json", "--text", text)
    assert done.returncode == 1, done.stderr
    plan = json.loads(done.stdout)
    commands = [step.get("command") for step in plan["steps"]]
    # NVIDIA's RESET_GPU, from the catalog, for the bus id the line names
    assert "sudo nvidia-smi -r -i 00000000:01:00.0" in commands
    assert "pip install -U 'jax[cuda12]'" in commands
    refused = run_gpucheck("explain", "--fix", "--format", "junit", "--text", text)
    assert refused.returncode == 2
    assert refused.stderr.strip() == "gpucheck: explain --fix: the plan is text or json, not junit"
