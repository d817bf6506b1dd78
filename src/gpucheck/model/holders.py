"""Who holds each GPU: NVML's processes and /proc's device holders merged per PID, and the
memory that no process here accounts for. Pure functions of a snapshot, so `gpucheck procs`,
the doctor's gpus.memory-in-use and the tests agree on one reading.

Two blind spots shape this. The driver knows nothing of PID namespaces: inside a container
NVML lists host PIDs, which the container's /proc does not have (NVIDIA/nvidia-docker#179,
#1483), so their memory is reported as held outside this namespace rather than dropped, and
such a PID is never matched to a local process by its number or by guess: only where this
/proc is the host's, and through NSpid where that is an outer namespace's (View). And
NVML lists only processes with a context: a process that merely has /dev/nvidia* open (a
monitoring agent, a job between contexts) shows only in /proc, as `fuser` sees it.
"""

from __future__ import annotations

from msgspec import Struct, field

from gpucheck.model.plural import counted
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
    # The PID a signal sent from here reaches: `pid`, or its NSpid entry in gpucheck's own
    # namespace where this /proc is an outer one's. None: it cannot be acted on from here
    # (a host PID in a container, never matched to a local process by guess).
    local_pid: int | None = None
    elsewhere: bool = False  # in another container than gpucheck's (from their cgroups)

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
    processes_error: str | None = None  # why not, in words

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
    # Why GPUs' holders could not be asked at all (NVML timed out, crashed, failed to start);
    # per-GPU failures are in each GpuAccount. Empty: every GPU was asked and answered.
    unknown: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether "no process holds it" can be said: every GPU's processes were listed."""
        return not self.unknown and all(a.processes_known for a in self.gpus)

    def unasked(self) -> list[str]:
        """Why some GPUs' processes are unknown, one line each."""
        return self.unknown + [
            f"GPU {a.index}: {a.processes_error}" for a in self.gpus if not a.processes_known
        ]


# The /dev/nvidia* scan, named where NVML could not answer: it shows holders NVML cannot.
DEVICE_SCAN = (
    "Shown: only the /dev/nvidia* scan's processes with a GPU device file open (as root it "
    "sees every user's: `sudo gpucheck procs`, or `sudo fuser -v /dev/nvidia*`)"
)


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


class View(Struct):
    """Where gpucheck stands (procs/view.py reads it), for telling which holders it may act
    on. Without one (the doctor, a saved snapshot) this /proc is taken to be the host's."""

    uid: int | None = None  # whose processes are "mine": the invoking user's (SUDO_UID)
    container_id: str | None = None  # gpucheck's own container, from its cgroup
    # This /proc's PIDs are the host's, the ones NVML reports (False: a container's own /proc,
    # where an NVML PID that matches a local PID is a coincidence).
    proc_is_host: bool = True
    # PID namespaces between this /proc's and gpucheck's own (its NSpid, less one): 0, the
    # same; more where the host's /proc is mounted in a container (nvidia-docker#1483).
    depth: int = 0
    # With depth > 0, the /proc PIDs known to be in gpucheck's own PID namespace.
    same_namespace: list[int] = field(default_factory=list)


