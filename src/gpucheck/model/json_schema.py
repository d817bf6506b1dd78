"""What every published JSON Schema of gpucheck shares: the draft, the identifier, the version
pattern, and msgspec's generated definitions made strict about fields that are always written.

Identifiers are URNs, `urn:gpucheck:schema:NAME:MAJOR`: stable names the project controls that
no web address has to keep serving. One schema describes one major version of its output (a
minor only adds optional fields), so its version pattern accepts that major and no other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def major(version: str) -> str:
    return version.split(".", 1)[0]


def schema_id(name: str, version: str) -> str:
    return f"urn:gpucheck:schema:{name}:{major(version)}"


def version_property(version: str, what: str) -> dict[str, Any]:
    """A `schema_version`-like field that accepts MAJOR.any-minor of this major only."""
    return {
        "type": "string",
        "pattern": rf"^{major(version)}\.[0-9]+$",
        "description": f"{what} {major(version)}.x: this schema describes major {major(version)}",
    }


def components(types: Iterable[Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """msgspec's schemas for `types` (refs into $defs) with every field required: the output
    always carries every field (null when unknown), and a validator should catch one lost."""
    refs, defs = msgspec.json.schema_components(list(types), ref_template="#/$defs/{name}")
    # As JSON reads it back: a tuple field's default, (), is the list [] there.
    defs = msgspec.json.decode(msgspec.json.encode(defs))
    for schema in defs.values():
        if "properties" in schema:
            schema["required"] = list(schema["properties"])
    return list(refs), defs


def document(
    name: str, version: str, title: str, description: str, body: dict[str, Any]
) -> dict[str, Any]:
    """A whole schema: $schema, $id, title and description, then `body`."""
    return {
        "$schema": DRAFT,
        "$id": schema_id(name, version),
        "title": title,
        "description": description,
        **body,
    }
