"""A doctor of a saved snapshot imports only the framework check modules the snapshot can use
(the frameworks layer's module_needs, registry.FRAMEWORK_MODULES, and held: start-up time).
Left out, a module must
have had nothing to say: its checks judge nothing on a snapshot without what the table says
they need, and the report is the same byte for byte with every module loaded."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pkgutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sim.scenario as sim
from support import builders, real_cases, sim_doctor
from support import framework_builders as fb
from test_check_loading import imported_check_modules

import gpucheck.checks.frameworks
from gpucheck import cli
from gpucheck.checks import registry
from gpucheck.checks.context import Context, Requirements
from gpucheck.checks.declarations import ANY_ENVIRONMENT, SYSTEM_TENSORRT
from gpucheck.checks.registry import FRAMEWORK_MODULES, all_checks, held
from gpucheck.compat import load
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import Snapshot, dumps, loads

PACKAGE = "gpucheck.checks.frameworks"


def module_of(chk: registry.Check) -> str:
    assert chk.func.__module__.startswith(PACKAGE + "."), (chk.id, chk.func.__module__)
    return chk.func.__module__.rsplit(".")[-1]


def test_every_module_registering_framework_checks_is_in_the_table() -> None:
    # Every module of the package imported, whatever imports it: a new checks module missing
    # from the table registers checks whose module is not in it.
    folder = Path(gpucheck.checks.frameworks.__file__).parent
    names = [m.name for m in pkgutil.iter_modules([str(folder)])]
    assert {"torch", "per_environment", "runtime"} <= set(names)
    for name in names:
        __import__(f"{PACKAGE}.{name}")
    registering = {module_of(c) for c in all_checks() if c.section is Layer.FRAMEWORKS}
    assert registering == set(FRAMEWORK_MODULES)


def _env(*add: Callable[[PythonEnvironment], object]) -> PythonEnvironment:
    env = fb.environment()
    for step in add:
        step(env)
    return env


# Environments each holding one framework (and its build facts, and what the deep pass saw).
HOLDING: dict[str, Callable[[], PythonEnvironment]] = {
    "torch": lambda: _env(fb.torch_cu124, lambda e: fb.add(e, "torchvision", "0.20.1+cu124")),
    "tensorflow": lambda: fb.with_tensorflow(fb.environment()),
    "jax": lambda: fb.with_jax(fb.environment()),
    "cupy": lambda: _env(lambda e: fb.add(e, "cupy-cuda12x", "13.3.0")),
    "tensorrt": lambda: _env(
        lambda e: fb.add(e, "tensorrt", "10.7.0"), lambda e: fb.add(e, "tensorrt-cu12", "10.7.0")
    ),
}


def _imported(key: str) -> PythonEnvironment:
    env = HOLDING[key]()
    if key != "tensorrt":  # (the deep pass imports TensorRT as an extension, not a framework)
        fb.imported(env, key, 8, version="1.0", cuda="12.4")
    return env


def snapshots_without(needs: tuple[str, ...]) -> list[tuple[str, Snapshot]]:
    """Healthy 8-GPU nodes none of whose environments holds what `needs` names: one with no
    environment, and (unless it needs any environment) each other framework's, statically and
    as the deep pass saw it, one at a time and all together."""
    found = [("no environment", builders.h100_node(8))]
    if ANY_ENVIRONMENT in needs:
        return found
    others = [k for k in HOLDING if k not in needs]
    for key in others:
        found.append((key, fb.on(builders.h100_node(8), HOLDING[key]())))
        found.append((f"{key} --deep", fb.on(builders.h100_node(8), _imported(key), deep=True)))
    together = fb.on(builders.h100_node(8), *(HOLDING[k]() for k in others), fb.environment())
    found.append(("all others", together))
    return found


@pytest.mark.parametrize("module", list(FRAMEWORK_MODULES))
def test_a_module_left_out_had_nothing_to_judge(module: str) -> None:
    needs = FRAMEWORK_MODULES[module]
    __import__(f"{PACKAGE}.{module}")
    checks = [c for c in all_checks() if c.section is Layer.FRAMEWORKS and module_of(c) == module]
    assert checks, module
    compat = load(())
    for label, snap in snapshots_without(needs):
        holds = held(snap)
        assert holds is not None and not holds & set(needs), (module, label, holds)
        assert SYSTEM_TENSORRT not in holds
        ctx = Context(snap, Requirements(), compat)
        for chk in checks:
            assert chk.func(ctx) is None, (module, label, chk.id)


def test_what_a_snapshot_holds() -> None:
    bare = builders.h100_node(2)
    assert held(bare) == set()
    assert held(fb.on(builders.h100_node(2), fb.torch_cu124())) == {"torch", ANY_ENVIRONMENT}
    assert held(fb.on(builders.h100_node(2), fb.environment())) == {ANY_ENVIRONMENT}
    jax = fb.on(builders.h100_node(2), fb.with_jax(fb.environment()))
    assert held(jax) == {"jax", ANY_ENVIRONMENT}
    trt = builders.h100_node(2)
    trt.cuda.tensorrt = [
        builders.library("libnvinfer.so.10", "/usr/lib/x86_64-linux-gnu/libnvinfer.so.10", "10.7.0")
    ]
    assert held(trt) == {SYSTEM_TENSORRT}
    partial = builders.h100_node(2)
    partial.absent_sections = ["environments"]
    assert held(partial) is None  # a missing fact group: its checks say "Not judged"


# --- the report, byte for byte ------------------------------------------------------------------


def doctor_json(snapshot: str, *args: str) -> str:
    """`gpucheck doctor --from FILE --json` in this process (as tests/e2e/test_cases.py runs it)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        fh.write(snapshot)
        path = fh.name
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.run(["doctor", "--from", path, "--json", *args])
    finally:
        os.unlink(path)
    assert code in (0, 1), err.getvalue()
    report = json.loads(out.getvalue())
    assert report["created_at"]  # (the report's own time: a second apart, it differs)
    report["created_at"] = "NOW"
    return json.dumps(report, indent=2).replace(path, "SNAPSHOT")


