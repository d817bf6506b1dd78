"""The fix record (model/fix.py): what checks build, what the report carries, how 2.x read."""

from __future__ import annotations

import io
import json

import msgspec
from support import builders
from support.evaluate import run_checks

from gpucheck import checks
from gpucheck.checks.registry import Check
from gpucheck.model.decoding import from_dict, to_dict
from gpucheck.model.finding import Finding, FindingV2, Outcome, Status
from gpucheck.model.fix import OR, Change, Fix, Step, StepKind, Tool
from gpucheck.model.layers import Layer
from gpucheck.report.core import Report
from gpucheck.report.formats import render_junit, render_prometheus

RESET = Step.run("reset the GPU", "sudo nvidia-smi -r -i 1")


def test_steps_render_in_order_with_their_commands_and_the_other_ways_after_or() -> None:
    fix = Fix.of(
        Step.manual("drain the node", Layer.JOB),
        RESET,
        OR,
        Step.reboot(),
        OR,
        Step.set_env("CUDA_VISIBLE_DEVICES", "0", "use the other GPU"),
    )
    assert fix.text == (
        "Drain the node; reset the GPU: `sudo nvidia-smi -r -i 1`; or reboot; "
        "or use the other GPU: `export CUDA_VISIBLE_DEVICES=0`"
    )
    assert [s.option for s in fix.steps] == [0, 0, 1, 2]
    assert [s.kind for s in fix.steps] == [
        StepKind.MANUAL,
        StepKind.COMMAND,
        StepKind.REBOOT,
        StepKind.COMMAND,
    ]
    assert fix.commands == ["sudo nvidia-smi -r -i 1", "export CUDA_VISIBLE_DEVICES=0"]
    assert fix.steps[3].tool is Tool.ENV
    assert Fix.of(OR, Step.info("see above"), None).text == "See above"  # a leading OR, a None
    names = Fix.of(Step.reboot(), OR, Step.manual("TensorFlow 2.10 on native Windows"))
    assert names.text == "Reboot; or TensorFlow 2.10 on native Windows"  # a name keeps its case


def test_a_step_shared_between_fixes_is_copied_not_changed() -> None:
    first = Fix.of(Step.reboot(), OR, RESET)
    second = Fix.of(RESET)
    assert first.steps[1].option == 1 and second.steps[0].option == 0
    assert RESET.option == 0 and RESET.layer is None


def test_joined_fixes_keep_each_step_once() -> None:
    a = Fix.of(RESET, Step.manual("drain the node"))
    b = Fix.of(RESET)
    joined = Fix.joined([a, b, a])
    assert joined is not None
    assert joined.text == (
        "Reset the GPU: `sudo nvidia-smi -r -i 1`; drain the node; "
        "reset the GPU: `sudo nvidia-smi -r -i 1`"
    )
    assert [s.text for s in joined.steps] == ["reset the GPU", "drain the node"]
    assert Fix.joined([]) is None


def test_a_fix_survives_the_json_round_trip_strictly() -> None:
    step = Step.run(
        "install PyTorch 2.5.1 for CUDA 12.1",
        "pip install 'torch==2.5.1' --index-url https://download.pytorch.org/whl/cu121",
        Tool.PIP,
        changes=[Change("torch", "2.5.1+cpu", "2.5.1+cu121"), Change("torchvision", None, None)],
        environment="/srv/env/bin/python",
        layer=Layer.FRAMEWORKS,
    )
    fix = Fix.of(step)
    data = json.loads(msgspec.json.encode(fix))
    assert data["steps"][0]["changes"][0] == {
        "name": "torch",
        "from_version": "2.5.1+cpu",
        "to_version": "2.5.1+cu121",
        "requirement": None,
        "remove": False,
    }
    assert data["steps"][0]["tool"] == "pip" and data["steps"][0]["layer"] == "frameworks"
    assert from_dict(Fix, data) == fix


def test_a_2_x_finding_decodes_and_its_commands_become_shell_steps() -> None:
    v2 = {
        "id": "gpus.ecc-errors",
        "section": "gpus",
        "status": "fail",
        "title": "Uncorrectable ECC memory errors on 1 GPU(s)",
        "evidence": [],
        "fix": {
            "text": "Drain the node; reset the GPU (`sudo nvidia-smi -r -i 3`) or reboot",
            "commands": ["sudo nvidia-smi -r -i 3"],
        },
        "subjects": {"gpus": [{"index": 3}], "environments": [], "paths": []},
    }
    finding = from_dict(FindingV2, v2).upgraded()
    assert finding.fix is not None
    assert finding.fix.text == "Drain the node; reset the GPU (`sudo nvidia-smi -r -i 3`) or reboot"
    [step] = finding.fix.steps
    assert (step.kind, step.command, step.tool) == (
        StepKind.COMMAND,
        "sudo nvidia-smi -r -i 3",
        Tool.SHELL,
    )
    v2["fix"] = {"text": "See the problems above.", "commands": []}
    [only] = from_dict(FindingV2, v2).upgraded().fix.steps  # type: ignore[union-attr]
    assert (only.kind, only.text, only.command) == (
        StepKind.MANUAL,
        "See the problems above.",
        None,
    )


