"""The GPU code of the libraries installed kernel packages cannot run without (compat
[[kernel_library]]: vLLM's _C, flash_attn_2_cuda, the bitsandbytes CUDA libraries), read from
each Python environment's own install: the distribution's RECORD names its files, the globs
pick the deciding ones, and their fat binaries' headers say which GPUs they carry SASS and PTX
for (probes/fatbin.py: milliseconds even for a 300 MB library; nothing is loaded).

The paths are the ones the environment's own interpreter reported (its site folders), so they
are read as they are: under GPUCHECK_ROOT, as without it, an interpreter that ran sees its files
where it said they are. Only paths inside the site folder are read (a RECORD is the install's
text: none absolute, none with a `..` part). Bounded: a few libraries per distribution, a time
budget per environment; a library past the budget is listed unread and one that cannot be
read has no code (unknown: the checks fall back to the release rows), never a guess."""

from __future__ import annotations

import csv
import io
import os
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.library_code import LibraryCode
from gpucheck.probes.fatbin import read_compiled_code

if TYPE_CHECKING:
    from gpucheck.compat.extensions import KernelLibrary

MAX_LIBRARIES = 32  # per distribution: a bitsandbytes wheel ships a dozen CUDA libraries
MAX_RECORD_BYTES = 8 << 20  # vLLM's RECORD is about 200 kB
BUDGET_SECONDS = 2.0  # per environment; reading vLLM's deciding library takes ~6 ms


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_info(dist: Distribution) -> str | None:
    """The distribution's .dist-info folder in its site folder (the one of its version first)."""
    if not dist.location:
        return None
    found: list[tuple[bool, str]] = []
    with os.scandir(dist.location) as entries:
        for entry in entries:
            if not entry.name.endswith(".dist-info") or not entry.is_dir():
                continue
            name, _, version = entry.name[: -len(".dist-info")].rpartition("-")
            if _normalise(name) == dist.name:
                found.append((version != dist.version, entry.path))
    return min(found)[1] if found else None


def record_paths(dist: Distribution) -> list[str]:
    """The paths the distribution's RECORD lists, relative to its site folder; empty without
    one (an egg, a conda package without pip's metadata: then nothing is read)."""
    folder = _dist_info(dist)
    record = os.path.join(folder, "RECORD") if folder else None
    if record is None or not os.path.isfile(record):
        return []
    with open(record, "rb") as stream:
        text = stream.read(MAX_RECORD_BYTES).decode("utf-8", "replace")
    return [row[0] for row in csv.reader(io.StringIO(text)) if row and row[0]]


def _inside(path: str) -> bool:
    """Whether a RECORD path stays in the site folder: relative, no `..` part (a RECORD is
    the install's own text, not to be trusted to name only its files)."""
    return not os.path.isabs(path) and ".." not in re.split(r"[/\\]", path)


def read_libraries(
    env: PythonEnvironment, rows: Sequence[KernelLibrary], budget: float = BUDGET_SECONDS
) -> list[LibraryCode]:
    """The deciding libraries of every distribution here that a row names. Raises OSError
    where a RECORD cannot be read; once the budget is spent, the libraries left are listed
    unread (code None), so a check still knows which ones the install has."""
    deadline = time.monotonic() + budget
    found: list[LibraryCode] = []
    stopped = False
    for row in rows:
        dist = env.dist(row.package)
        if dist is None or dist.location is None:
            continue
        wanted = row.matcher()
        paths = [p for p in record_paths(dist) if _inside(p) and wanted.match(p)][:MAX_LIBRARIES]
        for path in paths:
            file = os.path.normpath(os.path.join(dist.location, path))
            if not os.path.isfile(file):
                continue
            if time.monotonic() > deadline and not stopped:
                env.errors.append(f"compiled libraries: stopped after {budget:g} s at {path}")
                stopped = True
            # Past the budget a library is listed unread (unknown): which ones the install
            # has stays known (bitsandbytes loads only the one for torch's CUDA).
            code = None if stopped else read_compiled_code(file)
            found.append(LibraryCode(dist.name, dist.version, path, file, code))
    return found


def add_library_code(env: PythonEnvironment) -> PythonEnvironment:
    """`env` with its kernel packages' deciding libraries read; a failure is one more line in
    its errors, never an exception."""
    if not env.distributions:
        return env
    try:
        # The compat data is imported here, in the frameworks probe's thread once its child is
        # done, not when the probes load: the first probe children start without waiting for it.
        from gpucheck.compat import load

        env.compiled = read_libraries(env, load().extensions.libraries)
    except Exception as exc:  # a probe never raises: whatever went wrong is a recorded fact
        env.errors.append(f"compiled libraries: {type(exc).__name__}: {exc}")
    return env
