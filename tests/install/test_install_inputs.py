"""What `gpucheck install` reads and is given, refused in one line where it cannot be used:
the project's pyproject.toml and the environment's pyvenv.cfg (regular files, at most 1 MiB,
never a device or a FIFO), a compute capability no GPU has, and the Python API's machine
options, which describe a machine exactly as the command line's do."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from support import framework_builders as fb

import gpucheck
from gpucheck import cli
from gpucheck.compat import load
from gpucheck.install.flow import detect_installer
from gpucheck.install.machine import Described, InstallError, Machine, described


def _detect_within(project: Path, machine: Machine, seconds: float = 10.0) -> BaseException:
    """detect_installer's error, in a thread so that a read which would hang fails the test."""
    caught: list[BaseException] = []

    def detect() -> None:
        try:
            detect_installer(machine, project)
        except BaseException as exc:  # handed to the test
            caught.append(exc)

    worker = threading.Thread(target=detect, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "detect_installer hung"
    assert caught, "detect_installer accepted it"
    return caught[0]


def test_a_pyproject_linked_to_dev_zero_is_refused_not_read_until_memory_runs_out(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").symlink_to("/dev/zero")
    error = _detect_within(tmp_path, Machine())
    assert isinstance(error, InstallError)
    assert str(error) == (
        f"cannot tell the installer: {tmp_path / 'pyproject.toml'} is not a regular file; "
        "name one with --installer"
    )


def test_a_pyvenv_cfg_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    (tmp_path / "env").mkdir()
    os.mkfifo(tmp_path / "env" / "pyvenv.cfg")
    error = _detect_within(tmp_path, Machine(prefix=str(tmp_path / "env")))
    assert isinstance(error, InstallError)
    assert "pyvenv.cfg is not a regular file" in str(error)


def test_a_pyproject_over_1_mib_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("#" * (1024 * 1024 + 1))
    error = _detect_within(tmp_path, Machine())
    assert isinstance(error, InstallError)
    assert str(error).endswith("pyproject.toml is over 1 MiB; name one with --installer")


def test_a_pyproject_of_1_mib_with_a_uv_table_is_read(tmp_path: Path) -> None:
    text = "[tool.uv]\n"
    (tmp_path / "pyproject.toml").write_text(text + "#" * (1024 * 1024 - len(text)))
    assert detect_installer(Machine(), tmp_path)[0] == "uv-add"


@pytest.mark.parametrize("gpu", ["10", "1.0", "2.1", "8.3", "sm_99"])
def test_a_compute_capability_no_gpu_has_is_refused_in_one_line(
    gpu: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.run(["install", "torch", "--gpu", gpu, "--driver", "580.95.05"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        f"gpucheck: --gpu: {gpu!r} is not a known compute capability (3.0 or newer, like 8.6 "
        "or sm_86) or a GPU name\n"
    )


def test_a_known_compute_capability_is_taken() -> None:
    machine = described(load(), Described(gpus=("sm_86", "12.0")))
    assert [g.cc for g in machine.gpus] == ["8.6", "12.0"]


def test_a_bad_python_version_names_the_option_that_exists() -> None:
    with pytest.raises(InstallError, match=r"^--python: '2\.7' is not a Python 3 version"):
        described(load(), Described(python="2.7"))


def test_the_api_os_alone_describes_a_machine_as_the_command_line_does() -> None:
    answer = gpucheck.install_plan(["torch"], os="windows")
    assert (answer.machine, answer.os, answer.gpus) == ("described: no GPU, windows", "windows", [])
    assert answer.environment is None


def test_the_api_refuses_a_described_machine_and_a_snapshot_together() -> None:
    snap = fb.on(fb.pascal_workstation(), fb.torch_cu124())
    with pytest.raises(ValueError, match="describe another machine: drop snapshot"):
        gpucheck.install_plan(["torch"], snap, gpus=["H100"])
    with pytest.raises(ValueError, match="describe another machine: drop snapshot"):
        gpucheck.install_plan(["torch"], snap, os="linux")
