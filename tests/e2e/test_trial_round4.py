"""What a new user's trial of the README and the docs found wrong, each pinned as they met it."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

from conftest import REPO, Simulate, run_gpucheck
from sim.scenario import Process, h100_node
from support import builders
from support.evaluate import run_checks
from support.procs_run import procs

from gpucheck.fixplan.plan import Plan, PlanHost, PlanStep
from gpucheck.fixplan.render import render_sh
from gpucheck.model.fix import Change, StepKind, Tool
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import dumps


def test_a_report_piped_into_fix_from_stdin_keeps_its_own_findings(tmp_path: Path) -> None:
    """`gpucheck doctor --min-gpus 4 --json | gpucheck fix --from -` plans the requirement's
    step, as the same report read from a file does: stdin is not re-diagnosed without it."""
    snap = tmp_path / "node.json"
    snap.write_text(dumps(builders.h100_node(2)))
    report = run_gpucheck("doctor", "--from", str(snap), "--min-gpus", "4", "--json")
    assert report.returncode == 1, report.stderr
    piped = run_gpucheck("fix", "--from", "-", stdin=report.stdout)
    assert piped.returncode == 0, piped.stderr
    assert "requirements.min-gpus" in piped.stdout
    assert "run the job on a node with 4 or more GPUs" in piped.stdout
    saved = tmp_path / "report.json"
    saved.write_text(report.stdout)
    from_file = run_gpucheck("fix", "--from", str(saved))
    assert from_file.stdout.splitlines()[0].replace(str(saved), "-") == piped.stdout.splitlines()[0]


def test_fix_sh_names_the_interpreter_its_bare_pip_is_meant_for(tmp_path: Path) -> None:
    """The text plan says `in /home/u/venv/bin/python` under a pip step; the sh plan said
    nothing, so `sh fix.sh` installed into whichever pip came first on PATH, unwarned. The
    interpreter is a comment, escaped: a newline in its path starts no command."""
    step = PlanStep(
        number=1,
        kind=StepKind.COMMAND,
        text="upgrade it",
        command="pip install -U nvidia-ml-py",
        tool=Tool.PIP,
        layer=Layer.FRAMEWORKS,
        environment="/home/u/venv\ntouch PWNED/bin/python",
        changes=[Change(name="nvidia-ml-py", from_version="11.450.51")],
        gpus=[],
        findings=["frameworks.nvml-bindings"],
        local=True,
        why_not_local=None,
    )
    out = io.StringIO()
    render_sh(Plan(host=PlanHost(hostname="vm"), steps=[step]), out)
    script = out.getvalue()
    assert "#    in /home/u/venv\\x0atouch PWNED/bin/python\n" in script
    # The script runs only the command: nothing from the path (sh -n parses it, -v lists).
    (tmp_path / "fix.sh").write_text(script)
    parsed = subprocess.run(["sh", "-n", str(tmp_path / "fix.sh")], check=False)
    assert parsed.returncode == 0
    commands = [ln for ln in script.splitlines() if ln and not ln.startswith("#")]
    assert commands == ["set -e", "pip install -U nvidia-ml-py"]


def test_procs_to_a_pipe_keeps_each_note_on_one_line(simulate: Simulate) -> None:
    """`gpucheck procs | grep` finds a whole note: to a pipe the notes were wrapped at 160
    columns, the memory note's last words on a line of their own."""
    node = h100_node(1)
    node.gpus[0].processes.append(Process(pid=999_999, name="python3 train.py", used=1 << 30))
    result = procs(simulate(node))
    assert result.returncode == 0, result.stderr
    assert (
        "Memory: a GPU's used counts what the driver reserves; a process's is what its own "
        "context allocated. `gpucheck watch` and nvidia-smi leave the driver's reservation out "
        "(less used).\n"
    ) in result.stdout
    assert (
        "  1.0 GiB held by processes not in /proc here (PIDs 999999: exited since, or in "
        "another PID namespace)\n"
    ) in result.stdout


def test_python_list_file_that_cannot_be_read_is_one_plain_line(tmp_path: Path) -> None:
    """`--python @envs.txt` naming a missing file, a folder or binary: one line in the words
    the other inputs use, not Python's exception text (`[Errno 2] No such file ...: '...'`)."""
    missing = run_gpucheck("doctor", "--python", f"@{tmp_path}/envs.txt")
    assert missing.returncode == 2
    assert missing.stderr == f"gpucheck: --python @{tmp_path}/envs.txt: cannot read: no such file\n"
    folder = run_gpucheck("snapshot", "--python", f"@{tmp_path}")
    assert folder.returncode == 2
    assert folder.stderr == (
        f"gpucheck: --python @{tmp_path}: is a folder, not a list of interpreters\n"
    )
    binary = tmp_path / "envs.bin"
    binary.write_bytes(b"/usr/bin/python3\n\xff\xfe\n")
    undecodable = run_gpucheck("doctor", "--python", f"@{binary}")
    assert undecodable.returncode == 2
    assert undecodable.stderr == f"gpucheck: --python @{binary}: not UTF-8 text\n"


def test_output_over_a_file_of_compat_dir_is_refused(tmp_path: Path) -> None:
    """`--compat-dir DIR -o DIR/gpus.toml` read that file and then replaced it with the
    report: a compat file is an input like the snapshot, and -o never writes over one."""
    snap = tmp_path / "node.json"
    snap.write_text(dumps(builders.h100_node(2)))
    mine = tmp_path / "compat"
    mine.mkdir()
    data = (REPO / "compat" / "gpus.toml").read_bytes()
    (mine / "gpus.toml").write_bytes(data)
    for env, option in (
        ({}, ["--compat-dir", str(mine)]),
        ({"GPUCHECK_COMPAT_DIR": str(mine)}, []),
    ):
        result = run_gpucheck(
            "doctor", "--from", str(snap), *option, "-o", str(mine / "gpus.toml"), env=env
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr == (
            f"gpucheck: --output: {mine}/gpus.toml is one of the inputs ({mine}/gpus.toml): "
            "it would be overwritten\n"
        )
        assert (mine / "gpus.toml").read_bytes() == data


def test_a_pci_bus_listing_no_device_is_not_called_unreadable() -> None:
    """A sandbox whose /sys/bus/pci lists nothing: the skip said the folder "is not readable",
    which sends a person to check permissions that are fine."""
    empty = builders.no_gpu_machine()
    empty.system.pci_scanned, empty.system.pci_device_count = True, 0
    unreadable = builders.no_gpu_machine()
    unreadable.system.pci_scanned, unreadable.system.pci_device_count = False, 0
    titles = [
        next(f.title for f in run_checks(snap) if f.id == "system.gpu-present")
        for snap in (empty, unreadable)
    ]
    assert titles == [
        "Could not look for GPUs: /sys/bus/pci lists no device at all (a restricted sysfs)",
        "Could not look for GPUs: /sys/bus/pci is not readable",
    ]
