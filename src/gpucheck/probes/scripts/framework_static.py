"""Static framework probe, run by the TARGET interpreter (protocol: child/protocol.py).

The default (fast) framework pass: it reads what is installed and imports no framework.
argv[1] is gpucheck's framework table as JSON (gpucheck.model.frameworks.static_probe_options:
which distributions matter, whose Requires-Dist to keep); without it nothing is read, and
"errors" says so. Distribution metadata is read from the metadata folders (dist_info.py);
torch/version.py and tensorflow/python/platform/build_info.py are read as text and parsed to a
syntax tree, never executed.

stdout: exactly one JSON line, {"kind": "environment", "facts": {...}}, whose facts are the
fields of gpucheck.model.environments.PythonEnvironment that the interpreter itself can tell
(version, prefix, platform, site_packages, distributions, torch, tensorflow) plus "errors": one
line for each thing that could not be read (that part is then null or missing).
stderr: "@ <step>" lines.

Standard library only; no gpucheck imports; runs on Python 3.8+ (annotations are never
evaluated: `from __future__ import annotations`).
"""

from __future__ import annotations

import os
import sys

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py, which every child script shares)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

# _ast, not ast: the C module alone; `ast` costs 5 ms to import, a sixth of this child.
import _ast
import contextlib
import json
import re
import site

from . import conda_meta as CONDA  # conda's build strings and depends
from . import dist_info as DISTS  # the installed distributions, from their metadata
from . import protocol
from . import torch_static as TORCH  # torch and the extensions built against it

TYPE_CHECKING = False  # mypy treats this name as True; typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any


class Table:
    """Which distributions matter, as gpucheck's framework table (model/frameworks.py) says in
    this script's argument; this script keeps no names of its own."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.names = frozenset(options.get("names") or ())  # normalised (PEP 503)
        self.pattern = re.compile(options.get("pattern") or "(?!)")  # (?!): matches nothing
        self.requires = frozenset(options.get("requires") or ())  # whose Requires-Dist is kept
        self.requires_pattern = re.compile(options.get("requires_pattern") or "(?!)")
        self.tensorflow = frozenset(options.get("tensorflow") or ())  # own the tensorflow package
        self.torch = frozenset(options.get("torch") or ())
        self.extensions = frozenset(options.get("extensions") or ())  # build facts read
        self.conda_libraries = frozenset(options.get("conda_libraries") or ())


TABLE = Table({})  # main() sets it from the argument

SITE_FOLDER_NAMES = ("site-packages", "dist-packages")
MAX_SOURCE_BYTES = 1 << 20  # version.py and build_info.py are a few hundred bytes
NOT_LITERAL = object()


step = protocol.step
describe = protocol.describe


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wanted(name: str) -> bool:
    return name in TABLE.names or TABLE.pattern.fullmatch(name) is not None


def keeps_requires(name: str) -> bool:
    return name in TABLE.requires or TABLE.requires_pattern.fullmatch(name) is not None


def realpath(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return os.path.abspath(path)


def unique(paths: Iterable[str]) -> list[str]:
    seen = set()
    out = []
    for path in paths:
        if path not in seen:
            seen.add(path)
            out.append(path)
    return out


# --- the interpreter ----------------------------------------------------------------------------


def site_packages() -> list[str]:
    """Site folders that exist, in import order (sys.path), then the rest as site lists them."""
    candidates = []
    getsitepackages = getattr(site, "getsitepackages", None)  # missing in old virtualenvs
    if getsitepackages is not None:
        with contextlib.suppress(Exception):
            candidates.extend(getsitepackages())
    if getattr(site, "ENABLE_USER_SITE", False):
        with contextlib.suppress(Exception):
            candidates.append(site.getusersitepackages())
    for entry in sys.path:
        if entry and os.path.basename(os.path.normpath(entry)) in SITE_FOLDER_NAMES:
            candidates.append(entry)
    folders = unique(realpath(p) for p in candidates if isinstance(p, str) and os.path.isdir(p))
    order = unique(realpath(p) for p in sys.path if p)
    rank = {path: index for index, path in enumerate(order)}
    return sorted(folders, key=lambda path: (rank.get(path, len(order)), folders.index(path)))


# --- build files, read as text -------------------------------------------------------------


def package_dirs(
    package: str, dists: list[dict[str, Any]], owns: Callable[[str], bool]
) -> list[str]:
    """Where `import package` would find it (find_spec loads nothing), then its dists' folders."""
    dirs: list[str] = []
    try:
        import importlib.util

        spec = importlib.util.find_spec(package)
    except Exception:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        dirs.extend(str(d) for d in spec.submodule_search_locations)
    for dist in dists:
        if owns(dist["name"]) and dist["location"]:
            dirs.append(os.path.join(dist["location"], package))
    return unique(dirs)


