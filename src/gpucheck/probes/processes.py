"""Who holds the GPUs, as /proc shows it: every process with a /dev/nvidia* file open (what
`fuser -v /dev/nvidia*` sees, including holders with no CUDA context and processes NVML cannot
attribute inside a PID namespace), and the processes NVML names.

Plain file reading under `root` (GPUCHECK_ROOT in the tests), like probes/system.py: nothing
is loaded, nothing can hang. A process may exit while it is read: whatever it no longer
answers stays unknown.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

from gpucheck.model.snapshot import HostProcess, ProcessFacts
from gpucheck.probes.files import read_bytes as _read

DEVICE_PREFIX = "/dev/nvidia"
# Container ids in cgroup paths: docker-<id>.scope, /docker/<id>, cri-containerd-<id>.scope,
# crio-<id>.scope, libpod-<id>.scope, /kubepods/.../<id>: 64 hex digits in each.
_CONTAINER_ID = re.compile(r"(?:^|[/-])([0-9a-f]{64})(?:\.scope)?(?:/|$)")
# kubepods-burstable-pod<uid with _>.slice (systemd driver) or /kubepods/burstable/pod<uid>/.
_POD_UID = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
)


def probe_processes(
    root: Path = Path("/"), also: Iterable[int] = (), commands: bool = True
) -> ProcessFacts:
    """The GPU device holders, plus the processes `also` names (NVML's PIDs) where /proc has
    them: a listed PID that /proc lacks lives outside this PID namespace, or has exited.

    Without `commands`, command lines are not read: the doctor's snapshots travel (fleets,
    bug reports) and a command line may carry a secret; `gpucheck procs` shows them here."""
    proc = root / "proc"
    facts = ProcessFacts(caller_uid=os.getuid(), caller_pid=os.getpid())
    try:
        pids = sorted(int(n) for n in os.listdir(proc) if n.isdigit())
    except OSError:
        return facts
    facts.scanned = True
    facts.sees_every_pid = lists_every_pid(proc, os.geteuid())
    facts.init_name = _comm(proc / "1")
    wanted = set(also)
    boot = _boot_time(proc)
    users: dict[int, str | None] = {}
    for pid in pids:
        devices, readable = _open_devices(proc / str(pid))
        if not readable:
            facts.fds_unreadable += 1
        if devices or pid in wanted:
            found = read_process(proc, pid, boot, users, commands)
            if found is None:
                continue  # exited meanwhile
            found.devices = devices
            found.fds_readable = readable
            facts.processes.append(found)
    return facts


def lists_every_pid(proc: Path, euid: int) -> bool | None:
    """Whether /proc lists every process to a user of `euid`: root sees all; others where the
    /proc mount hides none (proc(5): hidepid=0, "off", or no option). None: mount not read."""
    if euid == 0:
        return True
    try:
        lines = (proc / "self" / "mountinfo").read_text(errors="replace").splitlines()
    except OSError:
        return None
    # The last proc mount on /proc is the one in effect: a service with ProtectProc=invisible
    # (systemd.exec(5)) gets a second proc mount with hidepid over the host's.
    mounts = [
        line
        for line in lines
        if len(fields := line.split()) >= 5 and fields[4] == "/proc" and " - proc " in f" {line} "
    ]
    if not mounts:
        return None
    options = mounts[-1].rsplit(" ", 1)[-1].split(",")
    hide = next((o.split("=", 1)[1] for o in options if o.startswith("hidepid=")), "0")
    return hide in ("0", "off")


def _comm(folder: Path) -> str | None:
    """A process's command name (/proc/PID/comm); None where it cannot be read."""
    raw = _read(folder / "comm")
    if raw is None:
        return None
    return raw.decode("utf-8", "replace").strip() or None


def _open_devices(folder: Path) -> tuple[list[str], bool]:
    """The /dev/nvidia* files a process has open (fds, as fuser reads them), and whether its
    fd table could be read at all."""
    fd_dir = folder / "fd"
    try:
        fds = os.listdir(fd_dir)
    except FileNotFoundError:
        return [], True  # exited, or a kernel thread with no fd table
    except OSError:
        return [], False
    devices: set[str] = set()
    for fd in fds:
        with contextlib.suppress(OSError):
            target = os.readlink(fd_dir / fd)
            if target.startswith(DEVICE_PREFIX):
                devices.add(target)
    return sorted(devices, key=_device_order), True


def _device_order(path: str) -> tuple[int, str]:
    tail = path[len(DEVICE_PREFIX) :]
    return (int(tail), "") if tail.isdigit() else (1 << 30, tail)


