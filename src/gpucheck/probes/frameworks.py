"""Framework facts per Python environment: which interpreters to look at, the default pass
(what is on disk, no framework imported) and the deep pass (each framework imported in its
own child process, in parallel, each bounded in time).

Frameworks live in the user's venv or conda env, often not where gpucheck is installed
(pipx): by default the interpreter running gpucheck and, if different, the active
VIRTUAL_ENV and CONDA_PREFIX are probed; `--python` (repeatable: a path, a name on PATH, an
environment's folder, a glob, or @FILE of those, one a line) probes those interpreters instead,
side by side. The probe scripts run inside the target interpreter and use its standard library
only.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpucheck.child.run import ChildResult, Gate, run_script, script
from gpucheck.model.decoding import DecodeError, from_dict
from gpucheck.model.environments import ExtensionImport, FrameworkRuntime, PythonEnvironment
from gpucheck.model.frameworks import (
    BY_KEY,
    JAX,
    TENSORFLOW,
    installed_extensions,
    installed_frameworks,
    static_probe_options,
)
from gpucheck.model.snapshot import ProbeRun
from gpucheck.model.types import ImportStatus, RunStatus
from gpucheck.probes.library_code import add_library_code

STATIC_SCRIPT = script("gpucheck.probes", "framework_static.py")
DEEP_SCRIPT = script("gpucheck.probes", "framework_deep.py")
EXTENSION_SCRIPT = script("gpucheck.probes", "extension_deep.py")
# Importing TensorFlow from a cold disk or initialising CUDA on eight GPUs takes a while.
DEEP_MIN_TIMEOUT = 60.0
MAX_CHILDREN = 8  # framework children running at once, default and deep pass alike


class PythonNotFound(ValueError):
    """--python names no runnable interpreter."""


def _venv_python(prefix: str) -> Path | None:
    for candidate in (Path(prefix) / "bin" / "python", Path(prefix) / "python.exe"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def resolve_python(python: str) -> str:
    """--python as the user meant it: a path is a path (./python is this folder's, never one
    on PATH); a bare name is looked up on PATH. Absolute, so the report says which it was."""
    if os.sep in python or (os.altsep and os.altsep in python):
        found: str | None = os.path.abspath(python)
    else:
        found = shutil.which(python)
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise PythonNotFound(f"--python: {python}: no such interpreter")
    return found


# --python @FILE: one interpreter a line; more than this is a file of something else.
PYTHON_LIST_LIMIT = 4096
GLOB_CHARS = "*?["


def _environment_python(path: str) -> str:
    """An environment's folder (a venv, a conda env) stands for its interpreter."""
    found = _venv_python(path)
    return str(found) if found is not None else path


