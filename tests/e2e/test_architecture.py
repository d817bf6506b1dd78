"""The house rule, kept by walking the imports of src/gpucheck (docs/architecture.md): a
module imports only its own package and the layers below it, and no import circle exists.

The layer order is read from that page's own block, so the rule a newcomer reads and the rule
this test holds cannot drift apart. A child script's path is an import the walk cannot see: each
package finds its own scripts through gpucheck.child.run.script(), and this test holds every such
reference inside the package that makes it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
        # The child scripts run in other interpreters and import no gpucheck module at all
        # (their folder's __init__, for the parent's side, is a module like any other).
        if "scripts" in path.relative_to(PACKAGE).parts and path.name != "__init__.py":
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
    assert any(m == "gpucheck.child.run" and runtime for m, _, runtime in native)
    reading = imports(PACKAGE / "inputs.py", known)
    assert ("gpucheck.model.snapshot", False) in [(m, r) for m, _, r in reading]
    cli = imports(PACKAGE / "cli" / "procs.py", known)
    assert any(m.startswith("gpucheck.procs") for m, _, _ in cli)  # imported inside a function
    rank = {u: i for i, layer in enumerate(documented_layers()) for u in layer}
    assert rank["model"] < rank["child"] < rank["probes"] < rank["checks"] < rank["cli"]


# --- child scripts: found by their own package, through one helper ---------------------------

HELPER = "gpucheck.child.run"  # defines script(package, name); exempt from the literal rule
SCRIPT_FOLDERS = sorted(p.parent for p in PACKAGE.glob("**/scripts/__init__.py"))


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def script_files() -> dict[str, list[Path]]:
    """Every child script (and helper beside them), by file name."""
    found: dict[str, list[Path]] = {}
    for folder in SCRIPT_FOLDERS:
        for path in folder.glob("*.py"):
            if path.name != "__init__.py":
                found.setdefault(path.name, []).append(path)
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    """id() of every docstring constant: prose may name any script."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _names_a_script(text: str, names: dict[str, list[Path]]) -> bool:
    parts = [p for p in text.replace("\\", "/").split("/") if p]
    return "scripts" in parts or (bool(parts) and parts[-1] in names)


def script_references(module: str, path: Path, names: dict[str, list[Path]]) -> list[str]:
    """What in one module (not a child script) reaches a child script other than through
    script("<its own package>", "<a file in that package's scripts/ folder>")."""
    own = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed: set[int] = set()
    wrong = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called != "script":
            continue
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        where = f"{_shown(path)}:{node.lineno}"
        if len(args) != 2 or node.keywords or not all(isinstance(a, str) for a in args):
            wrong.append(f"{where} script() takes two literals: its package and a file name")
            continue
        package, name = str(args[0]), str(args[1])
        allowed.update(id(a) for a in node.args)
        if not (own == package or own.startswith(package + ".")) or unit(package) != unit(own):
            wrong.append(f"{where} {module} runs a script of another package: {package}")
        target = SRC.joinpath(*package.split("."), "scripts", name)
        if not target.is_file():
            wrong.append(f"{where} no such child script: {_shown(target)}")
    if module == HELPER:
        return wrong
    prose = _docstrings(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in allowed | prose
            and _names_a_script(node.value, names)
        ):
            wrong.append(
                f"{_shown(path)}:{node.lineno} a path to a child script that does "
                f"not go through script(): {node.value!r}"
            )
    return wrong


# The modules of gpucheck/child that child scripts share: the protocol, and the timed
# all-reduce (bench's and preflight's). Standard library only, like the scripts.
CHILD_SHARED = ("protocol", "collective")


