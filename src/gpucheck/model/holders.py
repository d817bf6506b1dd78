"""Who holds each GPU: NVML's processes and /proc's device holders merged per PID, and the
memory that no process here accounts for. Pure functions of a snapshot, so `gpucheck procs`,
the doctor's gpu.memory-in-use and the tests agree on one reading.

Two blind spots shape this. The driver knows nothing of PID namespaces: inside a container
NVML lists host PIDs, which the container's /proc does not have (NVIDIA/nvidia-docker#179,
#1483), so their memory is reported as held outside this namespace rather than dropped. And
NVML lists only processes with a context: a process that merely has /dev/nvidia* open (a
monitoring agent, a job between contexts) shows only in /proc, as `fuser` sees it.
"""

from __future__ import annotations

from msgspec import Struct, field

from gpucheck.model.snapshot import GpuFacts, HostProcess, Snapshot

GIB = 1024**3
# What an idle GPU counts as used with no process at all is the driver's own reservation:
# 479 MiB on an idle H100 80GB (shared/nvsmi). Beyond this, used memory with no process is
# worth saying.
UNACCOUNTED_FLOOR = GIB


class GpuUse(Struct):
    """One GPU (or MIG instance) one process uses."""

    gpu: int  # NVML index
    uuid: str | None = None
    used_memory: int | None = None  # bytes; None: NVML does not say (MIG, WDDM) or no context
    kind: str | None = None  # compute | graphics; None: the device file is open, no context
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


class Holder(Struct):
    pid: int  # in this /proc's namespace where it is visible; NVML's (a host PID) otherwise
    visible: bool  # False only where /proc was read and lacks it (another PID namespace)
    name: str | None = None
    process: HostProcess | None = None  # /proc's facts, where visible
    uses: list[GpuUse] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)  # /dev/nvidia* files it has open
    mine: bool | None = None  # the caller's own (same real uid); None: unknown
    # NVML's PID for it where that differs (a host PID, matched to this process because it
    # was the only unattributed one on its GPU each side); None: the same, or not matched.
    nvml_pid: int | None = None

    @property
    def memory(self) -> int:
        return sum(u.used_memory or 0 for u in self.uses)

    @property
    def gpus(self) -> list[int]:
        return sorted({u.gpu for u in self.uses})

    @property
    def state(self) -> str:
        """running, zombie, stopped, uninterruptible (stuck in the kernel), or unknown."""
        code = self.process.state if self.process else None
        return {
            "Z": "zombie",
            "X": "zombie",
            "T": "stopped",
            "t": "stopped",
            "D": "uninterruptible",
        }.get(code or "", "running" if code else "unknown")


class GpuAccount(Struct):
    """One GPU's memory, as far as the processes here account for it."""

    index: int
    uuid: str | None
    name: str | None
    memory_total: int | None
    memory_used: int | None
    held_visible: int = 0  # by processes this /proc shows
    held_outside: int = 0  # by PIDs NVML lists that this /proc lacks (another namespace)
    outside_pids: list[int] = field(default_factory=list)
    zombie_pids: list[int] = field(default_factory=list)  # contexts of dead processes
    processes_known: bool = True  # False: NVML could not list its processes

    @property
    def unaccounted(self) -> int | None:
        """Used memory no listed process holds (the driver's reservation included)."""
        if self.memory_used is None or not self.processes_known:
            return None
        return max(0, self.memory_used - self.held_visible - self.held_outside)

    @property
    def leaked(self) -> bool:
        """Used memory beyond the driver's reservation that no process holds."""
        return (self.unaccounted or 0) >= UNACCOUNTED_FLOOR


class Holders(Struct):
    holders: list[Holder] = field(default_factory=list)
    gpus: list[GpuAccount] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what limits this view, in words


def device_gpu(path: str, gpus: list[GpuFacts]) -> int | None:
    """The NVML index behind /dev/nvidiaN (N is the minor number, not always the index)."""
    tail = path.removeprefix("/dev/nvidia")
    if not tail.isdigit():
        return None  # nvidiactl, nvidia-uvm, nvidia-caps: the driver, not one GPU
    minor = int(tail)
    for g in gpus:
        if g.minor_number == minor:
            return g.index
    if any(g.minor_number is not None for g in gpus):
        return None
    return minor if any(g.index == minor for g in gpus) else None


