"""A plan as a script runs in the shell its commands were built for: a Windows machine's plan
(PowerShell quoting, `& 'C:\\...' -m pip`) as a PowerShell script, never inside #!/bin/sh, and a
Linux plan never as PowerShell."""

from __future__ import annotations

from pathlib import Path

from conftest import run_gpucheck
from support import framework_builders as fb

from gpucheck.model.decoding import to_json


def _windows_cpu_torch(tmp_path: Path) -> Path:
    """An RTX 2080 SUPER on Windows whose torch is PyTorch's CPU wheel, in the active virtual
    environment (so its steps' pip is the one on PATH)."""
    env = fb.environment(prefix="C:\\Users\\me\\my venv", platform="win32")
    snap = fb.on(fb.windows_workstation(), fb.torch_cpu(env))
    path = tmp_path / "windows.json"
    path.write_bytes(to_json(snap))
    return path


def test_a_windows_plan_is_refused_as_sh_with_one_line(tmp_path: Path) -> None:
    result = run_gpucheck("fix", "--from", str(_windows_cpu_torch(tmp_path)), "--format", "sh")
    assert result.returncode == 2, result.stdout
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "gpucheck: --format sh: this plan is of a Windows machine, whose commands are "
        "PowerShell's: use ps1"
    ]


def test_a_windows_plan_is_a_powershell_script_that_stops_at_a_failing_command(
    tmp_path: Path,
) -> None:
    result = run_gpucheck("fix", "--from", str(_windows_cpu_torch(tmp_path)), "--format", "ps1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "#!/bin/sh" not in lines and "set -e" not in lines
    assert "#Requires -Version 7.0" in lines  # `&&` between two commands needs PowerShell 7
    assert "$ErrorActionPreference = 'Stop'" in lines
    commands = [line for line in lines if line and not line.startswith(("#", "$", "if "))]
    assert commands == [
        "pip install torch==2.9.1+cu130 --index-url https://download.pytorch.org/whl/cu130"
    ]
    for command in commands:
        following = lines[lines.index(command) + 1]
        assert following == "if ($LASTEXITCODE) { exit $LASTEXITCODE }"


def test_a_linux_plan_is_refused_as_powershell(tmp_path: Path) -> None:
    path = tmp_path / "linux.json"
    path.write_bytes(to_json(fb.on(fb.pascal_workstation(), fb.torch_cpu())))
    result = run_gpucheck("fix", "--from", str(path), "--format", "ps1")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "gpucheck: --format ps1: this plan's commands are POSIX shell commands: use sh"
    )
    sh = run_gpucheck("fix", "--from", str(path), "--format", "sh")
    assert sh.returncode == 0 and sh.stdout.startswith("#!/bin/sh\n")
