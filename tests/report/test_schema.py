"""The shipped JSON Schema is current, and real reports validate against it."""

from __future__ import annotations

import json

import jsonschema
import pytest
from support import builders

from gpucheck import checks
from gpucheck.report.core import Report
from gpucheck.report.schema import SCHEMA_FILE, report_schema, schema_text


def test_shipped_schema_matches_the_code() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "src/gpucheck/report.schema.json is stale: run python -m gpucheck.report.schema"
    )


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(report_schema())


@pytest.mark.parametrize(
    "snapshot",
    [
        builders.h100_node(8),
        builders.workstation(),
        builders.no_gpu_machine(),
        builders.node([builders.a100_mig(0)]),
    ],
    ids=["h100-node", "workstation", "no-gpu", "a100-mig"],
)
def test_reports_from_fixtures_validate(snapshot) -> None:  # type: ignore[no-untyped-def]
    report = Report(snapshot, checks.run(checks.Context(snapshot)))
    data = json.loads(json.dumps(report.to_dict()))
    jsonschema.Draft202012Validator(report_schema()).validate(data)


def test_schema_rejects_a_report_that_breaks_the_contract() -> None:
    snap = builders.h100_node(1)
    data = Report(snap, checks.run(checks.Context(snap))).to_dict()
    data["findings"][0]["status"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, report_schema())
    data = Report(snap, []).to_dict()
    data["snapshot"]["nvml"]["gpus"][0]["memory_total"] = "80GB"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, report_schema())