def merge(snapshot: Snapshot) -> Holders:
    gpus = [g for g in snapshot.nvml.gpus if g.handle_error is None]
    facts = snapshot.processes
    seen = {p.pid: p for p in facts.processes}
    out = Holders()
    by_pid: dict[int, Holder] = {}

    def holder(pid: int) -> Holder:
        found = by_pid.get(pid)
        if found is None:
            proc = seen.get(pid)
            # Without a /proc scan (an older snapshot) nothing is known to be outside.
            found = Holder(pid=pid, visible=proc is not None or not facts.scanned, process=proc)
            if proc is not None:
                found.name = proc.name
                found.devices = list(proc.devices)
                if proc.uid is not None and facts.caller_uid is not None:
                    found.mine = proc.uid == facts.caller_uid
            by_pid[pid] = found
        return found

    for g in gpus:
        account = GpuAccount(g.index, g.uuid, g.name, g.memory_total, g.memory_used)
        account.processes_known = g.processes is not None
        for p in g.processes or []:
            h = holder(p.pid)
            h.name = h.name or p.name
            h.uses.append(
                GpuUse(
                    g.index,
                    g.uuid,
                    p.used_memory,
                    p.kind,
                    p.gpu_instance_id,
                    p.compute_instance_id,
                )
            )
            if h.visible:
                account.held_visible += p.used_memory or 0
            else:
                account.held_outside += p.used_memory or 0
                account.outside_pids.append(p.pid)
            if h.state == "zombie":
                account.zombie_pids.append(p.pid)
        out.gpus.append(account)
    # The fuser view: holders with a device file open and no context NVML knows of.
    for proc in facts.processes:
        if not proc.devices:
            continue
        h = holder(proc.pid)
        for path in proc.devices:
            index = device_gpu(path, gpus)
            if index is not None and index not in h.gpus:
                uuid = next((g.uuid for g in gpus if g.index == index), None)
                h.uses.append(GpuUse(index, uuid))
    if snapshot.system.container is not None:  # on a host, a missing PID has exited
        _match_across_namespaces(out.gpus, by_pid)
    out.holders = sorted(by_pid.values(), key=lambda h: (-h.memory, h.pid))
    out.notes = _notes(snapshot, out)
    return out


def _match_across_namespaces(accounts: list[GpuAccount], by_pid: dict[int, Holder]) -> None:
    """Inside a container NVML gives host PIDs, and NSpid cannot map them back from here.
    Where a GPU has exactly one such PID and exactly one local process with its device file
    open and no context NVML knows of, they are the same process: merge them, and say how."""
    for account in accounts:
        if len(account.outside_pids) != 1:
            continue
        local = [
            h
            for h in by_pid.values()
            if h.visible
            and h.nvml_pid is None
            and any(u.gpu == account.index and u.kind is None for u in h.uses)
            and not any(u.kind is not None for u in h.uses)
        ]
        if len(local) != 1:
            continue
        host_pid = account.outside_pids[0]
        outside = by_pid.pop(host_pid, None)
        if outside is None:
            continue
        here = local[0]
        here.nvml_pid = host_pid
        here.uses = [u for u in here.uses if u.gpu != account.index] + [
            u for u in outside.uses if u.gpu == account.index
        ]
        here.name = here.name or outside.name
        moved = sum(u.used_memory or 0 for u in outside.uses if u.gpu == account.index)
        account.held_outside -= moved
        account.held_visible += moved
        account.outside_pids = []


def _notes(snapshot: Snapshot, holders: Holders) -> list[str]:
    notes = []
    nvml = snapshot.nvml
    if nvml.init_error is not None:
        notes.append(
            f"NVML is not available ({nvml.init_error.name}): processes with a CUDA context and "
            "their memory are unknown; only device-file holders from /proc are listed"
        )
    elif nvml.init_skipped_reason:
        notes.append(f"NVML not asked: {nvml.init_skipped_reason}")
    facts = snapshot.processes
    if not facts.scanned:
        notes.append("/proc could not be read: only NVML's view is listed")
    elif facts.fds_unreadable:
        notes.append(
            f"the open files of {facts.fds_unreadable} process(es) of other users are not "
            "readable without root: holders with no CUDA context among them are not listed"
        )
    for h in holders.holders:
        if h.nvml_pid is not None:
            notes.append(
                f"PID {h.pid} here is NVML's PID {h.nvml_pid} (a host PID): the only process "
                f"with GPU {', '.join(map(str, h.gpus))} open that NVML does not name, and the "
                "only PID NVML names that is not here"
            )
    if any(a.outside_pids for a in holders.gpus):
        where = "this container" if snapshot.system.container else "this PID namespace"
        notes.append(
            f"NVML lists PIDs that are not in {where}: the driver reports host PIDs "
            "(it does not know PID namespaces); their memory is shown as held outside"
        )
    return notes


def select_gpu(wanted: str, gpus: list[GpuFacts]) -> int | None:
    """The NVML index `--gpu` names (an index, or a UUID or its prefix); None: no such GPU."""
    if wanted.isdigit():
        index = int(wanted)
        return index if any(g.index == index for g in gpus) else None
    hits = [g.index for g in gpus if g.uuid and g.uuid.lower().startswith(wanted.lower())]
    return hits[0] if len(hits) == 1 else None


def only_gpu(holders: Holders, index: int) -> Holders:
    return Holders(
        [h for h in holders.holders if index in h.gpus],
        [a for a in holders.gpus if a.index == index],
        holders.notes,
    )


def leak_causes(account: GpuAccount, in_container: bool) -> str:
    """Why memory is used with no process, and what to do: the known causes, in words."""
    where = (
        "another container or the host (NVML inside a container lists only what it can attribute)"
        if in_container
        else "another container or VM sharing the GPU"
    )
    return (
        f"processes in {where}; a process that exited while its GPU context was still being "
        "torn down, or one stuck in the driver (state D); an MPS server or a leaked context "
        "after a crash. As root, every holder the kernel knows shows (`sudo gpucheck procs`, "
        "or `sudo fuser -v /dev/nvidia*`); with nothing left holding it, reset the GPU: "
        f"`sudo nvidia-smi --gpu-reset -i {account.index}`"
    )