def find_file(dirs: list[str], relative: str) -> str | None:
    for folder in dirs:
        path = os.path.join(folder, *relative.split("/"))
        if os.path.isfile(path):
            return realpath(path)
    return None


def assignments(path: str) -> dict[str, _ast.expr]:
    """Module-level `NAME = value` and `NAME: T = value` statements: name -> value node."""
    with open(path, "rb") as handle:
        source = handle.read(MAX_SOURCE_BYTES)
    tree = compile(source, path, "exec", _ast.PyCF_ONLY_AST)  # what ast.parse does
    assert isinstance(tree, _ast.Module)
    values: dict[str, _ast.expr] = {}
    for node in tree.body:
        if isinstance(node, _ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, _ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, _ast.Name):
                values[target.id] = value
    return values


def literal(node: _ast.expr | None) -> Any:
    if node is None:
        return NOT_LITERAL
    try:
        return literal_value(node)
    except (ValueError, TypeError, RecursionError):
        return NOT_LITERAL


def literal_value(node: _ast.expr) -> Any:
    """The value of a literal (what ast.literal_eval accepts, less sets and complex sums: none
    appears in a build file); ValueError for anything else."""
    if isinstance(node, _ast.Constant):
        return node.value
    if isinstance(node, _ast.Tuple):
        return tuple(literal_value(e) for e in node.elts)
    if isinstance(node, _ast.List):
        return [literal_value(e) for e in node.elts]
    if isinstance(node, _ast.Dict) and all(k is not None for k in node.keys):
        return {literal_value(k): literal_value(v) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
    if isinstance(node, _ast.UnaryOp) and isinstance(node.op, (_ast.USub, _ast.UAdd)):
        operand = literal_value(node.operand)
        if isinstance(operand, (int, float, complex)) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, _ast.USub) else operand
    raise ValueError(f"not a literal: {type(node).__name__}")


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def dict_literal(node: _ast.expr | None) -> dict[str, Any] | None:
    """`{...}`, `collections.OrderedDict([(k, v), ...])` or `dict(...)` of literals."""
    if isinstance(node, _ast.Dict):
        value = literal(node)
        return value if isinstance(value, dict) else None
    if not isinstance(node, _ast.Call):
        return None
    func = node.func
    called = func.attr if isinstance(func, _ast.Attribute) else getattr(func, "id", None)
    if called not in ("OrderedDict", "dict"):
        return None
    out: dict[str, Any] = {}
    if node.args:
        pairs = literal(node.args[0])
        if pairs is NOT_LITERAL:
            return None
        try:
            out.update(pairs)
        except (TypeError, ValueError):
            return None
    for keyword in node.keywords:
        value = literal(keyword.value)
        if keyword.arg is not None and value is not NOT_LITERAL:
            out[keyword.arg] = value
    return out


WINDOWS_SUFFIX = re.compile(r"64_(\d+)$")


def cuda_version_text(value: Any) -> str | None:
    """The CUDA version as Linux builds write it ("12.2"); Windows ones write "64_112" (11.2)."""
    if not isinstance(value, str) or not value:
        return None
    match = WINDOWS_SUFFIX.match(value)
    if match is None:
        return value
    digits = match.group(1)
    if len(digits) == 3:  # cudart64_110.dll .. cudart64_118.dll
        return f"{digits[:2]}.{digits[2]}"
    if len(digits) == 2 and digits[0] in "6789":  # cudart64_90.dll, cudart64_92.dll
        return f"{digits[0]}.{digits[1]}"
    return digits  # cudart64_12.dll: the major version only


def cudnn_version_text(value: Any) -> str | None:
    """The cuDNN major version as Linux builds write it ("8"); Windows ones write "64_8"."""
    if not isinstance(value, str) or not value:
        return None
    match = WINDOWS_SUFFIX.match(value)
    return match.group(1) if match is not None else value