def read_process(
    proc: Path,
    pid: int,
    boot: float | None = None,
    users: dict[int, str | None] | None = None,
    commands: bool = True,
) -> HostProcess | None:
    """One process's identity from /proc/PID; None when it does not exist (or exited)."""
    folder = proc / str(pid)
    status = _read(folder / "status")
    if status is None:
        return None
    fields = status_fields(status.decode("utf-8", "replace"))
    found = HostProcess(pid=pid, name=fields.get("Name"))
    found.state = (fields.get("State") or "")[:1] or None
    found.ppid = _int(fields.get("PPid"))
    uids = (fields.get("Uid") or "").split()
    found.uid = _int(uids[0]) if uids else None
    if found.uid is not None:
        cache = users if users is not None else {}
        if found.uid not in cache:
            cache[found.uid] = _user_name(found.uid)
        found.user = cache[found.uid]
    found.nspid = nspid(fields)
    raw = _read(folder / "cmdline", 1 << 20) if commands else None
    if raw is not None:
        found.cmdline = [a.decode("utf-8", "replace") for a in raw.split(b"\0")[:-1]] or (
            [raw.decode("utf-8", "replace")] if raw else []
        )
    found.start_time = _start_time(folder, boot if boot is not None else _boot_time(proc))
    cgroup = _read(folder / "cgroup")
    if cgroup is not None:
        found.cgroup, found.container_id, found.pod_uid = parse_cgroup(
            cgroup.decode("utf-8", "replace")
        )
    return found


def status_fields(text: str) -> dict[str, str]:
    """/proc/PID/status as key: value."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def nspid(fields: dict[str, str]) -> list[int]:
    """The process's PID in each PID namespace it is in, from /proc/PID/status's NSpid (see
    status_fields): this /proc's namespace first, its own last. Empty where the kernel (before
    4.1) has no NSpid line."""
    return [n for n in map(_int, (fields.get("NSpid") or "").split()) if n is not None]


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _user_name(uid: int) -> str | None:
    try:
        import pwd  # POSIX only, like /proc itself

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return None


# Where proc(5)'s /proc/PID/stat fields lie in read_stat()'s list: field N at N - 3.
STAT_STATE = 0  # field 3: R, S, D, Z (zombie), X (dead), ...
STAT_FLAGS = 6  # field 9: the kernel's PF_* flags
STAT_START_TIME = 19  # field 22: clock ticks since boot


def read_stat(folder: Path) -> list[bytes] | None:
    """FOLDER/stat's fields (a /proc/PID folder) from the third (the state) on; None where it
    cannot be read (the process exited). The command name (field 2) may hold spaces and
    parentheses: the fields follow the last ')'."""
    stat = _read(folder / "stat")
    return None if stat is None else stat[stat.rfind(b")") + 2 :].split()


def stat_number(fields: list[bytes], index: int) -> int | None:
    """read_stat()'s fields[index] as a number; None where it is missing or not one."""
    if len(fields) <= index or not fields[index].isdigit():
        return None
    return int(fields[index])


def _boot_time(proc: Path) -> float | None:
    stat = _read(proc / "stat", 1 << 20)
    if stat is None:
        return None
    match = re.search(rb"^btime\s+(\d+)", stat, re.MULTILINE)
    return float(match.group(1)) if match else None


def _start_time(folder: Path, boot: float | None) -> str | None:
    stat = read_stat(folder)
    if stat is None or boot is None:
        return None
    since_boot = stat_number(stat, STAT_START_TIME)
    if since_boot is None:
        return None
    try:
        ticks = os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):
        ticks = 100
    started = boot + since_boot / ticks
    return datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds")


def parse_cgroup(text: str) -> tuple[str | None, str | None, str | None]:
    """(cgroup path, container id, pod uid) from /proc/PID/cgroup: the unified hierarchy's
    line ("0::/...") where there is one, else the first line that names a container."""
    paths = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            paths.append((parts[0] == "0" and parts[1] == "", parts[2].strip()))
    if not paths:
        return None, None, None
    chosen = next((p for unified, p in paths if unified), paths[0][1])
    for path in [chosen] + [p for _, p in paths]:
        match = _CONTAINER_ID.search(path)
        if match:
            pod = _POD_UID.search(path)
            return chosen, match.group(1), pod.group(1).replace("_", "-") if pod else None
    pod = _POD_UID.search(chosen)
    return chosen, None, pod.group(1).replace("_", "-") if pod else None