def merge(snapshot: Snapshot, view: View | None = None) -> Holders:
    gpus = [g for g in snapshot.nvml.gpus if g.handle_error is None]
    facts = snapshot.processes
    seen = {p.pid: p for p in facts.processes}
    out = Holders()
    # Keyed by (whether /proc shows it, PID): a host PID NVML names is never a local PID that
    # happens to share its number.
    by_pid: dict[tuple[bool, int], Holder] = {}
    matched = view is None or view.proc_is_host

    def holder(pid: int, from_nvml: bool) -> Holder:
        proc = seen.get(pid) if matched or not from_nvml else None
        # Without a /proc scan (an older snapshot) nothing is known to be outside.
        key = (proc is not None or (not facts.scanned and matched), pid)
        found = by_pid.get(key)
        if found is None:
            found = Holder(pid=pid, visible=key[0], process=proc)
            if proc is not None:
                found.name = proc.name
                found.devices = list(proc.devices)
                _place(found, proc, view, facts.caller_uid)
            elif found.visible:
                found.local_pid = pid  # an older snapshot: no /proc to say otherwise
            by_pid[key] = found
        return found

    for lost in snapshot.nvml.gpus:
        if lost.handle_error is not None:  # NVML could not open it: its holders are unknown
            out.gpus.append(
                GpuAccount(
                    lost.index,
                    lost.uuid,
                    lost.name,
                    None,
                    None,
                    processes_known=False,
                    processes_error=_unopened(lost.handle_error.name, lost.handle_error.code),
                )
            )
    for g in gpus:
        account = GpuAccount(g.index, g.uuid, g.name, g.memory_total, g.memory_used)
        account.processes_known = g.processes is not None
        if g.processes is None:
            account.processes_error = _process_query_error(g.field_errors.get("processes"))
        for p in g.processes or []:
            h = holder(p.pid, True)
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
        h = holder(proc.pid, False)
        for path in proc.devices:
            index = device_gpu(path, gpus)
            if index is not None and index not in h.gpus:
                uuid = next((g.uuid for g in gpus if g.index == index), None)
                h.uses.append(GpuUse(index, uuid))
    out.gpus.sort(key=lambda a: a.index)
    out.holders = sorted(by_pid.values(), key=lambda h: (-h.memory, h.pid))
    out.notes = _notes(snapshot, out)
    out.unknown = _unasked(snapshot)
    return out


def _process_query_error(name: str | None) -> str:
    """Why NVML gave no process list for a GPU, from the field error the child recorded."""
    if name == "Crashed":
        return "NVML's process query crashed its caller (the other facts were read without it)"
    if name is None:
        return "NVML did not say why it listed no processes"
    code = NVML_ERROR_CODES.get(name)
    return f"NVML's process query failed ({name}" + (f", error {code})" if code else ")")


def _unopened(name: str, code: int) -> str:
    """Why a GPU NVML could not open at all has no process list, in words."""
    why = " (fallen off the bus or needing a reset)" if name in GONE else ""
    return f"NVML could not open the GPU{why}: {name}, error {code}"


# What nvmlDeviceGetHandleByIndex answers for a GPU that stopped answering (nvml.h).
GONE = ("GpuIsLost", "ResetRequired", "GpuNotFound")

# nvmlReturn_t values (nvml.h) of the failures a process query is known to give.
NVML_ERROR_CODES = {
    "NotSupported": 3,
    "NoPermission": 4,
    "InsufficientSize": 7,
    "GpuIsLost": 15,
    "Unknown": 999,
}


def _unasked(snapshot: Snapshot) -> list[str]:
    """Why some GPUs' holders were never asked: NVML failed before it listed every GPU."""
    nvml = snapshot.nvml
    run = next((p for p in snapshot.probes if p.name == "nvml"), None)
    if nvml.init_skipped_reason:
        pci = snapshot.system.pci_gpus
        if not pci:
            return []  # no GPU and no driver module: nothing to hold
        # The same machine as one where nvmlInit was tried and failed (DriverNotLoaded): its
        # GPUs' processes were not listed, which is never "no GPU". Another driver (vfio-pci:
        # a VM's) may hold them.
        others = sorted({d.driver for d in pci if d.driver and d.driver != "nvidia"})
        bound = f", bound to {', '.join(others)}" if others else ""
        return [
            f"the nvidia kernel module is not loaded ({counted(len(pci), 'NVIDIA GPU')} on the "
            f"PCI bus{bound}): NVML was not asked, so no GPU's processes were listed (`gpucheck "
            "doctor` says why and what to do)"
        ]
    if nvml.init_error is not None:
        err = nvml.init_error
        return [
            f"NVML could not start ({err.name}, error {err.code}): no GPU's processes were listed"
        ]
    if run is None or run.status in ("ok", "skipped"):
        return []
    if nvml.device_count is not None and len(nvml.gpus) >= nvml.device_count:
        return []  # every GPU reported (a GPU's own failure is in its account)
    how = {
        "timeout": "NVML did not answer in time",
        "crashed": "NVML crashed",
    }.get(run.status, "NVML failed")
    missing = (
        f"{nvml.device_count - len(nvml.gpus)} of {nvml.device_count} GPUs"
        if nvml.device_count is not None
        else "the GPUs"
    )
    return [f"{how} ({run.error or run.status}): {missing} and their processes were not listed"]