def test_the_runner_gives_unplaced_steps_their_checks_layer() -> None:
    shared = Step.manual("look at the fans")
    target = next(c for c in checks.all_checks() if c.id == "gpus.throttling")

    def hot(ctx: checks.Context) -> Outcome | None:
        return Outcome.warn("hot", fix=Fix.of(shared, Step.reboot()))

    patched = [
        Check(c.id, c.section, c.summary, hot) if c is target else c for c in checks.all_checks()
    ]
    found = next(
        f
        for f in checks.run(checks.Context(builders.h100_node(1)), patched)
        if f.id == "gpus.throttling"
    )
    assert found.fix is not None
    assert [s.layer for s in found.fix.steps] == [Layer.GPUS, Layer.SYSTEM]
    assert shared.layer is None  # the check's own step object is left alone


def _ecc_report() -> Report:
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].ecc_uncorrected_volatile = 3
    return Report(snap, run_checks(snap), created_at="2026-11-21T10:00:00+00:00")


def test_junit_carries_each_step_as_a_property() -> None:
    out = io.StringIO()
    render_junit(_ecc_report(), out)
    xml = out.getvalue()
    assert '<property name="fix.1.manual" value="drain the node" />' in xml
    assert '<property name="fix.2.command.shell" value="sudo nvidia-smi -r -i 1" />' in xml
    assert (
        '<property name="fix.4.hardware" value="errors that return after a reset mean the GPU '
        'needs replacing (RMA)" />'
    ) in xml


def test_prometheus_counts_a_problems_recommended_steps_by_kind() -> None:
    out = io.StringIO()
    render_prometheus(_ecc_report(), out)
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("gpucheck_fix_steps{")]
    assert lines == [
        'gpucheck_fix_steps{check="gpus.ecc-errors",kind="command"} 1',
        'gpucheck_fix_steps{check="gpus.ecc-errors",kind="hardware"} 1',
        'gpucheck_fix_steps{check="gpus.ecc-errors",kind="info"} 1',  # the re-check only reads
        'gpucheck_fix_steps{check="gpus.ecc-errors",kind="manual"} 1',
    ]


def test_findings_keep_fix_steps_in_their_json() -> None:
    finding = next(f for f in _ecc_report().findings if f.id == "gpus.ecc-errors")
    data = to_dict(finding)
    assert data["status"] == "fail" and data["error"] is None
    assert [s["kind"] for s in data["fix"]["steps"]] == ["manual", "command", "info", "hardware"]
    assert data["fix"]["steps"][1]["gpus"][0]["index"] == 1
    assert from_dict(Finding, data).status is Status.FAIL


def test_a_driver_is_installed_with_the_machines_own_package_manager() -> None:
    from packaging.version import Version

    from gpucheck.checks.fixes import install_driver

    want = Version("580.65.06")
    expected = {
        "Ubuntu 22.04.5 LTS": ("sudo apt install nvidia-driver-580", Tool.APT),
        "Debian GNU/Linux 12 (bookworm)": ("sudo apt install nvidia-driver", Tool.APT),
        "Rocky Linux 9.4 (Blue Onyx)": ("sudo dnf module install nvidia-driver:580-dkms", Tool.DNF),
        "Arch Linux": (
            "curl -fLO https://download.nvidia.com/XFree86/Linux-x86_64/580.65.06/"
            "NVIDIA-Linux-x86_64-580.65.06.run && sudo sh NVIDIA-Linux-x86_64-580.65.06.run",
            Tool.SHELL,
        ),
    }
    for release, (command, tool) in expected.items():
        snap = builders.h100_node(1)
        snap.system.os_release = release
        step = install_driver(checks.Context(snap), "upgrade the driver", want)
        assert (step.command, step.tool, step.layer) == (command, tool, Layer.DRIVER), release
        [change] = step.changes
        exact = tool is Tool.SHELL  # the runfile installs exactly that version
        assert (change.from_version, change.to_version, change.requirement) == (
            "590.48.01",
            "580.65.06" if exact else None,
            None if exact else ">=580.65.06",
        )
    snap = builders.h100_node(1)
    snap.system.wsl = True
    step = install_driver(checks.Context(snap), "upgrade the driver", want)
    assert (step.kind, step.command) == (StepKind.MANUAL, None)
    assert (
        step.text
        == "on Windows (WSL2 uses the Windows driver), upgrade the driver, from nvidia.com/drivers"
    )
