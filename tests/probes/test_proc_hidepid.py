"""Whether the processes probe's /proc lists every process: proc(5)'s hidepid mount option
(1, 2, "noaccess", "invisible") hides other users' PIDs from an unprivileged user; root sees
them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucheck.probes.processes import lists_every_pid

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
