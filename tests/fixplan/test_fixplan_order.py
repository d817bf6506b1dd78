"""`gpucheck fix` keeps each fix's steps in the order the fix gives them: across fixes the plan
runs lowest layer first, but never moves a step of one fix ahead of a step its own fix puts
before it. Before, a plain sort by layer printed "reset the GPU" [gpus] before "drain the node"
[job] on a machine with ECC errors, and `--format sh` reset a GPU under running jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Simulate, run_gpucheck
from sim.scenario import Scenario, h100, replace
from support import real_cases
from support.sim_doctor import doctor

from gpucheck.fixplan import report_findings
from gpucheck.fixplan.plan import PlanHost, PlanStep, build_plan
from gpucheck.model.finding import PROBLEM, Finding, Status
from gpucheck.model.fix import Change, Fix, Step, Tool
from gpucheck.model.layers import LAYER_ORDER, Layer

PY = "/home/user/.venv/bin/python"

# The ECC fix (checks/gpus/health.py), in the order it must run, as the doctor's sentence says it:
# "Drain the node; reset the GPU (or reboot): `sudo nvidia-smi -r -i 0`; then re-check: ...".
ECC_STEPS = [
    (1, "manual", "job", "drain the node", None),
    (2, "command", "gpus", "reset the GPU (or reboot)", "sudo nvidia-smi -r -i 0"),
    (3, "info", "gpus", "then re-check", "gpucheck doctor --only gpus.ecc-errors"),
    (4, "hardware", "gpus", "errors that return after a reset mean the GPU needs replacing (RMA)",
     None),
]  # fmt: skip


@pytest.fixture
def ecc_report(simulate: Simulate, tmp_path: Path) -> Path:
    """`doctor --json` of a simulated one-H100 machine with 2 uncorrectable ECC errors since boot
    (the `ecc-errors` machine of `python -m tests.sim`), saved, so the plan is of its findings
    alone (the checks that read this host's own disks are skipped by sim_doctor)."""
    machine = simulate(Scenario(gpus=[replace(h100(0), ecc_uncorrected=(2, 2))]))
    report = doctor(machine).report
    assert [f["id"] for f in report["findings"] if f["status"] in ("warn", "fail")] == [
        "gpus.ecc-errors"
    ]
    path = tmp_path / "ecc.json"
    path.write_text(json.dumps(report))
    return path


def fix(*args: str) -> str:
    done = run_gpucheck("fix", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_ecc_plan_drains_the_node_before_resetting_the_gpu(ecc_report: Path) -> None:
    steps = json.loads(fix("--from", str(ecc_report), "--json"))["steps"]
    assert [(s["number"], s["kind"], s["layer"], s["text"], s["command"]) for s in steps] == (
        ECC_STEPS
    )
    assert [s["why_not_local"] for s in steps] == [
        "a person's change: no one command makes it",
        "changes the gpus, outside the Python environment",
        "changes nothing: a check to run yourself",  # not "changes the gpus"
        "physical work on the machine",
    ]

    text = fix("--from", str(ecc_report)).splitlines()
    assert [line for line in text if line[:3].strip().rstrip(".").isdigit()] == [
        " 1. [job] drain the node",
        " 2. [gpus] reset the GPU (or reboot)",
        " 3. [info] then re-check",
        " 4. [gpus] errors that return after a reset mean the GPU needs replacing (RMA)",
    ]

    script = fix("--from", str(ecc_report), "--format", "sh")
    body = script[script.index("set -e\n") :].splitlines()
    assert body == [
        "set -e",
        "",
        "# 1. [job] drain the node",
        "#    fixes gpus.ecc-errors",
        "#    (manual: a person's change: no one command makes it)",
        "",
        "# 2. [gpus] reset the GPU (or reboot)",
        "#    fixes gpus.ecc-errors",
        "#    changes the gpus, outside the Python environment",
        "sudo nvidia-smi -r -i 0",
        "",
        "# 3. [info] then re-check",
        "#    fixes gpus.ecc-errors",
        "#    changes nothing: a check to run yourself",
        "gpucheck doctor --only gpus.ecc-errors",
        "",
        "# 4. [gpus] errors that return after a reset mean the GPU needs replacing (RMA)",
        "#    fixes gpus.ecc-errors",
        "#    (hardware: physical work on the machine)",
    ]


def test_fix_on_the_ecc_machine_itself_keeps_the_order(simulate: Simulate) -> None:
    """`gpucheck fix` probing the machine (no --from): the ECC steps in the fix's order (other
    steps may sit between them on a host whose own disks the CUDA checks read)."""
    machine = simulate(Scenario(gpus=[replace(h100(0), ecc_uncorrected=(2, 2))]))
    done = run_gpucheck("fix", "--json", env=machine.env)
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)["steps"]
    ecc = [(s["kind"], s["text"]) for s in steps if "gpus.ecc-errors" in s["findings"]]
    assert ecc == [(kind, text) for _, kind, _, text, _ in ECC_STEPS]


# --- the rule, on built findings -------------------------------------------------------------


def finding(id: str, section: Layer, *steps: Step) -> Finding:
    return Finding(id, section, Status.FAIL, id, fix=Fix.of(*steps))


def pip(command: str, *changes: Change) -> Step:
    return Step.run("", command, Tool.PIP, changes=changes, environment=PY)


def said(steps: list[PlanStep]) -> list[tuple[str, str]]:
    return [(s.layer.value, s.command or s.text) for s in steps]


def test_across_fixes_lower_layers_still_come_first_where_no_fix_says_otherwise() -> None:
    drain = Step.manual("drain the node", Layer.JOB)
    reset = Step.run("reset the GPU", "sudo nvidia-smi -r -i 0", layer=Layer.GPUS)
    driver = Step.run("", "sudo apt-get install -y nvidia-driver-570", Tool.APT)
    reboot = Step.reboot()
    torch = pip("pip install 'torch==2.5.1'", Change("torch", "2.4.0", "2.5.1"))
    plan = build_plan(
        [
            finding("torch.old", Layer.FRAMEWORKS, torch),
            finding("gpu.ecc", Layer.GPUS, drain, reset),
            finding("driver.old", Layer.DRIVER, driver, reboot),  # reboot [system] after it
        ],
        PlanHost("h"),
        [PY],
    )
    assert said(plan.steps) == [
        ("driver", "sudo apt-get install -y nvidia-driver-570"),
        ("system", "reboot"),
        ("frameworks", "pip install 'torch==2.5.1'"),
        ("job", "drain the node"),
        ("gpus", "sudo nvidia-smi -r -i 0"),
    ]
    assert [f.fixed_by for f in plan.findings] == [[3], [4, 5], [1, 2]]


def test_a_step_merged_into_anothers_keeps_its_place_in_its_own_fix() -> None:
    exact = pip("pip install 'numpy==1.26.4'", Change("numpy", "2.1.0", "1.26.4"))
    below = pip("pip install 'numpy<2'", Change("numpy", "2.1.0", None, "<2"))
    clean = Step.run("clear the cache", "rm -rf ~/.cache/torch_extensions", layer=Layer.SYSTEM)
    plan = build_plan(
        [
            finding("a", Layer.FRAMEWORKS, exact),
            finding("b", Layer.FRAMEWORKS, below, clean),  # its install is a's, then the clean
        ],
        PlanHost("h"),
        [PY],
    )
    assert said(plan.steps) == [
        ("frameworks", "pip install 'numpy==1.26.4'"),
        ("system", "rm -rf ~/.cache/torch_extensions"),
    ]


def test_two_fixes_sharing_steps_in_opposite_orders_plan_each_step_once() -> None:
    stop = Step.run("stop the service", "sudo systemctl stop nvidia-persistenced")
    unload = Step.run("unload the module", "sudo rmmod nvidia_uvm")
    plan = build_plan(
        [finding("a", Layer.DRIVER, stop, unload), finding("b", Layer.DRIVER, unload, stop)],
        PlanHost("h"),
        [],
    )
    assert said(plan.steps) == [
        ("driver", "sudo systemctl stop nvidia-persistenced"),  # the first planned gives way
        ("driver", "sudo rmmod nvidia_uvm"),
    ]


def test_a_step_a_fix_repeats_is_planned_each_time_it_is_needed() -> None:
    # driver.kernel-module on Secure Boot (canonical-ngd-62): enrol the key, reboot; else
    # install the driver, reboot. Before, the plan kept one reboot, ahead of both.
    enrol = Step.run("enrol the key", "sudo mokutil --import /var/lib/dkms/mok.pub")
    install = Step.run("install the driver", "sudo ubuntu-drivers install")
    plan = build_plan(
        [
            finding("driver.kernel-module", Layer.DRIVER, enrol, Step.reboot(), install,
                    Step.reboot()),
            finding("driver.nvml", Layer.DRIVER, Step.reboot()),  # shares the first reboot
        ],
        PlanHost("h"),
        [],
    )  # fmt: skip
    assert [(s.command or s.text, s.findings) for s in plan.steps] == [
        ("sudo mokutil --import /var/lib/dkms/mok.pub", ["driver.kernel-module"]),
        ("reboot", ["driver.kernel-module", "driver.nvml"]),
        ("sudo ubuntu-drivers install", ["driver.kernel-module"]),
        ("reboot", ["driver.kernel-module"]),
    ]


# --- every real case ---------------------------------------------------------------------------


def _is(step: Step, planned: PlanStep) -> bool:
    """The plan's step is this one: by its command and interpreter, or by kind and sentence."""
    if step.command is not None:
        return planned.command == step.command and planned.environment == step.environment
    return planned.command is None and (planned.kind, planned.text) == (step.kind, step.text)


def _places(steps: list[Step], plan: list[PlanStep]) -> list[int]:
    """Where the plan has each step (the nth time a fix repeats a step: the nth such step of the
    plan); a step merged into another's, or a conflict, has no place of its own."""
    out = []
    for i, step in enumerate(steps):
        again = sum(1 for s in steps[:i] if s == step)
        found = [at for at, planned in enumerate(plan) if _is(step, planned)]
        if again < len(found):
            out.append(found[again])
        else:  # only a package change can be merged into another step or left out
            assert step.changes, f"not planned: {step.sentence()}"
    return out


def _reports() -> list[tuple[str, list[Finding]]]:
    out = []
    for case in real_cases.CASES:
        report: dict[str, Any] = real_cases.diagnose(case)
        assert "error" not in report, (case["_slug"], report)
        findings = report_findings(json.dumps(report).encode())
        assert findings is not None, case["_slug"]
        out.append((case["_slug"], findings))
    return out


def test_every_real_cases_plan_keeps_each_fixs_step_order() -> None:
    checked = against_layers = 0
    for slug, findings in _reports():
        plan = build_plan(findings, PlanHost("h"), []).steps
        for f in findings:
            if f.status not in PROBLEM or f.fix is None:
                continue
            steps = [s for s in f.fix.steps if s.option == 0]
            places = _places(steps, plan)
            assert places == sorted(set(places)), (slug, f.id, [s.sentence() for s in steps])
            if len(places) >= 2:
                checked += 1
            layers = [LAYER_ORDER.index(plan[p].layer) for p in places]
            if layers != sorted(layers):
                against_layers += 1  # a sort by layer would have reordered this fix
    # Counted on this corpus (101 cases, 2026-11-25): 44 fixes of two steps or more, 19 of
    # them in an order a sort by layer breaks (drain [job], then reset [gpus]; install a
    # driver, then reboot [system]; stop the holder [job], then change the mode [gpus]).
    assert checked >= 40
    assert against_layers >= 15
