"""The child-process runner survives children that crash, hang, abort or print garbage."""

from __future__ import annotations

import ast
import sys
import textwrap
import time
from pathlib import Path

from conftest import require_python38

from gpucheck.child.run import run_script
from gpucheck.model.frameworks import static_probe_options
from gpucheck.probes import nvml


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "child.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_records_and_steps_are_collected(tmp_path: Path) -> None:
    child = script(
        tmp_path,
        """
        import json, os, sys
        os.write(2, b"@ first\\n")
        print(json.dumps({"a": 1}))
        print("a library chatting on stdout")
        print("{not json")
        print(json.dumps([1, 2]))
        os.write(2, b"@ second\\n")
        sys.stderr.write("some warning\\n")
        print(json.dumps({"b": 2}))
        """,
    )
    result = run_script(child, [], timeout=30)
    assert result.ok and result.status == "ok"
    assert result.records == [{"a": 1}, {"b": 2}]
    assert result.last_step == "second"
    assert result.message == "some warning"
    assert result.describe(30) is None


def test_crash_keeps_what_came_before_and_names_the_step(tmp_path: Path) -> None:
    child = script(
        tmp_path,
        """
        import ctypes, json, os, sys
        print(json.dumps({"gpu": 0}), flush=True)
        os.write(2, b"@ nvmlDeviceGetEccMode gpu=1\\n")
        ctypes.string_at(0)  # segfault
        """,
    )
    result = run_script(child, [], timeout=30)
    assert result.status == "crashed"
    assert result.records == [{"gpu": 0}]
    problem = result.describe(30)
    assert problem is not None
    assert "SIGSEGV" in problem and "nvmlDeviceGetEccMode gpu=1" in problem


def test_abort_message_is_kept(tmp_path: Path) -> None:
    child = script(
        tmp_path,
        """
        import os, sys
        sys.stderr.write("Invalid handle. Cannot load symbol cudnnGetVersion\\n")
        sys.stderr.flush()
        os.abort()
        """,
    )
    result = run_script(child, [], timeout=30)
    problem = result.describe(30) or ""
    assert "SIGABRT" in problem and "Cannot load symbol cudnnGetVersion" in problem


def test_hang_is_cut_at_the_time_bound(tmp_path: Path) -> None:
    child = script(
        tmp_path,
        """
        import json, os, subprocess, sys, time
        print(json.dumps({"header": True}), flush=True)
        # a grandchild holding the pipes must not keep the parent waiting either
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        os.write(2, b"@ nvmlInit\\n")
        time.sleep(60)
        """,
    )
    start = time.monotonic()
    result = run_script(child, [], timeout=1.5)
    elapsed = time.monotonic() - start
    assert result.timed_out and result.status == "timeout"
    assert elapsed < 15
    assert result.records == [{"header": True}]
    assert result.describe(1.5) == "timed out after 1.5 s in nvmlInit"


def test_exit_status_and_missing_interpreter(tmp_path: Path) -> None:
    child = script(tmp_path, "import sys; sys.stderr.write('boom\\n'); sys.exit(4)")
    result = run_script(child, [], timeout=30)
    assert result.status == "error"
    assert result.describe(30) == "exited with status 4: boom"
    missing = run_script(child, [], timeout=30, python=str(tmp_path / "no-python"))
    assert missing.status == "error" and "could not start" in (missing.describe(30) or "")


def test_nvml_assemble_drops_malformed_records() -> None:
    facts = nvml.assemble(
        [
            {
                "kind": "header",
                "driver_version": "535.104.05",
                "device_count": 2,
                "init_error": None,
                "cuda_driver_version": "12020",
            },
            {"kind": "gpu", "facts": {"index": 0, "name": "Tesla T4", "memory_total": "lots"}},
            {"kind": "gpu", "facts": {"index": 1, "name": "Tesla T4"}},
            {"kind": "unknown"},
        ]
    )
    assert facts.driver_version == "535.104.05"
    assert facts.cuda_driver_version is None  # a string where an int belongs is not trusted
    assert [g.index for g in facts.gpus] == [1]


