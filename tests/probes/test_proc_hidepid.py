"""Whether the processes probe's /proc lists every process (proc(5)'s hidepid mount option:
1, 2, "noaccess", "invisible" hide other users' PIDs from an unprivileged user; root sees them
all), and PID 1's name, which says whose PID namespace it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucheck.probes.processes import lists_every_pid, probe_processes

PROC_LINE = "22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc {opts}\n"
ROOT_LINE = "27 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
USER = 1000


def _proc(tmp_path: Path, mountinfo: str | None) -> Path:
    (tmp_path / "proc" / "self").mkdir(parents=True)
    if mountinfo is not None:
        (tmp_path / "proc" / "self" / "mountinfo").write_text(mountinfo)
    return tmp_path / "proc"


@pytest.mark.parametrize(
    ("opts", "sees"),
    [
        ("rw", True),
        ("rw,hidepid=0", True),
        ("rw,hidepid=off", True),
        ("rw,hidepid=2", False),
        ("rw,hidepid=invisible", False),
        ("rw,hidepid=noaccess,gid=1001", False),
    ],
)
def test_the_proc_mount_options_say_whether_other_users_pids_are_listed(
    tmp_path: Path, opts: str, sees: bool
) -> None:
    proc = _proc(tmp_path, ROOT_LINE + PROC_LINE.format(opts=opts))
    assert lists_every_pid(proc, USER) is sees
    assert lists_every_pid(proc, 0) is True


def test_an_unreadable_mount_table_leaves_it_unknown(tmp_path: Path) -> None:
    assert lists_every_pid(_proc(tmp_path, None), USER) is None


def test_the_last_proc_mount_is_the_one_in_effect(tmp_path: Path) -> None:
    # systemd.exec(5) ProtectProc=invisible mounts a second proc with hidepid=invisible over
    # the host's /proc for the service: mountinfo lists both, the later one is what it reads.
    over = PROC_LINE.replace("22 27", "310 27").format(opts="rw,hidepid=invisible")
    proc = _proc(tmp_path, ROOT_LINE + PROC_LINE.format(opts="rw") + over)
    assert lists_every_pid(proc, USER) is False
    undone = PROC_LINE.replace("22 27", "311 27").format(opts="rw")
    proc2 = _proc(tmp_path / "b", ROOT_LINE + PROC_LINE.format(opts="rw,hidepid=2") + undone)
    assert lists_every_pid(proc2, USER) is True


def test_the_probe_records_pid_1s_name(tmp_path: Path) -> None:
    proc = _proc(tmp_path, ROOT_LINE + PROC_LINE.format(opts="rw"))
    (proc / "1").mkdir()
    (proc / "1" / "comm").write_text("systemd\n")
    assert probe_processes(tmp_path, commands=False).init_name == "systemd"
    (proc / "1" / "comm").unlink()
    assert probe_processes(tmp_path, commands=False).init_name is None
