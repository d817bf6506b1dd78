"""The JSON Schema of `gpucheck install --json` (InstallAnswer: every field always written)."""

from __future__ import annotations

from typing import Any

from gpucheck.install.answer import INSTALL_SCHEMA_VERSION, InstallAnswer
from gpucheck.model.json_schema import components, document, version_property


def install_schema() -> dict[str, Any]:
    (ref,), defs = components([InstallAnswer])
    answer = defs["InstallAnswer"]
    answer["properties"]["schema_version"] = version_property(
        INSTALL_SCHEMA_VERSION, "install schema"
    )
    answer["properties"]["installer"] = {"enum": ["pip", "uv-pip", "uv-add", "conda", "mamba"]}
    answer["properties"]["os"] = {"enum": ["linux", "windows"]}
    return document(
        "install",
        INSTALL_SCHEMA_VERSION,
        "gpucheck install answer",
        f"Output of `gpucheck install --json`, install schema {INSTALL_SCHEMA_VERSION}: per "
        "package the build that runs on the machine (or why each candidate release does not), "
        "installed packages moved with it or in conflict, and the installer's commands.",
        {**ref, "$defs": defs},
    )
