"""The house rule, kept by walking the imports of src/gpucheck (docs/architecture.md): a
module imports only its own package and the layers below it, and no import circle exists.

The layer order is read from that page's own block, so the rule a newcomer reads and the rule
this test holds cannot drift apart."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGE = SRC / "gpucheck"
START = "<!-- layers: bottom up -->"
END = "<!-- /layers -->"


def documented_layers() -> list[list[str]]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = text[text.index(START) + len(START) : text.index(END)]
    layers = []
    for line in block.splitlines():
        match = re.match(r"\s*\d+\s+(.+?)\s{2,}", line + "  ")
        if match:
            layers.append(match.group(1).replace(",", " ").split())
    return layers


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        # The child scripts run in other interpreters and import no gpucheck module at all.
        if "scripts" in path.relative_to(PACKAGE).parts:
            continue
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, known: dict[str, Path]) -> list[tuple[str, int, bool]]:
    """(module imported, line, at run time) for every gpucheck import in the file, those
    inside functions included; `at run time` is False under `if TYPE_CHECKING:`."""
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, runtime: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for sub in child.body:
                    visit_one(sub, False)
                for sub in child.orelse:
                    visit_one(sub, runtime)
            else:
                visit_one(child, runtime)

    def visit_one(node: ast.AST, runtime: bool) -> None:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "gpucheck":
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.append((full if full in known else node.module, node.lineno, runtime))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "gpucheck":
                    found.append((alias.name, node.lineno, runtime))
        visit(node, runtime)

    visit(ast.parse(path.read_text(encoding="utf-8")), True)
    return found


def unit(module: str) -> str:
    """The unit of the layer table a module belongs to: its top package or top module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "gpucheck"


def test_the_architecture_page_names_every_package_and_module_once() -> None:
    layers = documented_layers()
    named = [u for layer in layers for u in layer]
    assert len(named) == len(set(named)), "a unit is named in two layers"
    present = {unit(m) for m in modules()}
    assert present - set(named) == set(), "add these to docs/architecture.md's layer list"
    assert set(named) - present == set(), "docs/architecture.md names units that do not exist"


def test_nothing_imports_upward_or_sideways() -> None:
    rank = {u: i for i, layer in enumerate(documented_layers()) for u in layer}
    known = modules()
    wrong = []
    for name, path in sorted(known.items()):
        for target, line, _ in imports(path, known):
            here, there = unit(name), unit(target)
            if here != there and rank[there] >= rank[here]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} {name} -> {target}")
    assert wrong == []


def test_no_import_circle() -> None:
    known = modules()
    graph = {
        name: {t for t, _, runtime in imports(path, known) if runtime and t in known and t != name}
        for name, path in known.items()
    }
    circles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    assert circles == []


def test_the_walk_sees_what_it_must() -> None:
    """The checker itself can fail: it finds a lazy import inside a function, tells a
    TYPE_CHECKING import from a run-time one, and ranks a known upward import as upward."""
    known = modules()
    native = imports(PACKAGE / "probes" / "native.py", known)
    assert any(m == "gpucheck.probes.child" and runtime for m, _, runtime in native)
    text = imports(PACKAGE / "report" / "text.py", known)
    assert ("gpucheck.report.core", False) in [(m, r) for m, _, r in text]
    cli = imports(PACKAGE / "cli" / "procs.py", known)
    assert any(m.startswith("gpucheck.procs") for m, _, _ in cli)  # imported inside a function
    rank = {u: i for i, layer in enumerate(documented_layers()) for u in layer}
    assert rank["model"] < rank["probes"] < rank["checks"] < rank["cli"]