def script_imports(path: Path) -> list[str]:
    """A child script's relative imports that leave its own folder, other than the shared
    protocol (gpucheck/child/protocol.py, the second folder of a script's package)."""
    wrong = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        where = f"{_shown(path)}:{node.lineno}"
        if node.level > 1:
            wrong.append(f"{where} imports from above its folder")
            continue
        targets = [node.module] if node.module else [a.name for a in node.names]
        for target in targets:
            first = (target or "").split(".")[0]
            if (path.parent / f"{first}.py").is_file():
                continue
            if first in CHILD_SHARED and (PACKAGE / "child" / f"{first}.py").is_file():
                continue
            wrong.append(f"{where} imports {first}, in neither its folder nor gpucheck/child")
    return wrong


def test_a_child_script_is_reached_only_from_its_own_package() -> None:
    names = script_files()
    assert {"native.py", "bench.py", "watch.py", "fit_trace.py"} <= set(names)
    wrong = []
    for module, path in sorted(modules().items()):
        wrong += script_references(module, path, names)
    assert wrong == []


def test_child_scripts_import_their_own_folder_and_the_protocol_alone() -> None:
    wrong = []
    for folder in SCRIPT_FOLDERS:
        assert not (folder / "protocol.py").exists(), "it would shadow the shared protocol"
        for path in sorted(folder.glob("*.py")):
            if path.name != "__init__.py":
                wrong += script_imports(path)
    assert wrong == []
    # The scripts live with the feature that runs them.
    folders = {f.relative_to(PACKAGE).as_posix() for f in SCRIPT_FOLDERS}
    assert folders == {
        "probes/scripts",
        "bench/scripts",
        "watch/scripts",
        "fit/scripts",
        "preflight/scripts",
    }


def test_the_child_package_is_a_shared_layer() -> None:
    """gpucheck.child imports the model alone: never a probe, a feature or the command line;
    and the scripts' folders hand their modules the one protocol module."""
    known = modules()
    rank = {u: i for i, layer in enumerate(documented_layers()) for u in layer}
    targets = {
        unit(target)
        for name, path in known.items()
        if unit(name) == "child"
        for target, _, _ in imports(path, known)
    }
    assert targets == {"child", "model"}
    features = ("probes", "checks", "procs", "watch", "bench", "fit", "fleet", "cli")
    assert all(rank["child"] < rank[f] for f in features)
    for folder in SCRIPT_FOLDERS:
        init = ".".join(folder.relative_to(SRC).parts)
        shared = {t for t, _, _ in imports(folder / "__init__.py", known)}
        assert "gpucheck.child.protocol" in shared, init
        assert shared <= {f"gpucheck.child.{m}" for m in CHILD_SHARED}, init


def test_the_script_check_can_fail(tmp_path: Path) -> None:
    """The checks above find what they must: another package's script through the helper, a
    hand-made path, a script that does not exist, and a script importing from elsewhere."""
    names = script_files()
    module = tmp_path / "trace.py"
    module.write_text(
        "from pathlib import Path\n"
        "from gpucheck.child.run import script\n"
        'MINE = script("gpucheck.fit", "fit_trace.py")\n'
        'THEIRS = script("gpucheck.bench", "bench.py")\n'
        'GONE = script("gpucheck.fit", "no_such_script.py")\n'
        'BY_HAND = Path(__file__).parent / "../bench/scripts/bench.py"\n'
        'FOLDER = Path(__file__).parent.parent / "probes" / "scripts"\n'
    )
    found = script_references("gpucheck.fit.trace", module, names)
    assert [line.split(" ", 1)[0].rsplit(":", 1)[1] for line in found] == ["4", "5", "6", "7"]
    assert "another package: gpucheck.bench" in found[0]
    assert "no such child script" in found[1]
    assert "'../bench/scripts/bench.py'" in found[2] and "'scripts'" in found[3]
    child = tmp_path / "scripts" / "child.py"
    child.parent.mkdir()
    (tmp_path / "scripts" / "helper.py").write_text("")
    child.write_text(
        "from . import protocol\nfrom .helper import x\nfrom .bench_common import y\n"
        "from .. import run\n"
    )
    assert [w.split(" ", 1)[1] for w in script_imports(child)] == [
        "imports bench_common, in neither its folder nor gpucheck/child",
        "imports from above its folder",
    ]