def _read_python_list(name: str) -> list[str]:
    """@FILE: paths, names or globs, one a line; blank lines and # comments skipped."""
    try:
        with open(os.path.expanduser(name), encoding="utf-8") as stream:
            text = stream.read(1 << 20)
    except FileNotFoundError:
        raise PythonNotFound(f"--python @{name}: cannot read: no such file") from None
    except IsADirectoryError:
        raise PythonNotFound(f"--python @{name}: is a folder, not a list of interpreters") from None
    except OSError as exc:  # the reason alone: the exception's text repeats the name, quoted
        raise PythonNotFound(f"--python @{name}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise PythonNotFound(f"--python @{name}: not UTF-8 text") from None
    lines = [line.strip() for line in text.splitlines()]
    values = [line for line in lines if line and not line.startswith("#")]
    if not values:
        raise PythonNotFound(f"--python @{name}: names no interpreter")
    if len(values) > PYTHON_LIST_LIMIT:
        raise PythonNotFound(f"--python @{name}: more than {PYTHON_LIST_LIMIT} lines")
    return values


def _expand_one(value: str) -> list[str]:
    if any(c in value for c in GLOB_CHARS):
        matches = sorted(glob.glob(os.path.expanduser(value)))
        if not matches:
            raise PythonNotFound(f"--python {value}: the pattern matches nothing")
        found = [_environment_python(m) for m in matches]
        runnable = [f for f in found if os.path.isfile(f) and os.access(f, os.X_OK)]
        if not runnable:
            raise PythonNotFound(f"--python {value}: the pattern matches no interpreter")
        return [os.path.abspath(f) for f in runnable]
    if os.sep in value and os.path.isdir(value):  # (a bare name is looked up on PATH)
        return [resolve_python(_environment_python(value))]
    return [resolve_python(value)]


def expand_pythons(values: Sequence[str]) -> list[str]:
    """--python's values as the interpreters they name, absolute, in the order given, each once
    (the same path twice, or through a glob and a list, is probed once). A glob keeps only the
    runnable interpreters it matches; raises PythonNotFound for a value that names none."""
    found: list[str] = []
    for value in values:
        if value.startswith("@") and len(value) > 1:
            paths = [p for v in _read_python_list(value[1:]) for p in _expand_one(v)]
        else:
            paths = _expand_one(value)
        found += [p for p in paths if p not in found]
    return found


def interpreters(
    env: Mapping[str, str], python: str | Sequence[str] | None = None
) -> list[tuple[str, str]]:
    """(interpreter, origin) pairs to probe, one per environment (told apart by prefix: every
    venv's python is a link to the same base interpreter)."""
    if python:
        values = [python] if isinstance(python, str) else list(python)
        return [(path, "--python") for path in expand_pythons(values)]
    found = [(sys.executable, "gpucheck")]
    prefixes = {os.path.realpath(sys.prefix)}
    for var, origin in (("VIRTUAL_ENV", "virtualenv"), ("CONDA_PREFIX", "conda")):
        prefix = env.get(var)
        if not prefix or os.path.realpath(prefix) in prefixes:
            continue
        candidate = _venv_python(prefix)
        if candidate is not None:
            found.append((str(candidate), origin))
            prefixes.add(os.path.realpath(prefix))
    return found


def _last_record(result: ChildResult, kind: str) -> dict[str, object] | None:
    records = [r for r in result.records if r.get("kind") == kind]
    facts = records[-1].get("facts") if records else None
    return facts if isinstance(facts, dict) else None


def probe_environment(
    python: str, origin: str, timeout: float, env: Mapping[str, str]
) -> PythonEnvironment:
    """The default pass in one interpreter: distributions and build facts read from disk."""
    options = json.dumps(static_probe_options())
    result = run_script(STATIC_SCRIPT, [options], timeout, python=python, env=dict(env))
    facts = _last_record(result, "environment")
    problem = result.describe(timeout)
    if facts is None:
        return PythonEnvironment(
            python=python, origin=origin, error=problem or "the probe printed no facts"
        )
    try:
        found = from_dict(PythonEnvironment, {**facts, "python": python, "origin": origin})
    except DecodeError as exc:
        return PythonEnvironment(python=python, origin=origin, error=f"unreadable facts: {exc}")
    found.error = problem  # the facts came, but the child did not end well
    return found


def _ended(result: ChildResult) -> ImportStatus:
    """How an import child that did not end well ended: crashed, timed out, or an error."""
    return result.status if result.status in ("crashed", "timeout") else "error"


def probe_runtime(
    python: str,
    framework: str,
    timeout: float,
    env: Mapping[str, str],
    gate: Gate | None = None,
) -> FrameworkRuntime:
    """The deep pass for one framework: import it in a child and keep its last record. With
    a gate, the child imports at once and holds its CUDA calls until the gate opens."""
    child_env = dict(env)
    # TensorFlow's loader warnings name the library it could not load: keep them on.
    child_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    result = run_script(DEEP_SCRIPT, [framework], timeout, python=python, env=child_env, gate=gate)
    facts = _last_record(result, "runtime")
    problem = result.describe(timeout)
    runtime = FrameworkRuntime(framework=framework, status="error")
    if facts is not None:
        try:
            runtime = from_dict(FrameworkRuntime, facts)
        except DecodeError as exc:
            runtime.error = f"unreadable facts: {exc}"
    if problem is not None:
        # What the child did before it died stays; the status says how it ended.
        runtime.status = _ended(result)
        runtime.error = problem if not runtime.error else f"{runtime.error}; {problem}"
        runtime.failure = result.failure
    if runtime.framework == TENSORFLOW.key:
        # Windows builds report DLL suffixes ("64_112"): versions as the static pass writes
        # them, by the same function, so that no check has to know the difference.
        from gpucheck.probes.scripts.framework_static import (
            cuda_version_text,
            cudnn_version_text,
        )

        runtime.cuda_version = cuda_version_text(runtime.cuda_version)
        runtime.cudnn_version = cudnn_version_text(runtime.cudnn_version)
    runtime.xla_devices = xla_devices(runtime)
    return runtime


def xla_devices(rt: FrameworkRuntime) -> list[str] | None:
    """The GPUs XLA compiles for: JAX's devices are XLA's own; TensorFlow's XLA (jit_compile)
    targets the GPUs TensorFlow lists. None where the devices were never listed."""
    framework = BY_KEY.get(rt.framework)
    if framework is None or not framework.xla or rt.device_count is None:
        return None
    if rt.framework == JAX.key and rt.backend not in ("gpu", "cuda"):
        return []
    cpu = ("cpu", "tfrt_cpu", "/physical_device:cpu")
    return [d for d in rt.devices if not d.lower().startswith(cpu)]


def probe_extension(
    python: str, dist: str, module: str, timeout: float, env: Mapping[str, str]
) -> ExtensionImport:
    """Import one extension (TensorRT: and build a tiny engine) in its own child."""
    result = run_script(EXTENSION_SCRIPT, [dist, module], timeout, python=python, env=dict(env))
    facts = _last_record(result, "extension")
    found = ExtensionImport(name=dist, module=module, status="error")
    if facts is not None:
        try:
            found = from_dict(ExtensionImport, facts)
        except DecodeError as exc:
            found.error = f"unreadable facts: {exc}"
    problem = result.describe(timeout)
    if problem is not None:
        found.status = _ended(result)
        found.error = problem if not found.error else f"{found.error}; {problem}"
        found.failure = result.failure
    return found


def probe_frameworks(
    env: Mapping[str, str], timeout: float, pythons: Sequence[str] = ()
) -> tuple[list[PythonEnvironment], ProbeRun]:
    """The default pass in every interpreter: `pythons` (--python's, as expand_pythons gave
    them), else gpucheck's own and the active environment's."""
    start = time.monotonic()
    pairs = [(p, "--python") for p in pythons] if pythons else interpreters(env)
    # Every interpreter side by side, as many children at once as the deep pass allows: a
    # machine with dozens of conda envs is not forked dozens of times at once.
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_CHILDREN, len(pairs)))) as pool:
        # Each environment's kernel libraries are read as soon as its facts are back.
        environments = list(
            pool.map(lambda p: add_library_code(probe_environment(p[0], p[1], timeout, env)), pairs)
        )
    failed = [e for e in environments if e.error and not e.distributions]
    run = ProbeRun(
        "frameworks",
        "error" if failed else "ok",
        round((time.monotonic() - start) * 1000, 1),
        "; ".join(f"{e.python}: {e.error}" for e in failed) or None,
    )
    return environments, run


