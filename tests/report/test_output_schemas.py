"""Every JSON output validates against the schema `gpucheck schema NAME` prints (the real
command's output, on this machine, saved snapshots or the GPU simulator), and each schema
accepts only the major version it describes."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO, run_gpucheck
from sim import scenario as sim
from support import builders

from gpucheck.model.snapshot import dumps

NAMES = ["report", "snapshot", "procs", "watch", "bench", "fit", "fleet", "compat", "explain"]
NAMES += ["install"]
FIXTURES = REPO / "tests" / "fixtures"


@functools.cache
def schema(name: str) -> dict[str, Any]:
    result = run_gpucheck("schema", name)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def validate(name: str, data: Any) -> None:
    jsonschema.Draft202012Validator(
        schema(name), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(data)


def output(*args: str, codes: tuple[int, ...] = (0, 1), **kw: Any) -> Any:
    result = run_gpucheck(*args, **kw)
    assert result.returncode in codes, (args, result.returncode, result.stderr)
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_is_draft_2020_12_with_a_urn_id(name: str) -> None:
    printed = schema(name)
    jsonschema.Draft202012Validator.check_schema(printed)
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert re.fullmatch(rf"urn:gpucheck:schema:{name}:[0-9]+", printed["$id"]), printed["$id"]


def test_unknown_schema_name_is_a_usage_error() -> None:
    result = run_gpucheck("schema", "reports")
    assert result.returncode == 2 and result.stderr.startswith("gpucheck: schema: 'reports'")
    assert run_gpucheck("schema", "--procs").stdout == run_gpucheck("schema", "procs").stdout
    assert json.loads(run_gpucheck("schema", "procs", "--procs").stdout) == schema("procs")


@pytest.mark.parametrize("other", ["fit", "report"])
def test_procs_flag_with_another_name_is_a_usage_error(other: str) -> None:
    # `schema fit --procs` printed the procs schema under the name fit.
    for argv in (["schema", other, "--procs"], ["schema", "--procs", other]):
        result = run_gpucheck(*argv)
        assert (result.returncode, result.stdout) == (2, ""), argv
        assert result.stderr == (
            f"gpucheck: schema: --procs names the procs schema, NAME names {other}: give one\n"
        )


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("saved")
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].ecc_uncorrected_volatile = 3
    (folder / "ecc.json").write_text(dumps(snap))
    (folder / "healthy.json").write_text(dumps(builders.h100_node(8)))
    return folder


def test_report_and_snapshot_outputs_validate(saved: Path) -> None:
    validate("report", output("doctor", "--from", str(saved / "ecc.json"), "--json"))
    validate("report", output("doctor", "--json", "--timeout", "10"))  # this machine, no GPU
    recipe = saved / "Dockerfile"
    recipe.write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n")
    (saved / "no-gpu.json").write_text(dumps(builders.no_gpu_machine()))
    nogpu = str(saved / "no-gpu.json")
    validate("report", output("dockerfile", str(recipe), "--from", nogpu, "--json", codes=(5,)))
    snapshot = output("snapshot", "--timeout", "10")
    validate("snapshot", snapshot)
    validate("snapshot", json.loads((saved / "ecc.json").read_text()))


def test_fleet_fit_bench_and_procs_outputs_validate(saved: Path) -> None:
    validate("fleet", output("fleet", str(saved), str(FIXTURES / "integrations"), "-f", "json"))
    for model, extra in (("gpt2", ["--gpu-memory", "16GiB"]), ("llama-2-7b", ["--train"])):
        validate("fit", output("fit", str(FIXTURES / "models" / model), *extra, "--json"))
    # --params alone counts a lower bound: its verdict is "may fit", in the schema too.
    may = output("fit", "--params", "7B", "--infer", "--gpu-memory", "80GiB", "--json")
    assert [v["verdict"] for v in may["verdicts"]] == ["may fit"]
    validate("fit", may)
    bench = output("bench", "--quick", "--json")  # no GPU here: the CPU's line
    validate("bench", bench)
    for broken in ({"format_version": "2.0"}, {"gpus": [{"index": 0}]}):
        with pytest.raises(jsonschema.ValidationError):
            validate("bench", {**bench, "bench": {**bench["bench"], **broken}})
    validate("procs", output("procs", "--json"))


@pytest.mark.parametrize(
    "question",
    [
        ["torch", "2.5"],
        ["torch", "2.99.0+cu128"],  # newer than the data: only the tag's CUDA is known
        ["tensorflow", "2.15"],
        ["tensorflow", "1.15"],
        ["jax", "0.4.30"],
        ["cudnn", "9.1"],
        ["driver", "550.54", "--windows"],
        ["cuda", "12.4"],
        ["cuda", "10.0"],
        ["gpu", "H100"],
        ["--about"],
    ],
)
def test_compat_answers_validate(question: list[str]) -> None:
    validate("compat", output("compat", *question, "--json", codes=(0,)))


def test_watch_records_and_procs_on_a_simulated_gpu_node(
    sim_libs: sim.Libraries, tmp_path: Path
) -> None:
    machine = sim.Machine.create(sim.h100_node(2), sim_libs, tmp_path / "node")
    result = run_gpucheck(
        "watch", "--count", "2", "-i", "0.05", "--format", "jsonl", env=machine.env
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 4 and {r["index"] for r in records} == {0, 1}
    for record in records:
        validate("watch", record)
    validate("procs", output("procs", "--json", env=machine.env))
    # The schema can fail: a field nvidia-smi does not name.
    with pytest.raises(jsonschema.ValidationError):
        validate("watch", {**records[0], "gpu_temp": 40})


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("report", "schema_version"),
        ("snapshot", "schema_version"),
        ("procs", "schema_version"),
        ("fit", "schema_version"),
        ("fleet", "fleet_schema_version"),
    ],
)
def test_a_version_of_another_major_does_not_validate(name: str, field: str, saved: Path) -> None:
    data = {
        "report": lambda: output("doctor", "--from", str(saved / "ecc.json"), "--json"),
        "snapshot": lambda: json.loads((saved / "ecc.json").read_text()),
        "procs": lambda: output("procs", "--json"),
        "fit": lambda: output("fit", str(FIXTURES / "models" / "gpt2"), "--json"),
        "fleet": lambda: output("fleet", str(saved), "-f", "json"),
    }[name]()
    validate(name, data)
    current = data[field]
    major, minor = (int(p) for p in current.split("."))
    validate(name, {**data, field: f"{major}.{minor + 7}"})  # a later minor: still this major
    for other in (f"{major + 1}.0", f"{major - 1}.9", f"{major}", f"{major}.x"):
        with pytest.raises(jsonschema.ValidationError):
            validate(name, {**data, field: other})


def test_a_bench_report_with_measured_gpus_validates() -> None:
    from gpucheck.bench.measurements import BenchRun, Copy, CpuRun, GpuRun, Matmul, Peer
    from gpucheck.bench.report import BenchReport

    snap = builders.h100_node(2)
    runs = [
        GpuRun(
            facts=gpu,
            framework="torch",
            framework_version="2.13.0",
            matmuls=[Matmul("bf16", "cuda", 8192, 1.6, 690.0, True, 1e-2, 3e-3)],
            copies=[Copy("d2d", 2 * 1024**3, 0.8, 2700.0)],
            skipped={"fp8": "torch has no fp8 matmul here"},
        )
        for gpu in snap.nvml.gpus
    ]
    run = BenchRun(
        False,
        "/env/bin/python",
        "torch",
        "2.13.0",
        CpuRun("torch", Matmul("fp32", "cpu", 4096, 200.0, 0.5, True, 1e-4)),
        runs,
        [Peer(0, 1, True, 1024**3, 3.0, 350.0)],
    )
    data = json.loads(json.dumps(BenchReport(snap, [], run=run).to_dict()))
    assert [g["index"] for g in data["bench"]["gpus"]] == [0, 1]
    validate("bench", data)