def bool_or_none(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def tensorflow_build(dists: list[dict[str, Any]], errors: list[str]) -> dict[str, Any] | None:
    def owns(name: str) -> bool:
        return name in TABLE.tensorflow

    installed = any(owns(d["name"]) for d in dists)
    dirs = package_dirs("tensorflow", dists, owns)
    path = find_file(dirs, "python/platform/build_info.py")
    if path is None:
        if installed:
            where = ", ".join(dirs)
            errors.append(f"tensorflow: no tensorflow/python/platform/build_info.py in {where}")
        return None
    try:
        values = assignments(path)
    except Exception as exc:
        errors.append(f"tensorflow: {path}: {describe(exc)}")
        return None
    # TF 2.1-2.2: module-level variables; TF 2.3: build_info = {...}; TF 2.4 and later:
    # build_info = collections.OrderedDict([...]). The dict wins where both say something.
    info: dict[str, Any] = {}
    for name, node in values.items():
        if name not in ("build_info", "cuda_build_info"):
            value = literal(node)
            if value is not NOT_LITERAL:
                info[name] = value
    for name in ("cuda_build_info", "build_info"):
        found = dict_literal(values.get(name))
        if found:
            info.update(found)
    capabilities = info.get("cuda_compute_capabilities")
    if isinstance(capabilities, str):
        capabilities = [c.strip() for c in capabilities.split(",") if c.strip()]
    if not isinstance(capabilities, (list, tuple)):
        capabilities = []
    return {
        "is_cuda_build": bool_or_none(info.get("is_cuda_build")),
        "is_rocm_build": bool_or_none(info.get("is_rocm_build")),
        "cuda_version": cuda_version_text(
            info.get("cuda_version", info.get("cuda_version_number"))
        ),
        "cudnn_version": cudnn_version_text(
            info.get("cudnn_version", info.get("cudnn_version_number"))
        ),
        "cuda_compute_capabilities": [c for c in capabilities if isinstance(c, str)],
        "path": path,
    }


# --- output ---------------------------------------------------------------------------------


def clean(value: Any) -> Any:
    """Strings that encode as UTF-8: undecodable path bytes become U+FFFD."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            try:
                return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            except UnicodeEncodeError:
                return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def collect(facts: dict[str, Any], errors: list[str]) -> None:
    step("interpreter")
    # As platform.python_version() reads it (importing platform costs a millisecond).
    facts["version"] = sys.version.split()[0]
    facts["prefix"] = sys.prefix
    facts["platform"] = sys.platform
    try:
        facts["site_packages"] = site_packages()
    except Exception as exc:
        errors.append(f"site_packages: {describe(exc)}")
    step("distributions")
    dists: list[dict[str, Any]] = DISTS.distributions(sys.modules[__name__], errors)
    facts["distributions"] = dists
    try:  # under the distributions step: conda-meta is read with them; only conda has it
        conda_libraries = CONDA.annotate(dists, TABLE.conda_libraries, errors)
        if conda_libraries:
            facts["conda_libraries"] = conda_libraries
    except Exception as exc:
        errors.append(f"conda-meta: {describe(exc)}")
    this = sys.modules[__name__]
    _gather(facts, errors, "torch", lambda: TORCH.torch_build(this, dists, errors))
    _gather(facts, errors, "tensorflow", lambda: tensorflow_build(dists, errors))
    _gather(facts, errors, "extensions", lambda: TORCH.collect(this, dists, errors))


def _gather(facts: dict[str, Any], errors: list[str], key: str, read: Callable[[], Any]) -> None:
    """One framework's facts under `key`, as a step of its own; what it raises is an error
    line and the other frameworks are still read."""
    step(key)
    try:
        facts[key] = read()
    except Exception as exc:
        errors.append(f"{key}: {describe(exc)}")


def main() -> None:
    errors: list[str] = []
    facts: dict[str, Any] = {
        "version": None,
        "prefix": None,
        "platform": None,
        "site_packages": [],
        "distributions": [],
        "torch": None,
        "tensorflow": None,
        "extensions": [],
        "errors": errors,
    }
    global TABLE
    try:
        TABLE = Table(protocol.arguments(sys.argv, {}))
    except Exception as exc:
        errors.append(f"arguments: {describe(exc)}")
    if not TABLE.names:
        errors.append("arguments: no distribution names to read (gpucheck passes its table)")
    try:
        collect(facts, errors)
    except Exception as exc:
        errors.append(f"unexpected: {describe(exc)}")
    try:
        line = json.dumps({"kind": "environment", "facts": clean(facts)})
    except Exception as exc:
        problem = f"the facts could not be encoded: {describe(exc)}"
        line = json.dumps({"kind": "environment", "facts": {"errors": [problem]}})
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    main()
