"""The JSON Schema of `gpucheck fleet --format json`: the envelope here, the records generated
from the dataclasses the fleet builds (so the schema follows them)."""

from __future__ import annotations

from typing import Any

from gpucheck.fleet.records import BadReport, HostRecord
from gpucheck.fleet.rendering import FLEET_SCHEMA_VERSION
from gpucheck.fleet.summary import HostGpu
from gpucheck.model.json_schema import components, document, version_property


def fleet_schema() -> dict[str, Any]:
    (host, gpu, bad), defs = components([HostRecord, HostGpu, BadReport])
    # A problem as rendering.py streams it: the store's group, its hosts listed in full.
    text = {"type": "string"}
    problem = {
        "type": "object",
        "required": ["check", "status", "title", "hosts"],
        "properties": {
            "check": text,
            "status": {"enum": ["warn", "fail", "error"]},
            "title": text,
            "hosts": {"type": "array", "items": text},
        },
        "additionalProperties": False,
    }
    count = {"type": "integer", "minimum": 0}
    summary = {
        "reports": count,
        "hosts": count,
        "ready": count,
        "not_ready": count,
        "bad_reports": count,
        "superseded": count,
        "exit_code": {"enum": [0, 1]},
    }
    properties: dict[str, Any] = {
        "fleet_schema_version": version_property(FLEET_SCHEMA_VERSION, "fleet schema"),
        "tool": {
            "type": "object",
            "required": ["name", "version"],
            "properties": {"name": {"const": "gpucheck"}, "version": {"type": "string"}},
        },
        "summary": {"type": "object", "required": list(summary), "properties": summary},
        "hosts": {"type": "array", "items": host},
        "problems": {"type": "array", "items": problem},
        "versions": {
            "type": "object",
            "description": 'per category ("driver", ...), hosts per version',
            "additionalProperties": {"type": "object", "additionalProperties": count},
        },
        "gpus_to_act_on": {"type": "array", "items": gpu},
        "bad_reports": {"type": "array", "items": bad},
    }
    return document(
        "fleet",
        FLEET_SCHEMA_VERSION,
        "gpucheck fleet",
        f"Output of `gpucheck fleet --format json`, fleet schema {FLEET_SCHEMA_VERSION}: many "
        "reports merged into an inventory, problems across hosts, version spread and GPUs to "
        "act on.",
        {
            "type": "object",
            "required": list(properties),
            "properties": properties,
            "$defs": defs,
        },
    )
