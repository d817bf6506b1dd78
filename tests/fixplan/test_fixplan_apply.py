"""`gpucheck fix --apply` and `--undo` for real: a venv, wheels built here and served from a
folder (pip --no-index --find-links, no network), a failing step, and Ctrl-C mid-step."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpucheck.fixplan.plan import PlanHost, build_plan
from gpucheck.fixplan.render import plan_dict
from gpucheck.model.finding import Finding, Status
from gpucheck.model.fix import Change, Fix, Step, Tool
from gpucheck.model.layers import Layer

pytestmark = pytest.mark.slow


def wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal pure-Python wheel of `name` at `version` (one module)."""
    module = name.replace("-", "_")
    dist = f"{module}-{version}.dist-info"
    path = folder / f"{module}-{version}-py3-none-any.whl"
    files = {
        f"{module}/__init__.py": f'VERSION = "{version}"\n',
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{f},,\n" for f in [*files, f"{dist}/RECORD"])
    with zipfile.ZipFile(path, "w") as zf:
        for arcname, text in files.items():
            zf.writestr(arcname, text)
    return path


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    for version in ("1.0", "2.0"):
        wheel(folder, "demo-pkg", version)
    return folder


def offline(wheels: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        **extra,
    }


@pytest.fixture
def venv(tmp_path: Path, wheels: Path) -> Path:
    folder = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "demo-pkg==1.0"],
        env=offline(wheels),
        check=True,
    )
    return python


def freeze(python: Path) -> str:
    return subprocess.run(
        [str(python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True
    ).stdout


def plan_file(tmp_path: Path, python: Path, *commands: str) -> Path:
    steps = [
        Step.run(
            "", c, Tool.PIP, changes=[Change("demo-pkg", "1.0", "2.0")], environment=str(python)
        )
        for c in commands
    ]
    findings = [
        Finding(f"demo.{n}", Layer.FRAMEWORKS, Status.FAIL, "demo", fix=Fix.of(step))
        for n, step in enumerate(steps)
    ]
    # Each step its own package (no merging): the names differ per command.
    for n, f in enumerate(findings):
        assert f.fix is not None
        f.fix.steps[0].changes = [Change(f"pkg{n}", None, "1")]
    plan = build_plan(findings, PlanHost(socket.gethostname()), [str(python)])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_dict(plan)))
    return path


def gpucheck(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpucheck", "fix", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def journal(record: Path) -> dict[str, object]:
    return json.loads((record / "journal.json").read_text())  # type: ignore[no-any-return]


def test_apply_replaces_the_wheel_and_undo_restores_the_environment_exactly(
    tmp_path: Path, venv: Path, wheels: Path
) -> None:
    before = freeze(venv)
    assert "demo-pkg==1.0" in before.splitlines()
    plan = plan_file(tmp_path, venv, "pip install 'demo-pkg==2.0'")
    record = tmp_path / "record"
    done = gpucheck(
        "--plan", str(plan), "--apply", "--yes", "--record", str(record), env=offline(wheels)
    )
    assert done.returncode == 0, done.stderr
    assert "demo-pkg==2.0" in freeze(venv).splitlines()
    assert (record / "before" / "0.txt").read_text() == before
    assert journal(record)["state"] == "done"
    assert "Doctor again: gone: demo.0" in done.stdout  # the doctor knows no demo.* check
    undone = gpucheck("--undo", str(record), "--yes", env=offline(wheels))
    assert undone.returncode == 0, undone.stderr
    assert freeze(venv) == before
    assert journal(record)["state"] == "undone"
    # Rewritten many times, each file whole: no temporary file is left beside them.
    assert sorted(p.name for p in record.iterdir()) == ["before", "journal.json", "plan.json"]


def test_a_failing_step_stops_the_plan_and_says_what_was_done(
    tmp_path: Path, venv: Path, wheels: Path
) -> None:
    plan = plan_file(
        tmp_path,
        venv,
        "pip install 'demo-pkg==2.0'",
        "pip install 'no-such-dist==9'",
        "pip uninstall -y demo-pkg",
    )
    record = tmp_path / "record"
    done = gpucheck(
        "--plan", str(plan), "--apply", "--yes", "--record", str(record), env=offline(wheels)
    )
    assert done.returncode == 1
    last = done.stderr.splitlines()[-1]
    assert last.startswith("gpucheck: step 2 failed (exit 1): ")
    assert last.endswith(
        f"stopped, 1 step done (record: {record}; undo: gpucheck fix --undo {record})"
    )
    states = [s["state"] for s in journal(record)["steps"]]  # type: ignore[attr-defined]
    assert states == ["done", "failed", "pending"]
    assert "demo-pkg==2.0" in freeze(venv).splitlines()  # step 3 never ran


@pytest.fixture
def silent_index() -> Iterator[str]:
    """An index on loopback that accepts connections and never answers: pip waits."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/simple"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_ctrl_c_during_a_step_leaves_a_true_record(
    tmp_path: Path, venv: Path, wheels: Path, silent_index: str
) -> None:
    before = freeze(venv)
    plan = plan_file(tmp_path, venv, "pip install 'demo-pkg==2.0'")
    record = tmp_path / "record"
    env = {**os.environ, "PIP_INDEX_URL": silent_index, "PIP_TIMEOUT": "60", "PIP_RETRIES": "0"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpucheck",
            "fix",
            "--plan",
            str(plan),
            "--apply",
            "--yes",
            "--record",
            str(record),
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        path = record / "journal.json"
        if path.exists() and '"running"' in path.read_text():
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the step never started")
    time.sleep(1.0)  # pip is waiting on the silent index now
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.splitlines()[-1] == "gpucheck: interrupted"
    recorded = journal(record)
    assert recorded["state"] == "interrupted"
    assert [s["state"] for s in recorded["steps"]] == ["interrupted"]  # type: ignore[attr-defined]
    assert (record / "before" / "0.txt").read_text() == before
    assert freeze(venv) == before  # pip was stopped before it changed anything
