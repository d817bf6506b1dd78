"""The processes that hold the GPUs, as /proc shows them (probes/processes.py gathers them):
the facts the doctor's gpus.memory-in-use and `gpucheck procs` read (model/holders.py)."""

from __future__ import annotations

from msgspec import Struct, field

from gpucheck.model.types import Count


class HostProcess(Struct):
    """A process as /proc shows it: one that has a /dev/nvidia* file open, or one NVML lists."""

    pid: Count  # in the PID namespace of the /proc that was read
    devices: list[str] = field(default_factory=list)  # /dev/nvidia* files it has open
    name: str | None = None  # comm
    # None: not read (the doctor's snapshots never hold them) or unreadable; [] for a kernel
    # thread or a zombie
    cmdline: list[str] | None = None
    uid: Count | None = None  # real uid
    user: str | None = None
    state: str | None = None  # R, S, D, Z (zombie), T (stopped), ... from /proc/PID/status
    ppid: Count | None = None
    start_time: str | None = None  # ISO 8601, from the boot time and the start tick
    nspid: list[Count] = field(default_factory=list)  # this PID in each nested PID namespace
    cgroup: str | None = None  # the unified (or first) cgroup path
    container_id: str | None = None  # from the cgroup path (docker, containerd, CRI-O, podman)
    pod_uid: str | None = None  # Kubernetes pod, from the cgroup path
    fds_readable: bool = True  # False: its fd table is closed to this user (another user's)


class ProcessFacts(Struct):
    scanned: bool = False  # False: /proc could not be listed (no facts, not "no holder")
    caller_uid: Count | None = None
    caller_pid: Count | None = None
    processes: list[HostProcess] = field(default_factory=list)
    fds_unreadable: Count = 0  # processes whose open files this user may not see
    # Whether /proc lists every process to this user: root, or /proc without hidepid (where
    # other users' PIDs are hidden, a PID NVML lists may simply be someone else's); None: unknown.
    sees_every_pid: bool | None = None
    # PID 1's command name (/proc/1/comm): a host's init (systemd, init) says this /proc is the
    # host's PID namespace; a private one (unshare -p, bubblewrap) has its own program there.
    init_name: str | None = None