def _place(found: Holder, proc: HostProcess, view: View | None, caller_uid: int | None) -> None:
    """Whose it is, whether it is in gpucheck's container, and its PID as signals from here
    reach it: the same PID, or through NSpid where this /proc is an outer namespace's."""
    uid = caller_uid if view is None else view.uid
    if proc.uid is not None and uid is not None:
        found.mine = proc.uid == uid
    if view is None or view.depth == 0:
        found.local_pid = proc.pid
        found.elsewhere = view is not None and proc.container_id != view.container_id
        return
    found.elsewhere = proc.pid not in view.same_namespace
    if not found.elsewhere and len(proc.nspid) == view.depth + 1:
        found.local_pid = proc.nspid[view.depth]


def _notes(snapshot: Snapshot, holders: Holders) -> list[str]:
    notes = []
    nvml = snapshot.nvml
    if nvml.init_error is not None:
        notes.append(
            f"NVML is not available ({nvml.init_error.name}): processes with a CUDA context and "
            "their memory are unknown; only device-file holders from /proc are listed"
        )
    elif nvml.init_skipped_reason and not snapshot.system.pci_gpus:  # else `unknown` says it
        notes.append(f"NVML not asked: {nvml.init_skipped_reason}")
    facts = snapshot.processes
    if not facts.scanned:
        notes.append("/proc could not be read: only NVML's view is listed")
    elif facts.fds_unreadable:
        notes.append(
            f"the open files of {counted(facts.fds_unreadable, 'process')} of other users are not "
            "readable without root: holders with no CUDA context among them are not listed"
        )
    if any(a.outside_pids for a in holders.gpus):
        where = "this container" if snapshot.system.container else "this PID namespace"
        notes.append(
            f"NVML lists PIDs that are not in {where}: the driver reports host PIDs "
            "(it does not know PID namespaces); their memory is shown as held outside, and "
            "they cannot be acted on from here"
        )
    return notes


def select_gpu(wanted: str, gpus: list[GpuFacts]) -> list[int]:
    """The NVML indices `--gpu` names (an index, or a UUID or its prefix): one; none, no such
    GPU; several, a UUID prefix too short to tell them apart (ambiguous_gpu says so)."""
    if wanted.isdigit():
        index = int(wanted)
        return [index] if any(g.index == index for g in gpus) else []
    return [g.index for g in gpus if g.uuid and g.uuid.lower().startswith(wanted.lower())]


def ambiguous_gpu(wanted: str, matches: list[tuple[int, str]]) -> str:
    """What `--gpu` (procs and watch alike) says of a UUID prefix several GPUs share."""
    listed = ", ".join(f"{index} ({uuid})" for index, uuid in matches)
    return (
        f"--gpu {wanted}: ambiguous: the UUID prefix matches {len(matches)} GPUs: {listed}; "
        "give more of the UUID, or the index"
    )


def only_gpu(holders: Holders, index: int) -> Holders:
    accounts = [a for a in holders.gpus if a.index == index]
    # A GPU NVML could not open has no known minor number: a /dev/nvidiaN no GPU claims may
    # be its, so it stays listed (as a device file of unknown GPU), never dropped.
    unopened = any(a.uuid is None and not a.processes_known for a in accounts)
    return Holders(
        [h for h in holders.holders if index in h.gpus or (unopened and _unclaimed(h))],
        accounts,
        holders.notes,
    )


def _unclaimed(h: Holder) -> bool:
    """Has a GPU's device file open that no GPU here was matched to."""
    return not h.uses and any(d.removeprefix("/dev/nvidia").isdigit() for d in h.devices)


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
        f"`sudo nvidia-smi -r -i {account.index}`"
    )
