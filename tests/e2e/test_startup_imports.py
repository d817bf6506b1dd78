"""The steady start-up gate: what `gpucheck --help` and `gpucheck doctor --from SNAPSHOT --json`
import (`python -X importtime`, every module a fresh interpreter loads) holds none of the
modules below, each costly to import and of no use to these commands. A module moved to the top
of a module on their path fails here on any machine, however loaded: the CPU-time ratio of
benchmarks/startup.py (tests/e2e/test_startup_budget.py) only prints what it costs.

Why each is listed (its import, measured with -X importtime beside what the doctor imports
anyway: docs/speed.md): rich's Markdown and Syntax pull in markdown-it and Pygments; typer's
rich help the whole of rich; the network clients their HTTP, TLS and e-mail stacks; the
requirement parser of packaging its grammar; the terminal and text reports, the probes, the fix
planner, the install resolver, the redactor and the Xid matcher are for other commands or other
snapshots than a bare node's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import builders

from gpucheck.model.snapshot import dumps

# Neither command imports these, nor anything under them.
NEVER = (
    "rich",  # the terminal view (`doctor` on a terminal); its markdown and syntax parts above all
    "typer.rich_utils",  # typer's rich help: gpucheck's help is plain
    "markdown_it",
    "pygments",
    "urllib.request",  # fit --hub's HTTP, and what it pulls in:
    "http.client",
    "ssl",
    "email",
    "urllib3",
    "requests",
    "httpx",
    "json",  # the standard library's: msgspec reads and writes JSON
    "tomllib",  # the compat data is pre-parsed
    "xml",  # JUnit output only
    "tempfile",
    "sqlite3",  # fleet's store
    "asyncio",  # mcp's server
    "concurrent.futures",  # the probes' threads: a saved snapshot is not probed
    "multiprocessing",
    "tarfile",  # bundles
    "zipfile",
    "packaging.requirements",  # the requirement parser: only where an environment has packages
    "packaging.specifiers",
    "gpucheck.probes",
    "gpucheck.child",
    "gpucheck.checks.frameworks.",  # the framework checks: a bare node has no environment
    "gpucheck.compat.matching",  # the Xid and message matcher: only where a log line is
    "gpucheck.report.terminal",
    "gpucheck.report.text",
    "gpucheck.report.html",
    "gpucheck.model.redact",
    "gpucheck.fixplan",
    "gpucheck.install",
    "gpucheck.bundle",
    "gpucheck.explanation",
    "gpucheck.fleet",
    "gpucheck.mcp",
    "gpucheck.api",
    "pynvml",
    "numpy",
    "torch",
)
# --help lists the commands from their one-line summaries: none of the doctor's layers loads.
NEVER_FOR_HELP = (
    "msgspec",
    "decimal",
    "packaging",
    "gpucheck.model",
    "gpucheck.compat",
    "gpucheck.checks",
    "gpucheck.report",
    "gpucheck.diagnosis",
    "gpucheck.cli.doctor",
)


def imported(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """Every module `gpucheck ARGS` imports, from -X importtime in a fresh interpreter, less
    those the interpreter imports before any command (`-c pass` in the same environment: site,
    a sitecustomize, a coverage .pth or a distribution's hook are not gpucheck's imports)."""
    names = _importtime([sys.executable, "-X", "importtime", "-m", "gpucheck", *args], env)
    assert "gpucheck.entry" in names, "no -X importtime lines for gpucheck.entry"
    return names - interpreter_start(env)


def interpreter_start(env: dict[str, str] | None = None) -> set[str]:
    """The modules a bare interpreter imports in this environment (`python -c pass`)."""
    return _importtime([sys.executable, "-X", "importtime", "-c", "pass"], env)


def _importtime(command: list[str], env: dict[str, str] | None) -> set[str]:
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, timeout=120, env=env
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, "no -X importtime lines: " + done.stderr[-500:]
    return names


def forbidden(names: set[str], listed: tuple[str, ...]) -> list[str]:
    """The modules of `names` that are listed or under one listed (a listed name ending in "."
    is only a package's modules, not the package)."""
    return sorted(name for name in names if any(_under(name, entry) for entry in listed))


def _under(name: str, entry: str) -> bool:
    if entry.endswith("."):
        return name.startswith(entry)
    return name == entry or name.startswith(entry + ".")


@pytest.fixture(scope="module")
def bare_node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("startup") / "node.json"
    path.write_text(dumps(builders.h100_node(8)))
    return path


def test_help_imports_nothing_heavy() -> None:
    assert forbidden(imported("--help"), NEVER + NEVER_FOR_HELP) == []


def test_doctor_from_a_bare_snapshot_imports_nothing_heavy(bare_node: Path) -> None:
    names = imported("doctor", "--from", str(bare_node), "--json")
    assert "gpucheck.checks.registry" in names  # the gate watches a doctor that ran
    assert forbidden(names, NEVER) == []


def test_the_gate_sees_a_heavy_import() -> None:
    """The gate can fail: the text report's rich view and the framework checks, when imported,
    are named."""
    names = {
        "rich",
        "rich.markdown",
        "gpucheck.checks.frameworks",
        "gpucheck.checks.frameworks.torch",
        "richer",
        "jsonschema",
    }
    assert forbidden(names, NEVER) == ["gpucheck.checks.frameworks.torch", "rich", "rich.markdown"]


def test_what_the_interpreter_imports_before_gpucheck_is_not_counted(tmp_path: Path) -> None:
    """A sitecustomize (or a coverage .pth, a distribution's hook) that imports json loads it
    in every interpreter: not gpucheck's import, not a failure of the gate."""
    (tmp_path / "sitecustomize.py").write_text("import json\n")
    paths = [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    assert "json" in interpreter_start(env)  # the hook ran
    assert forbidden(imported("--help", env=env), NEVER + NEVER_FOR_HELP) == []
