"""Shell completion of option values (typer's `autocompletion`): the closed choices, check ids
and sections for --only/--skip, and interpreter paths for --python. Each returns plain words
(with a help line for zsh and fish), so bash, zsh and fish complete them alike; each imports
what it lists only when the shell asks."""

# No `from __future__ import annotations`: typer reads the callbacks' annotations on every run
# (get_type_hints), and strings it would compile and evaluate each time.

import os
from collections.abc import Iterable

Choices = list[tuple[str, str]]


def _matching(choices: Iterable[tuple[str, str]], incomplete: str) -> Choices:
    return [(value, about) for value, about in choices if value.startswith(incomplete)]


def doctor_formats(incomplete: str) -> Choices:
    from gpucheck.report.formats import FORMATS

    about = {
        "text": "the report for a person",
        "json": "the report as JSON (gpucheck schema report)",
        "junit": "JUnit XML for CI test views",
        "prometheus": "metrics for node_exporter's textfile collector",
    }
    return _matching(((name, about.get(name, "")) for name in FORMATS), incomplete)


def check_selectors(incomplete: str) -> Choices:
    """--only/--skip: every check id, every section, and each id prefix ("gpus.",
    "frameworks.torch.")."""
    from gpucheck.checks.registry import all_checks

    checks = all_checks()
    sections = {c.section.value: f"every {c.section.label} check" for c in checks}
    prefixes = {
        prefix: f"checks named {prefix}*"
        for c in checks
        for prefix in (".".join(c.id.split(".")[: n + 1]) + "." for n in range(c.id.count(".")))
    }
    ids = {c.id: c.summary for c in checks}
    return _matching([*sections.items(), *prefixes.items(), *ids.items()], incomplete)


def fleet_formats(incomplete: str) -> Choices:
    about = {"table": "for a person", "json": "gpucheck schema fleet", "csv": "the inventory"}
    return _matching(about.items(), incomplete)


def watch_formats(incomplete: str) -> Choices:
    about = {"csv": "as nvidia-smi --format=csv writes it", "jsonl": "one JSON object a line"}
    return _matching(about.items(), incomplete)


def watch_fields(incomplete: str) -> Choices:
    """--fields is a comma-separated list: complete its last name, keeping the ones before."""
    from gpucheck.watch.log import FIELDS

    done, _, last = incomplete.rpartition(",")
    head = f"{done}," if done else ""
    taken = set(done.split(","))
    return [(head + name, "") for name in FIELDS if name.startswith(last) and name not in taken]


def fit_dtypes(incomplete: str) -> Choices:
    from gpucheck.fit.units import DTYPE_BYTES

    return _matching(((name, f"{DTYPE_BYTES[name]:g} byte(s)") for name in DTYPE_BYTES), incomplete)


def fit_optimizers(incomplete: str) -> Choices:
    from gpucheck.fit.parts import OPTIMIZERS

    return _matching(((name, "") for name in OPTIMIZERS), incomplete)


def fit_attention(incomplete: str) -> Choices:
    about = {
        "flash": "fused attention (the default)",
        "sdpa": "fused, as flash",
        "eager": "the s x s scores kept",
    }
    return _matching(about.items(), incomplete)


def fit_kv_dtypes(incomplete: str) -> Choices:
    from gpucheck.fit.request import KV_DTYPES
    from gpucheck.fit.units import DTYPE_BYTES

    return _matching(((n, f"{DTYPE_BYTES[n]:g} byte(s)") for n in KV_DTYPES), incomplete)


def python_paths(incomplete: str) -> Choices:
    """--python: interpreters on PATH by name (python3, python3.12), else files and folders
    under what is typed, folders ending in / so that the next Tab goes on into them."""
    found: Choices = []
    if "/" not in incomplete:
        for folder in os.environ.get("PATH", "").split(os.pathsep):
            try:
                names = os.listdir(folder or ".")
            except OSError:
                continue
            for name in names:
                if name.startswith("python") and name.startswith(incomplete):
                    found.append((name, "on PATH"))
    folder, slash, start = incomplete.rpartition("/")
    base, prefix = (os.path.expanduser(folder) or "/", folder + "/") if slash else (".", "")
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        entries = []
    for entry in entries:
        if not entry.name.startswith(start) or (entry.name.startswith(".") and not start):
            continue
        if entry.is_dir():
            found.append((prefix + entry.name + "/", "folder"))
        elif entry.name.startswith("python") and os.access(entry.path, os.X_OK):
            found.append((prefix + entry.name, "interpreter"))
    return sorted(dict(found).items())
