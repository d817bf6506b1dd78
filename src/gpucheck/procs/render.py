"""`gpucheck procs` output: the JSON document (typed, so `gpucheck schema --procs` prints its
schema) and the table for a person, grouped by GPU and sorted by memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpucheck.model import json_schema
from gpucheck.model.decoding import to_dict
from gpucheck.model.holders import (
    DEVICE_SCAN,
    GpuAccount,
    GpuUse,
    Holder,
    Holders,
    leak_causes,
)
from gpucheck.model.plural import plural
from gpucheck.procs.ending import Decision, Ended, shorten
from gpucheck.report.output_format import Format, FunctionFormat, format_table, write_json
from gpucheck.report.text import printable
from gpucheck.version import __version__

PROCS_SCHEMA_VERSION = "1.1"
PIPE_WIDTH = 160
# How each signal was kept to the process confirmed (signals.py), for a person.
GUARD_WORDS = {
    "pidfd": "through a pidfd held since it was confirmed",
    "start time": "after its start time was checked again (no pidfd here)",
}
ROOT_SEES = "as root it sees every user's"


@dataclass
class ProcessRow:
    pid: int  # in this PID namespace where visible; NVML's (a host PID) otherwise
    visible: bool  # this /proc shows it (False: another container or namespace)
    name: str | None
    user: str | None
    uid: int | None
    mine: bool | None  # the caller's own
    state: str  # running | zombie | stopped | uninterruptible | unknown
    command: list[str] | None  # the full command line
    start_time: str | None
    container_id: str | None
    pod_uid: str | None
    cgroup: str | None
    nspid: list[int]  # its PID in each nested namespace, outermost first
    nvml_pid: int | None  # always null since 1.1: a host PID is never matched by guess
    # The PID `--kill` takes for it: signals from here reach it under this PID (NSpid, where
    # this /proc is the host's seen from a container). null: it cannot be acted on from here.
    local_pid: int | None
    elsewhere: bool  # in another container than gpucheck's: never ended by --kill-mine
    devices: list[str]  # /dev/nvidia* files it has open
    memory: int  # bytes, over all GPUs
    gpus: list[GpuUse]


@dataclass
class GpuRow:
    index: int
    uuid: str | None
    name: str | None
    memory_total: int | None
    memory_used: int | None
    held_visible: int
    held_outside: int  # by PIDs outside this namespace
    outside_pids: list[int]
    zombie_pids: list[int]
    unaccounted: int | None  # used with no process (the driver's reservation included)
    leaked: bool  # unaccounted beyond the driver's reservation
    leak_causes: str | None
    # False: NVML could not list its processes (why: processes_error), so the processes
    # listed for it are only those with its device file open, and "none" means unknown.
    processes_known: bool = True
    processes_error: str | None = None


@dataclass
class Action:
    pid: int
    decision: str  # end | refuse
    reason: str
    outcome: str | None = None  # terminated | killed | gone | survived | changed | denied
    detail: str | None = None
    # How its signals were kept to this one process: "pidfd" (one held since it was
    # confirmed), "start time" (read again before each signal, where pidfd is missing)
    guard: str | None = None


@dataclass
class MemoryChange:
    gpu: int
    before: int | None
    after: int | None


@dataclass
class ProcsDocument:
    schema_version: str
    gpucheck_version: str
    created_at: str
    gpus: list[GpuRow]
    processes: list[ProcessRow]
    notes: list[str]
    in_container: bool  # gpucheck runs in a container: NVML's PIDs not here are host PIDs
    # False: some GPU's holders could not be asked (why: `unknown`, gpus[].processes_error);
    # the command then exits 5, "could not tell".
    complete: bool = True
    unknown: list[str] = field(default_factory=list)
    actions: list[Action] | None = None  # with --kill / --kill-mine
    memory: list[MemoryChange] | None = None  # used memory before and after ending


def document(
    holders: Holders,
    created_at: str,
    in_container: bool,
    actions: list[Action] | None = None,
    memory: list[MemoryChange] | None = None,
) -> ProcsDocument:
    return ProcsDocument(
        PROCS_SCHEMA_VERSION,
        __version__,
        created_at,
        [_gpu_row(a, in_container) for a in holders.gpus],
        [_process_row(h) for h in holders.holders],
        holders.notes,
        in_container,
        holders.complete,
        holders.unknown,
        actions,
        memory,
    )


def _gpu_row(a: GpuAccount, in_container: bool) -> GpuRow:
    return GpuRow(
        a.index,
        a.uuid,
        a.name,
        a.memory_total,
        a.memory_used,
        a.held_visible,
        a.held_outside,
        a.outside_pids,
        a.zombie_pids,
        a.unaccounted,
        a.leaked,
        leak_causes(a, in_container) if a.leaked else None,
        a.processes_known,
        a.processes_error,
    )


def _process_row(h: Holder) -> ProcessRow:
    p = h.process
    return ProcessRow(
        pid=h.pid,
        visible=h.visible,
        name=h.name,
        user=p.user if p else None,
        uid=p.uid if p else None,
        mine=h.mine,
        state=h.state,
        command=p.cmdline if p else None,
        start_time=p.start_time if p else None,
        container_id=p.container_id if p else None,
        pod_uid=p.pod_uid if p else None,
        cgroup=p.cgroup if p else None,
        nspid=list(p.nspid) if p else [],
        nvml_pid=None,
        local_pid=h.local_pid,
        elsewhere=h.elsewhere,
        devices=h.devices,
        memory=h.memory,
        gpus=h.uses,
    )


def actions(decisions: list[Decision], ended: dict[int, Ended]) -> list[Action]:
    out = []
    for d in decisions:
        e = ended.get(d.pid)
        out.append(
            Action(
                d.pid,
                "end" if d.end else "refuse",
                d.reason,
                e.outcome if e else None,
                e.detail if e else None,
                e.guard if e else None,
            )
        )
    return out


def render_json(doc: ProcsDocument, stream: IO[str]) -> None:
    write_json(to_dict(doc), stream, indent=None)


def render_text(doc: ProcsDocument, stream: IO[str]) -> None:
    """The holders' table; after --kill/--kill-mine, what each ending did and the memory it
    freed."""
    if doc.actions is None and doc.memory is None:
        render(doc, stream)
        return
    for a in doc.actions or []:
        if a.outcome is not None:
            words = GUARD_WORDS.get(a.guard or "")
            guard = f" (signals sent {words})" if words else ""
            stream.write(f"PID {a.pid}: {a.outcome}: {a.detail}{guard}\n")
    for m in doc.memory or []:
        if m.before is not None and m.after is not None:
            freed = m.before - m.after
            stream.write(
                f"GPU {m.gpu}: {gib(m.before)} -> {gib(m.after)} used"
                + (f" ({gib(freed)} freed)\n" if freed > 0 else "\n")
            )


# The formats of `procs --format`, by name; text is the default.
FORMATS: dict[str, Format[ProcsDocument]] = format_table(
    FunctionFormat("text", render_text), FunctionFormat("json", render_json)
)


def schema() -> dict[str, Any]:
    (ref,), defs = json_schema.components([ProcsDocument])
    defs["ProcsDocument"]["properties"]["schema_version"] = json_schema.version_property(
        PROCS_SCHEMA_VERSION, "procs schema"
    )
    # actions and memory appear with --kill / --kill-mine only.
    defs["ProcsDocument"]["required"] = [
        k for k in defs["ProcsDocument"]["required"] if k not in ("actions", "memory")
    ]
    return json_schema.document(
        "procs",
        PROCS_SCHEMA_VERSION,
        "gpucheck procs",
        f"Output of `gpucheck procs --json`, procs schema {PROCS_SCHEMA_VERSION}: who holds GPU "
        "memory and GPU device files, per GPU and per process.",
        {**ref, "$defs": defs},
    )


# --- for a person -------------------------------------------------------------------------


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich's own handling exits 1; a reader that goes away (procs | head) is not an error.
        raise BrokenPipeError


def gib(value: int | None) -> str:
    return "?" if value is None else f"{value / 1024**3:.1f} GiB"


def _command(row: ProcessRow, width: int = 48) -> str:
    text = " ".join(row.command) if row.command else (row.name or "?")
    return shorten(printable(text), width)


# Why procs and watch (or nvidia-smi) disagree on used memory: NVML's device "used" (v1, read
# here) counts the driver's reservation, watch reads v2 as nvidia-smi does and leaves it out,
# and a process's figure is its own context's allocations only.
MEMORY_NOTE = (
    "Memory: a GPU's used counts what the driver reserves; a process's is what its own context "
    "allocated. `gpucheck watch` and nvidia-smi leave the driver's reservation out (less used)."
)


def render(doc: ProcsDocument, stream: IO[str] | None = None) -> None:
    # Names and command lines are any process's own text: never markup, controls escaped.
    console = _Console(file=stream, highlight=False, soft_wrap=False, emoji=False, markup=False)
    if not console.is_terminal:
        console.width = PIPE_WIDTH  # a file or a pipe gets whole lines, not a squeezed table
        console.soft_wrap = True  # and a note past that width stays one line (grep finds it)
    for why in doc.unknown:  # first: what follows is only part of the answer
        console.print(f"? GPU holders unknown: {why}. {DEVICE_SCAN}", style="yellow")
    for g in doc.gpus:
        head = Text(f"GPU {g.index}", style="bold")
        # One NVML could not open (lost) has no name or memory to show: the line below says why.
        unopened = g.name is None and g.uuid is None and g.memory_total is None
        if not unopened:
            head.append(f"  {printable(g.name or '?')}")
            head.append(f"  {gib(g.memory_used)} of {gib(g.memory_total)} used", style="dim")
        console.print(head)
        rows = sorted(
            (r for r in doc.processes if any(u.gpu == g.index for u in r.gpus)),
            key=lambda r: -sum(u.used_memory or 0 for u in r.gpus if u.gpu == g.index),
        )
        if not g.processes_known:
            said = (
                f"its GPU contexts are unknown: {g.processes_error}; below: the processes "
                "with its device file open (the /dev/nvidia* scan)"
                if rows
                else f"who holds it is unknown: {g.processes_error}; its /dev/nvidia* file "
                "is unknown too (a process with one open that no GPU here claims is listed "
                'under "Device files open")'
                if unopened
                else f"who holds it is unknown: {g.processes_error}; no process has its "
                f"device file open (the /dev/nvidia* scan; {ROOT_SEES})"
            )
            console.print(f"  ? {said}", style="yellow")
        if rows:
            console.print(_table(rows, g.index, doc.in_container))
        elif g.processes_known:
            console.print("  no process holds it", style="dim")
        if g.held_outside:
            pids = ", ".join(map(str, g.outside_pids))
            where = (
                f"outside this container (host PIDs {pids})"
                if doc.in_container
                else f"not in /proc here (PIDs {pids}: exited since, or in another PID namespace)"
            )
            console.print(f"  {gib(g.held_outside)} held by processes {where}", style="yellow")
        if g.zombie_pids:
            console.print(
                f"  ! zombie {plural(len(g.zombie_pids), 'context')}: "
                f"{plural(len(g.zombie_pids), 'PID', 'PIDs')} "
                f"{', '.join(map(str, g.zombie_pids))} exited but still "
                + (
                    "holds memory until its parent reaps it"
                    if len(g.zombie_pids) == 1
                    else "hold memory until their parents reap them"
                ),
                style="yellow",
            )
        if g.leaked and g.leak_causes:
            console.print(
                f"  ! {gib(g.unaccounted)} used by no process listed. Known causes: "
                f"{g.leak_causes}",
                style="yellow",
            )
    if any(g.memory_used is not None for g in doc.gpus):
        console.print(MEMORY_NOTE, style="dim")
    driver_only = [r for r in doc.processes if not r.gpus and r.devices]
    if driver_only:
        title = (
            "Driver only (device files open, no GPU context)"
            if doc.complete
            else "Device files open (which GPU, and with what context, is unknown)"
        )
        console.print(Text(title, style="bold"))
        console.print(_table(driver_only, None, doc.in_container))
    if not doc.gpus and not doc.processes and doc.complete:
        console.print("No GPU and no process holding /dev/nvidia*.")
    if any(r.mine for r in doc.processes):
        console.print(
            Text(
                "* yours (gpucheck procs --kill-mine ends those with a compute context, in this "
                "container)",
                style="dim",
            )
        )
    for note in doc.notes:
        console.print(Text(f"note: {note}", style="dim"))


def _table(rows: list[ProcessRow], gpu: int | None, in_container: bool) -> Table:
    table = Table(box=None, padding=(0, 1), pad_edge=False, show_edge=False)
    for name, justify in (
        ("PID", "right"),
        ("USER", "left"),
        ("MEMORY", "right"),
        ("TYPE", "left"),
        ("STATE", "left"),
        ("STARTED", "left"),
        ("CONTAINER", "left"),
        ("COMMAND", "left"),
    ):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for r in rows:
        uses = [u for u in r.gpus if gpu is None or u.gpu == gpu]
        memory = sum(u.used_memory or 0 for u in uses)
        kinds = sorted({u.kind or "file" for u in uses}) or ["file"]
        mig = [u.gpu_instance_id for u in uses if u.gpu_instance_id is not None]
        kind = "/".join(kinds) + (f" GI {mig[0]}" if mig else "")
        pid = str(r.pid) + ("" if r.visible else " (host)" if in_container else " (gone?)")
        if r.local_pid is not None and r.local_pid != r.pid:
            pid += f" (here {r.local_pid})"  # what --kill takes, and ps shows here
        elif len(r.nspid) > 1:
            pid += f" ({r.nspid[-1]} inside)"  # as the container's own tools show it
        mine = " *" if r.mine else ""
        started = (r.start_time or "")[11:16] or "?"
        container = (r.container_id or "")[:12] or ("pod " + r.pod_uid[:8] if r.pod_uid else "")
        state_style = "red" if r.state in ("zombie", "uninterruptible") else None
        table.add_row(
            pid,
            printable(r.user or "?") + mine,
            gib(memory) if memory else "-",
            kind,
            Text(r.state, style=state_style or ""),
            started,
            container,
            _command(r),
        )
    return table