def test_nvml_probe_retries_without_a_crashing_call(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A driver function that segfaults costs that field only: the probe reruns without it."""
    fake = script(
        tmp_path,
        """
        import ctypes, json, os, sys
        skip = json.loads(sys.argv[1])["skip"]
        print(json.dumps({"kind": "header", "driver_version": "550.54.14", "device_count": 1}),
              flush=True)
        if "nvmlDeviceGetEccMode" not in skip:
            os.write(2, b"@ nvmlDeviceGetEccMode gpu=0\\n")
            ctypes.string_at(0)
        facts = {"index": 0, "name": "NVIDIA A100-SXM4-80GB",
                 "field_errors": {"ecc_enabled": "Crashed"}}
        print(json.dumps({"kind": "gpu", "facts": facts}), flush=True)
        """,
    )
    monkeypatch.setattr(nvml, "SCRIPT", fake)
    facts, run = nvml.probe_nvml(timeout=30)
    assert [g.name for g in facts.gpus] == ["NVIDIA A100-SXM4-80GB"]
    assert facts.gpus[0].field_errors == {"ecc_enabled": "Crashed"}
    assert run.status == "crashed"
    assert run.error is not None and "SIGSEGV" in run.error and "nvmlDeviceGetEccMode" in run.error


PACKAGE = Path(__file__).resolve().parents[2] / "src/gpucheck"
# Each package keeps the scripts it runs as children in its own scripts/ folder; the other
# files there are modules they import.
RUN_AS_CHILDREN = (
    "bench/scripts/allreduce.py",
    "bench/scripts/bench.py",
    "fit/scripts/fit_trace.py",
    "probes/scripts/extension_deep.py",
    "probes/scripts/framework_deep.py",
    "probes/scripts/framework_static.py",
    "probes/scripts/native.py",
    "probes/scripts/nvml.py",
    "watch/scripts/watch.py",
)


def _imports(path: Path) -> list[ast.ImportFrom | ast.Import]:
    return [
        n
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]


def test_child_scripts_use_only_the_standard_library() -> None:
    """The child scripts run under other interpreters (no gpucheck there): they import the
    standard library, each other and the shared protocol (relatively), the NVML binding
    (nvml.py, watch.py), and the frameworks they probe by name only (importlib.import_module).
    The same holds for protocol.py, which they all import."""
    scripts = sorted(
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.glob("*/scripts/*.py")
        if p.name != "__init__.py"
    )
    assert set(RUN_AS_CHILDREN) <= set(scripts)
    assert "bench/scripts/bench_common.py" in scripts and "watch/scripts/watch_shared.py" in scripts
    stdlib = sys.stdlib_module_names
    for name in [*scripts, "child/protocol.py"]:
        for node in _imports(PACKAGE / name):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                continue  # a module of its folder, or the protocol
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            modules += [] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for module in modules:
                top = module.split(".")[0]
                assert top in stdlib or top in ("__future__", "pynvml"), (name, module)


def test_child_scripts_share_one_protocol_module() -> None:
    """Each script speaks the protocol through child/protocol.py: none defines its own step,
    emit or exception-line helpers (they were copied into six scripts once)."""
    for name in RUN_AS_CHILDREN:
        tree = ast.parse((PACKAGE / name).read_text())
        relative = {
            a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.level == 1
            for a in n.names
        }
        assert "protocol" in relative, name
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert not defined & {"step", "emit", "one_line", "describe", "error_name"}, name
    helpers = ast.parse((PACKAGE / "probes/scripts/deep_capture.py").read_text()).body
    assert not {n.name for n in helpers if isinstance(n, ast.FunctionDef)} & {"step", "trim"}


def test_a_script_finds_its_protocol_module_without_sys_path(tmp_path: Path) -> None:
    """Run as a script, each finds child/protocol.py by its own path (its folder's package,
    extended with gpucheck/child): not through sys.path, which PYTHONSAFEPATH (3.11+) leaves
    without the script's folder, and where a module of the same name must not win."""
    import json
    import os

    (tmp_path / "protocol.py").write_text("raise SystemExit('the wrong module')\n")
    env = {**os.environ, "PYTHONSAFEPATH": "1", "PYTHONPATH": str(tmp_path)}
    task = [{"id": "y", "kind": "cudart", "path": str(tmp_path / "libcudart.so.12")}]
    native = run_script(PACKAGE / "probes/scripts/native.py", [json.dumps(task)], 30, env=env)
    assert native.ok, native.message
    assert native.last_step == "task y"
    assert native.records[0]["id"] == "y"
    # A feature's script, in a folder of its own: the same protocol module, two folders up.
    bench = run_script(PACKAGE / "bench/scripts/bench.py", [], 30, env=env)
    assert bench.returncode == 2 and bench.message == "", bench.message
    assert [r["kind"] for r in bench.records] == ["error"]
    assert bench.records[0]["what"] == "arguments"


def test_a_script_run_by_path_has_its_folder_taken_off_sys_path(tmp_path: Path) -> None:
    """Python puts a script's folder first on sys.path; the protocol module takes it off (so
    that nothing beside the scripts shadows a module of the target interpreter), for a script
    in any package's scripts/ folder, while the folder's own modules still import."""
    import json
    import os
    import subprocess

    package = tmp_path / "gpucheck"
    (package / "child").mkdir(parents=True)
    (package / "child" / "protocol.py").write_bytes((PACKAGE / "child/protocol.py").read_bytes())
    folder = package / "feature" / "scripts"
    folder.mkdir(parents=True)
    (folder / "helper.py").write_text("VALUE = 'the helper beside the script'\n")
    preamble = (PACKAGE / "fit/scripts/fit_trace.py").read_text()
    start = preamble.index("if not __package__:")
    end = preamble.index("from . import protocol")
    (folder / "child.py").write_text(
        "import json, os, sys\n"
        + preamble[start:end]
        + "from . import protocol\n"
        + "from .helper import VALUE\n"
        + "protocol.emit({'path': sys.path, 'helper': VALUE, 'protocol': protocol.__file__})\n"
    )
    proc = subprocess.run(
        [sys.executable, str(folder / "child.py")],
        capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path,
    )  # fmt: skip
    record = json.loads(proc.stdout)
    assert record["helper"] == "the helper beside the script"
    assert os.path.realpath(record["protocol"]) == str(package.resolve() / "child/protocol.py")
    assert str(folder.resolve()) not in [os.path.realpath(p or ".") for p in record["path"]]


def test_child_scripts_run_on_python_3_8(tmp_path: Path) -> None:
    """The child scripts must run under the user's interpreter, however old (3.8+), as
    gpucheck runs them (-S where it does), each with the shared protocol module."""
    import json

    python = require_python38()
    probes = PACKAGE / "probes/scripts"
    task = [{"id": "x", "kind": "cudart", "path": str(tmp_path / "libcudart.so.12")}]
    native = run_script(
        probes / "native.py", [json.dumps(task)], 30, python=python, stdlib_only=True
    )
    assert native.ok, native.message
    assert native.last_step == "task x"
    assert native.records[0]["id"] == "x"
    assert "OSError" in str(native.records[0]["result"])
    nvml_child = run_script(probes / "nvml.py", ['{"init": false}'], 30, python=python)
    assert nvml_child.ok, nvml_child.message
    assert nvml_child.records[0]["kind"] == "header"
    # This 3.8 has no pynvml: the watch child says so in its header.
    watch = run_script(PACKAGE / "watch/scripts/watch.py", ['{"interval": 1}'], 30, python=python)
    assert watch.ok, watch.message
    (header,) = watch.records
    assert header["kind"] == "header"
    assert header["init_error"] == {
        "name": "BindingMissing",
        "message": "No module named 'pynvml'",
    }
    table = json.dumps(static_probe_options())
    static = run_script(probes / "framework_static.py", [table], 30, python=python)
    assert static.ok and static.last_step == "extensions", static.message
    facts = static.records[0]["facts"]
    assert isinstance(facts, dict) and facts["version"].startswith("3.8.")
    assert facts["errors"] == []
    # Asked for what they cannot do, the others answer in the protocol and exit 2.
    for name, args, record in (
        ("bench/scripts/bench.py", [], {"kind": "error", "what": "arguments"}),
        ("fit/scripts/fit_trace.py", [], {"kind": "error", "stage": "arguments"}),
        ("probes/scripts/extension_deep.py", [], {"kind": "extension"}),
        ("probes/scripts/framework_deep.py", ["paddle"], {"kind": "runtime"}),
    ):
        result = run_script(PACKAGE / name, args, 30, python=python)
        assert result.returncode == 2, (name, result.message)
        assert result.message == "", name  # no traceback
        assert len(result.records) == 1, name
        assert record.items() <= result.records[0].items(), (name, result.records)


def test_a_grandchild_that_left_the_group_does_not_stretch_the_bound(tmp_path: Path) -> None:
    child = script(
        tmp_path,
        """
        import os, subprocess, sys, time
        # A new session: out of reach of the group kill, and it keeps the pipes open.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                         start_new_session=True)
        os.write(2, b"@ nvmlInit\\n")
        time.sleep(30)
        """,
    )
    start = time.monotonic()
    result = run_script(child, [], timeout=1.0)
    assert result.timed_out
    assert time.monotonic() - start < 10  # the bound plus the kill grace, not the sleep
