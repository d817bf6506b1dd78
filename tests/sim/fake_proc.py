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
    # With mirror: the real process copied, where `pid` is its PID in an outer namespace
    # (a host /proc seen from a container; `nspid` then says both). Default: `pid`.
    mirror_pid: int | None = None
    pid_ns: str | None = None  # its ns/pid link, "pid:[4026532201]"; None: none
    mirror_cgroup: str | None = None  # with mirror: say it is in this cgroup instead


def write_process(folder: Path, proc: HostProcess) -> None:
    """/proc/<pid> as the processes probe reads it: status, stat, cmdline, cgroup, fd links."""
    if proc.mirror:
        real = Path("/proc") / str(proc.mirror_pid or proc.pid)
        for name in ("status", "stat", "cmdline", "cgroup"):
            _write(folder / name, (real / name).read_bytes().decode("utf-8", "replace"))
        status = (folder / "status").read_text()
        if proc.mirror_uid is not None:
            uid = "\t".join([str(proc.mirror_uid)] * 4)
            status = re.sub(r"(?m)^Uid:.*$", f"Uid:\t{uid}", status)
        if proc.nspid is not None:
            nspid = "\t".join(map(str, proc.nspid))
            status = re.sub(r"(?m)^NSpid:.*$", f"NSpid:\t{nspid}", status)
        (folder / "status").write_text(status)
        if proc.mirror_cgroup is not None:
            _write(folder / "cgroup", proc.mirror_cgroup + "\n")
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
    if proc.pid_ns is not None:
        (folder / "ns").mkdir(parents=True, exist_ok=True)
        (folder / "ns" / "pid").symlink_to(proc.pid_ns)
    fd = folder / "fd"
    fd.mkdir(parents=True, exist_ok=True)
    for n, device in enumerate(["/dev/null", *proc.devices]):
        (fd / str(n)).symlink_to(device)


def write_self(
    proc: Path, nspid: list[int], cgroup: str | None, pid_ns: str | None, kernel_threads: bool
) -> None:
    """/proc/self as gpucheck reads it (its NSpid, cgroup and PID namespace), and PID 2 as a
    kernel thread (kthreadd, PF_KTHREAD in its flags) where this /proc is the host's."""
    own = proc / "self"
    _write(own / "status", "Name:\tgpucheck\nNSpid:\t" + "\t".join(map(str, nspid)) + "\n")
    real = Path("/proc/self/cgroup").read_text() if cgroup is None else cgroup + "\n"
    _write(own / "cgroup", real)
    if pid_ns is not None:
        (own / "ns").mkdir(parents=True, exist_ok=True)
        (own / "ns" / "pid").symlink_to(pid_ns)
    if kernel_threads and not (proc / "2").exists():
        fields = ["S", "0", "0", "0", "0", "-1", str(0x208040)] + ["0"] * 12 + ["9", "0"]
        _write(proc / "2" / "stat", f"2 (kthreadd) {' '.join(fields)}\n")
