"""Which interpreter to run framework work in (bench, fit --torch-module): `--python`, or else
the first of the active virtualenv / conda env and gpucheck's own that has the framework
installed, read from its package metadata (the default pass; nothing is imported)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpucheck.model.frameworks import BY_KEY
from gpucheck.probes.frameworks import interpreters, probe_environment


@dataclass
class Found:
    python: str | None  # None: no interpreter looked at has any of the frameworks
    framework: str | None
    version: str | None
    looked_at: list[str]  # interpreters examined, for the message when none has one


def find(
    env: Mapping[str, str], python: str | None, frameworks: tuple[str, ...], timeout: float
) -> Found:
    """Raises frameworks.PythonNotFound for a --python that is not an interpreter."""
    candidates = interpreters(env, python)
    # The user's environment first: gpucheck may be installed elsewhere (pipx).
    ordered = candidates[1:] + candidates[:1] if python is None else candidates
    looked: list[str] = []
    for path, origin in ordered:
        facts = probe_environment(path, origin, timeout, env)
        looked.append(path)
        for framework in frameworks:
            # CuPy ships per CUDA major (cupy-cuda12x): any of its wheels.
            dist = next(iter(BY_KEY[framework].installed(facts)), None)
            if dist is not None:
                return Found(path, framework, dist.version, looked)
    return Found(None, None, None, looked)
