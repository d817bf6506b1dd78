"""conda's record of what it installed into this prefix (sys.prefix/conda-meta/*.json), for
framework_static.py: a conda-forge build carries its CUDA variant in the build string
(jaxlib 0.4.35 cuda120py312h..., pytorch ... cuda120_py311...), where pip metadata has no
local tag, and its cuDNN and CUDA floors in its depends.

Each record's file is named NAME-VERSION-BUILD.json (neither version nor build holds a "-"),
so names, versions and builds come from the listing; only the frameworks' records, which
hold the depends, are opened (a record lists every file, megabytes for pytorch).

Standard library only; runs on Python 3.8+.
"""

from __future__ import annotations

import json
import os
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# conda package names that are another distribution's pip name
PIP_NAME = {"pytorch": "torch", "tensorflow-base": "tensorflow"}
# what a framework's depends say about the libraries it loads
_LIBRARY_DEPENDS = re.compile(r"^(cudnn|cudatoolkit|cuda-version|cuda-cudart|nccl)(\s|$)")


def records(prefix: str) -> list[tuple[str, str, str, str]]:
    """(name, version, build, file) of every package conda installed into `prefix`."""
    folder = os.path.join(prefix, "conda-meta")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for file in names:
        if not file.endswith(".json"):
            continue
        parts = file[: -len(".json")].rsplit("-", 2)
        if len(parts) == 3:
            found.append((parts[0], parts[1], parts[2], os.path.join(folder, file)))
    return found


def _depends(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return []
    lines = data.get("depends") if isinstance(data, dict) else None
    if not isinstance(lines, list):
        return []
    return [d for d in lines if isinstance(d, str) and _LIBRARY_DEPENDS.match(d)]


def annotate(
    dists: list[dict[str, Any]], libraries: frozenset[str], errors: list[str]
) -> dict[str, str]:
    """Give each distribution conda installed its build string and library depends; return
    the versions of the `libraries` (cudnn, cudatoolkit, ...) conda installed here."""
    found: dict[str, str] = {}
    try:
        installed = records(sys.prefix)
    except Exception as exc:  # a listing that fails midway: what was read so far is kept
        errors.append(f"conda-meta: {type(exc).__name__}: {exc}")
        return found
    by_name = {}
    for name, version, build, path in installed:
        by_name[PIP_NAME.get(name, name)] = (version, build, path)
        if name in libraries:
            found[name] = version
    for dist in dists:
        record = by_name.get(dist.get("name", ""))
        if record is None or record[0] != dist.get("version"):
            continue  # pip's, or a pip install over conda's
        dist["build"] = record[1]
        dist["conda_depends"] = _depends(record[2])
    return found