def probe_deep(
    environments: list[PythonEnvironment],
    env: Mapping[str, str],
    timeout: float,
    gate: Gate | None = None,
) -> ProbeRun:
    """Import every installed framework of every environment, all side by side. With a gate
    (doctor --deep beside the other probes), the frameworks import at once and wait for it
    before any CUDA call; the extensions (whose import may start CUDA: TensorRT builds an
    engine) start once it has opened. A gate that says stop leaves no runtime facts."""
    start = time.monotonic()
    bound = max(timeout, DEEP_MIN_TIMEOUT)
    jobs = [(e, fw) for e in environments for fw in installed_frameworks(e)]
    extensions = [(e, dist, mod) for e in environments for dist, mod in installed_extensions(e)]
    if jobs or extensions:
        with ThreadPoolExecutor(max_workers=min(MAX_CHILDREN, len(jobs) + len(extensions))) as pool:
            runs = [pool.submit(probe_runtime, e.python, fw, bound, env, gate) for e, fw in jobs]
            if gate is not None:
                gate.wait()
                if not gate.went:
                    return ProbeRun("frameworks_deep", "skipped", 0.0, gate.word[5:].strip())
            imports = [
                pool.submit(probe_extension, e.python, dist, mod, bound, env)
                for e, dist, mod in extensions
            ]
            for (environment, _), run in zip(jobs, runs, strict=True):
                environment.runtimes.append(run.result())
            for (environment, _, _), done in zip(extensions, imports, strict=True):
                environment.extension_imports.append(done.result())
    bad = [r for e in environments for r in e.runtimes if r.status in ("crashed", "timeout")]
    status: RunStatus = (
        "ok" if not bad else ("crashed" if bad[0].status == "crashed" else "timeout")
    )
    return ProbeRun(
        "frameworks_deep",
        status,
        round((time.monotonic() - start) * 1000, 1),
        "; ".join(f"{r.framework}: {r.error}" for r in bad) or None,
    )
