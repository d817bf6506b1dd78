"""Framework readiness end to end, with real frameworks in real virtual environments built by
the test suite (torch's CPU wheel, tensorflow-cpu from PyPI), probed through --python and the
active VIRTUAL_ENV, by the default pass and by --deep; and on a simulated GPU node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sim.scenario as sim
from conftest import run_gpucheck
from support import venvs
from support.sim_doctor import doctor

pytestmark = pytest.mark.frameworks
FRAMEWORK_SECTIONS = ("frameworks.",)


@pytest.fixture(scope="session")
def torch_python() -> Path:
    return venvs.require("torch-2.13.0")


@pytest.fixture(scope="session")
def tf_python() -> Path:
    return venvs.require("tensorflow-cpu-2.21.0")


def report(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = run_gpucheck("doctor", "--json", *args, env=env, timeout=300)
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def findings(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in data["findings"]}


def framework_problems(data: dict[str, Any]) -> list[str]:
    return [
        f["id"]
        for f in data["findings"]
        if f["id"].startswith(FRAMEWORK_SECTIONS) and f["status"] in ("warn", "fail", "error")
    ]


def test_torch_cpu_wheel_default_pass(torch_python: Path) -> None:
    data = report("--python", str(torch_python))
    (env,) = data["snapshot"]["environments"]
    assert env["origin"] == "--python" and env["python"] == str(torch_python)
    assert env["torch"]["version"] == "2.13.0+cpu" and env["torch"]["cuda"] is None
    torch = next(d for d in env["distributions"] if d["name"] == "torch")
    assert torch["version"] == "2.13.0+cpu"
    assert data["snapshot"]["deep"] is False and env["runtimes"] == []
    found = findings(data)
    # No NVIDIA GPU here: a CPU build is worth knowing, not a problem.
    assert found["frameworks.torch.cpu-build"]["status"] == "info"
    assert found["frameworks.torch.python"]["status"] == "pass"
    assert "--deep" in found["frameworks.smoke-test"]["title"] + " ".join(
        found["frameworks.smoke-test"]["evidence"]
    )
    assert framework_problems(data) == []


def test_torch_cpu_wheel_deep_pass(torch_python: Path) -> None:
    data = report("--python", str(torch_python), "--deep")
    (env,) = data["snapshot"]["environments"]
    (runtime,) = env["runtimes"]
    assert runtime["framework"] == "torch" and runtime["status"] == "ok"
    assert runtime["version"] == "2.13.0+cpu"
    assert runtime["cuda_available"] is False and runtime["device_count"] == 0
    assert runtime["arch_list"] == [] and runtime["import_seconds"] > 0
    assert data["snapshot"]["deep"] is True
    assert framework_problems(data) == []


def test_tensorflow_cpu_default_and_deep_pass(tf_python: Path) -> None:
    data = report("--python", str(tf_python))
    (env,) = data["snapshot"]["environments"]
    assert env["tensorflow"]["is_cuda_build"] is False
    assert {"tensorflow-cpu", "keras"} <= {d["name"] for d in env["distributions"]}
    found = findings(data)
    assert found["frameworks.tensorflow.cpu-build"]["status"] == "info"
    assert found["frameworks.tensorflow.keras"]["status"] == "pass"
    deep = report("--python", str(tf_python), "--deep")
    (runtime,) = deep["snapshot"]["environments"][0]["runtimes"]
    assert runtime["framework"] == "tensorflow" and runtime["status"] == "ok"
    assert runtime["devices"] == [] and runtime["version"] == "2.21.0"
    assert framework_problems(deep) == []


def test_the_active_virtualenv_is_probed_beside_gpuchecks_own(torch_python: Path) -> None:
    prefix = torch_python.parent.parent
    data = report(env={"VIRTUAL_ENV": str(prefix)})
    origins = {e["origin"]: e for e in data["snapshot"]["environments"]}
    assert set(origins) == {"gpucheck", "virtualenv"}
    assert origins["virtualenv"]["torch"]["version"] == "2.13.0+cpu"
    assert origins["gpucheck"]["torch"] is None  # gpucheck's own environment has no torch


def test_a_cpu_wheel_on_a_gpu_node_fails_with_the_build_that_fits(
    simulate: Any,
    torch_python: Path,
) -> None:
    machine = simulate(sim.h100_node(2))
    d = doctor(machine, "--python", str(torch_python))
    f = d.finding("frameworks.torch.cpu-build")
    assert f["status"] == "fail" and d.returncode == 1
    # The same torch 2.13.0 as a CUDA build (torch.toml, release 2.13: its newest CUDA
    # variant, 13.2, runs on R590), not the newest torch: the smallest change.
    commands = [s["command"] for s in f["fix"]["steps"] if s["command"]]
    assert commands[0].endswith(
        "pip install torch==2.13.0+cu132 --index-url https://download.pytorch.org/whl/cu132"
    )
    assert "the same PyTorch 2.13.0, built with CUDA 13.2" in f["fix"]["text"]
