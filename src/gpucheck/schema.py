"""The JSON Schema of `doctor --json` reports (and, inside them, of snapshots).

Generated from the dataclasses that are the snapshot, so the schema cannot drift from the
code; the generated file ships in the package (gpucheck/report.schema.json), `gpucheck schema`
prints it, and a test fails if the shipped file is stale (regenerate: python -m gpucheck.schema).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from pathlib import Path
from typing import Any, Union

from gpucheck.checks import Section, Status
from gpucheck.snapshot import SCHEMA_VERSION, Snapshot

SCHEMA_FILE = Path(__file__).resolve().parent / "report.schema.json"
SCHEMA_ID = f"https://gpucheck.invalid/schema/report-{SCHEMA_VERSION}.json"


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = (
            _type_schema(args[0], defs)
            if len(args) == 1
            else {"anyOf": [_type_schema(a, defs) for a in args]}
        )
        return {"anyOf": [inner, {"type": "null"}]}
    if origin is list:
        return {"type": "array", "items": _type_schema(typing.get_args(tp)[0], defs)}
    if origin is dict:
        return {
            "type": "object",
            "additionalProperties": _type_schema(typing.get_args(tp)[1], defs),
        }
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion
            hints = typing.get_type_hints(tp)
            doc = (tp.__doc__ or "").strip()
            defs[name] = {
                "type": "object",
                **({"description": doc} if doc and not doc.startswith(name + "(") else {}),
                "properties": {
                    f.name: _type_schema(hints[f.name], defs) for f in dataclasses.fields(tp)
                },
                "required": [f.name for f in dataclasses.fields(tp)],
            }
        return {"$ref": f"#/$defs/{name}"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if tp in simple:
        return {"type": simple[tp]}
    raise TypeError(f"no schema for {tp!r}")


def report_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    snapshot_ref = _type_schema(Snapshot, defs)
    counts = {s.value: {"type": "integer", "minimum": 0} for s in Status}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "gpucheck doctor report",
        "description": (
            f"Output of `gpucheck doctor --json`, schema {SCHEMA_VERSION}. A minor version adds "
            "optional fields only; readers must ignore fields they do not know."
        ),
        "type": "object",
        "required": [
            "schema_version",
            "tool",
            "created_at",
            "host",
            "summary",
            "findings",
            "snapshot",
        ],
        "properties": {
            "schema_version": {"type": "string", "pattern": r"^\d+\.\d+$"},
            "tool": {
                "type": "object",
                "required": ["name", "version"],
                "properties": {"name": {"const": "gpucheck"}, "version": {"type": "string"}},
            },
            "created_at": {"type": "string", "format": "date-time"},
            "host": {
                "type": "object",
                "required": ["hostname", "os", "kernel", "arch"],
                "properties": {
                    "hostname": {"type": "string"},
                    "os": {"type": "string"},
                    "os_release": {"type": ["string", "null"]},
                    "kernel": {"type": "string"},
                    "arch": {"type": "string"},
                },
            },
            "summary": {
                "type": "object",
                "required": ["ready", "exit_code", "strict", "problems", "counts"],
                "properties": {
                    "ready": {"type": "boolean"},
                    "exit_code": {"enum": [0, 1, 3]},
                    "strict": {"type": "boolean"},
                    "problems": {"type": "integer", "minimum": 0},
                    "counts": {
                        "type": "object",
                        "required": list(counts),
                        "properties": counts,
                        "additionalProperties": False,
                    },
                },
            },
            "findings": {"type": "array", "items": {"$ref": "#/$defs/Finding"}},
            "snapshot": snapshot_ref,
        },
        "$defs": {
            "Finding": {
                "type": "object",
                "required": ["id", "section", "status", "title", "evidence", "fix"],
                "properties": {
                    "id": {"type": "string", "pattern": r"^[a-z]+(\.[a-z0-9-]+)+$"},
                    "section": {"enum": [s.value for s in Section]},
                    "status": {"enum": [s.value for s in Status]},
                    "title": {"type": "string"},
                    "evidence": {"type": "array", "items": {"type": "string"}},
                    "fix": {"type": ["string", "null"]},
                },
            },
            **defs,
        },
    }


def schema_text() -> str:
    return json.dumps(report_schema(), indent=2) + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")
