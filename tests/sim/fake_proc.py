"""The fake /proc of a simulated machine: one folder per process as gpucheck's processes probe
reads it (status, stat, cmdline, cgroup, fd links to /dev/nvidia*), made up or mirrored from a
real process the test started."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@dataclass
class HostProcess:
    """A process in the fake /proc. `devices` become fd links to /dev/nvidia*. With `mirror`,
    status, stat, cmdline and cgroup are copied from the real /proc/<pid> (a real child the
    test started, so that signals sent to it are real) and the fields here are not used."""

    pid: int
    devices: list[str] = field(default_factory=list)  # "/dev/nvidia0", "/dev/nvidiactl", ...
    name: str = "python3"
    cmdline: list[str] = field(default_factory=lambda: ["python3", "train.py"])
    uid: int = 1000
    state: str = "S (sleeping)"
    ppid: int = 1
    nspid: list[int] | None = None  # default: [pid]
    cgroup: str = "0::/user.slice/user-1000.slice/session-1.scope"
    start_ticks: int = 1_000_000  # since boot, in clock ticks
    mirror: bool = False
    mirror_uid: int | None = None  # with mirror: say it belongs to this uid instead


def write_process(folder: Path, proc: HostProcess) -> None:
    """/proc/<pid> as the processes probe reads it: status, stat, cmdline, cgroup, fd links."""
    if proc.mirror:
        real = Path("/proc") / str(proc.pid)
        for name in ("status", "stat", "cmdline", "cgroup"):
            _write(folder / name, (real / name).read_bytes().decode("utf-8", "replace"))
        if proc.mirror_uid is not None:
            status = (folder / "status").read_text()
            uid = "\t".join([str(proc.mirror_uid)] * 4)
            (folder / "status").write_text(re.sub(r"(?m)^Uid:.*$", f"Uid:\t{uid}", status))
    else:
        nspid = " ".join(map(str, proc.nspid or [proc.pid]))
        _write(
            folder / "status",
            f"Name:\t{proc.name}\nState:\t{proc.state}\nPid:\t{proc.pid}\nPPid:\t{proc.ppid}\n"
            f"Uid:\t{proc.uid}\t{proc.uid}\t{proc.uid}\t{proc.uid}\nNSpid:\t{nspid}\n",
        )
        fields = ["S", str(proc.ppid)] + ["0"] * 17 + [str(proc.start_ticks), "0"]
        _write(folder / "stat", f"{proc.pid} ({proc.name}) {' '.join(fields)}\n")
        _write(folder / "cmdline", "".join(a + "\0" for a in proc.cmdline))
        _write(folder / "cgroup", proc.cgroup + "\n")
    fd = folder / "fd"
    fd.mkdir(parents=True, exist_ok=True)
    for n, device in enumerate(["/dev/null", *proc.devices]):
        (fd / str(n)).symlink_to(device)