def report_snapshots() -> list[tuple[str, str]]:
    found = [(c["_slug"], json.dumps(real_cases.snapshot_for(c))) for c in real_cases.CASES]
    nodes: dict[str, Snapshot] = {
        "h100x8": builders.h100_node(8),
        "workstation": builders.workstation(),
        "no-gpu": builders.no_gpu_machine(),
        "torch": fb.on(builders.h100_node(8), fb.torch_cu124()),
        "torch-cpu": fb.on(builders.workstation(), fb.torch_cpu()),
        "tensorflow": fb.on(builders.h100_node(8), HOLDING["tensorflow"]()),
        "jax": fb.on(builders.h100_node(8), HOLDING["jax"]()),
        "cupy": fb.on(builders.h100_node(8), HOLDING["cupy"]()),
        "tensorrt": fb.on(builders.h100_node(8), HOLDING["tensorrt"]()),
        "torch+tf+jax": fb.on(
            builders.h100_node(8), fb.torch_cu124(), HOLDING["tensorflow"](), HOLDING["jax"]()
        ),
        "torch --deep": fb.on(builders.h100_node(8), _imported("torch"), deep=True),
        "empty venv": fb.on(builders.h100_node(8), fb.environment()),
    }
    partial = builders.h100_node(8)
    partial.absent_sections = ["environments"]
    nodes["no environments section"] = partial
    found += [(label, dumps(snap)) for label, snap in nodes.items()]
    return found


def test_the_report_is_the_same_with_every_framework_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for label, text in report_snapshots():
        loads(text)  # (a snapshot the doctor reads)
        lazy = doctor_json(text)
        with monkeypatch.context() as patched:
            patched.setattr(registry, "held", lambda _: None)  # every module, every check
            every = doctor_json(text)
        assert lazy == every, label
        skipped = doctor_json(text, "--skip", "frameworks.torch.python")
        with monkeypatch.context() as patched:
            patched.setattr(registry, "held", lambda _: None)
            assert skipped == doctor_json(text, "--skip", "frameworks.torch.python"), label


# --- what a doctor imports -----------------------------------------------------------------------


def imported_framework_modules(tmp_path: Path, snap: Snapshot) -> set[str]:
    found = imported_check_modules(tmp_path, snapshot=snap)
    return {n.rsplit(".")[-1] for n in found if n.startswith(PACKAGE + ".")}


def test_a_doctor_imports_the_framework_modules_its_snapshot_can_use(tmp_path: Path) -> None:
    assert imported_framework_modules(tmp_path, builders.h100_node(2)) == set()
    torch = imported_framework_modules(tmp_path, fb.on(builders.h100_node(2), fb.torch_cu124()))
    assert {"torch", "extensions", "conflicts", "runtime", "builds"} <= torch
    assert not {"tensorflow", "jax_cupy", "tensorrt"} & torch


# The simulator's machines (a live doctor's snapshot of each: its environment is this test's
# interpreter), through the same comparison.
SIM_SCENARIOS: dict[str, Callable[[], Any]] = {
    "h100x8": lambda: sim.h100_node(8),
    "rtx3060": lambda: sim.Scenario([sim.rtx_3060()]),
    "a100-mig": lambda: sim.Scenario([sim.a100_mig()]),
    "gt1030, no uvm": lambda: sim.Scenario([sim.gt_1030()], uvm_loaded=False),
    "module not loaded": lambda: sim.h100_node(2, module_loaded=False),
}


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SIM_SCENARIOS))
def test_the_report_on_simulated_machines_is_the_same(
    simulate: Any, scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine = simulate(SIM_SCENARIOS[scenario]())
    text = json.dumps(sim_doctor.doctor(machine).snapshot)
    assert loads(text).environments  # (the live doctor's interpreter)
    lazy = doctor_json(text)
    monkeypatch.setattr(registry, "held", lambda _: None)
    assert lazy == doctor_json(text)
