"""How the GPUs are shared between processes: compute mode, MIG slices, memory other
processes hold. Each says which GPUs, and which process or slice, the job should use."""

from __future__ import annotations

from typing import Literal

from gpucheck.checks.context import (
    Context,
    gib,
    gpu_label,
    gpu_refs,
    gpu_subjects,
    indices,
    process_slice,
)
from gpucheck.checks.fixes import reset_gpus, share_gpus
from gpucheck.checks.gpus.health import BUSY_UTILIZATION, healthy_reporting, known_count
from gpucheck.checks.registry import check
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.holders import UNACCOUNTED_FLOOR, GpuAccount, Holder, merge
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import GpuFacts, GpuProcess, Snapshot

# Memory in use with no process listed that means another context holds the GPU (another
# container, a VM, a process in another PID namespace): the floor procs reads it by too.
HELD_MEMORY = UNACCOUNTED_FLOOR
BUSY_MESSAGE = "'all CUDA-capable devices are busy or unavailable'"


def _holder(g: GpuFacts, jobs: frozenset[int] | None = None) -> str | None:
    """Who holds an exclusive-process GPU, if anyone visibly does (a running job's process,
    under the scheduler's profile, is the GPU's rightful holder: not reported)."""
    if g.processes:
        others = [p for p in g.processes if jobs is None or p.pid not in jobs]
        if not others:
            return None
        return ", ".join(f"PID {p.pid} {p.name or '?'} ({gib(p.used_memory)})" for p in others[:3])
    if g.processes is not None and (
        (g.memory_used or 0) >= HELD_MEMORY or (g.utilization_gpu or 0) >= BUSY_UTILIZATION
    ):
        return (
            f"a context not listed here ({gib(g.memory_used)} used, "
            f"{g.utilization_gpu if g.utilization_gpu is not None else '?'}% busy: another "
            "container, VM or PID namespace)"
        )
    return None


@check("gpus.compute-mode", "compute mode lets CUDA programs use the GPU")
def compute_mode(ctx: Context) -> Outcome | None:
    gpus, unknown = healthy_reporting(ctx, "compute_mode", "Compute mode")
    if not gpus or unknown:
        return unknown
    prohibited = [g for g in gpus if g.compute_mode == "prohibited"]
    exclusive = [g for g in gpus if g.compute_mode in ("exclusive_process", "exclusive_thread")]
    if prohibited:
        return Outcome.fail(
            f"Compute is prohibited on {len(prohibited)} GPU(s): no CUDA program can use them",
            *[gpu_label(g) for g in prohibited],
            fix=Fix.of(share_gpus(prohibited, "let CUDA use them")),
            subjects=gpu_subjects(prohibited),
        )
    jobs = ctx.requirements.job_pids
    held = [(g, who) for g in exclusive if (who := _holder(g, jobs))]
    if held:
        taken = [g for g, _ in held]
        free = [g for g in gpus if g not in taken and g.compute_mode != "prohibited"]
        pids = sorted({p.pid for g in taken for p in (g.processes or [])})
        steps: list[Step] = []
        if free:
            steps.append(
                Step.set_env("CUDA_VISIBLE_DEVICES", indices(free), "use a free GPU", Layer.JOB)
            )
        if pids:
            pid_list = ",".join(map(str, pids))
            steps.append(
                Step.run("wait for the holder or stop it", f"ps -o pid,user,cmd -p {pid_list}")
            )
        else:
            steps.append(
                Step.manual("wait for the job holding it, or find it where it runs (the host)")
            )
        steps.append(
            share_gpus(
                taken,
                "if exclusive-process mode was not set on purpose by the scheduler, return it to "
                "the default",
            )
        )
        return Outcome.fail(
            f"{len(taken)} GPU(s) in exclusive-process mode are already held by another "
            f"process: a new CUDA program there fails with {BUSY_MESSAGE}",
            *[f"{gpu_label(g)}: {g.compute_mode}, held by {who}" for g, who in held],
            fix=Fix.of(*steps),
            subjects=gpu_subjects(taken),
        )
    if exclusive and jobs is not None:
        # The scheduler's profile: exclusive-process mode is how it gives a job its GPUs.
        return Outcome.passed(
            f"{len(exclusive)} GPU(s) in exclusive-process mode, held by running jobs or free",
            *[f"{gpu_label(g)}: {g.compute_mode}" for g in exclusive],
        )
    if exclusive:
        return Outcome.warn(
            f"{len(exclusive)} GPU(s) in exclusive-process mode: only one process at a time "
            f"(a second one, e.g. a data-loader worker or an evaluation job, fails with "
            f"{BUSY_MESSAGE})",
            *[f"{gpu_label(g)}: {g.compute_mode}" for g in exclusive],
            fix=Fix.of(
                share_gpus(exclusive, "if not set on purpose by the scheduler, share the GPU again")
            ),
            subjects=gpu_subjects(exclusive),
        )
    known, blind = known_count(gpus, "compute_mode")
    return Outcome.passed(f"Compute mode default on {known} GPU(s)", *blind)


def _slices(g: GpuFacts) -> str:
    return (
        f"{gpu_label(g)}: {len(g.mig_devices)} MIG device(s): "
        + ", ".join(f"{m.name or 'MIG'} {m.uuid or ''}".strip() for m in g.mig_devices[:4])
        + (" ..." if len(g.mig_devices) > 4 else "")
    )


@check("gpus.mig", "MIG mode, and what it means for CUDA_VISIBLE_DEVICES")
def mig(ctx: Context) -> Outcome | None:
    gpus = ctx.healthy_handles
    on = [g for g in gpus if g.mig_enabled]
    pending = [
        g
        for g in gpus
        if g.mig_enabled_pending is not None and g.mig_enabled_pending != g.mig_enabled
    ]
    if pending:
        return Outcome.warn(
            f"A MIG mode change is pending on {len(pending)} GPU(s) until they are reset",
            *[
                f"{gpu_label(g)}: MIG {'on' if g.mig_enabled else 'off'} now, "
                f"{'on' if g.mig_enabled_pending else 'off'} after reset"
                for g in pending
            ],
            fix=Fix.of(
                reset_gpus(pending, "reset the GPU to apply it"),
                OR,
                Step.reboot(),
            ),
            subjects=gpu_subjects(pending),
        )
    if not on:
        return None
    empty = [g for g in on if not g.mig_devices]
    if empty:
        return Outcome.fail(
            f"MIG is on but no MIG devices exist on {len(empty)} GPU(s): CUDA sees nothing there",
            *[gpu_label(g) for g in empty],
            fix=Fix.of(
                Step.run("list the GPU instance profiles", "nvidia-smi mig -lgip"),
                Step.manual(
                    "create GPU and compute instances of one, e.g. "
                    f"sudo nvidia-smi mig -i {indices(empty)} -cgi <profile> -C",
                    gpus=gpu_refs(empty),
                ),
                OR,
                Step.run(
                    "turn MIG off",
                    f"sudo nvidia-smi -i {indices(empty)} -mig 0",
                    gpus=gpu_refs(empty),
                ),
            ),
            subjects=gpu_subjects(empty),
        )
    evidence = [_slices(g) for g in on]
    vis = ctx.visibility
    visible_on = [g for g in on if g in vis.visible]
    slices = [m for g in visible_on for m in g.mig_devices]
    if vis.mig_entries == 0 and len(slices) > 1:
        # CUDA enumerates MIG slices only by their UUIDs in CUDA_VISIBLE_DEVICES; unset, or
        # naming whole GPUs, a process gets a single slice whatever the job asks for.
        cvd = vis.value
        uuids = [m.uuid for m in slices if m.uuid]
        first = uuids[0] if uuids else "MIG-<uuid>"
        picked = process_slice(visible_on[0], vis) or slices[0]
        others = f" (the others: {', '.join(uuids[1:])})" if len(uuids) > 1 else ""
        listing = None if uuids else Step.run("list the MIG UUIDs", "nvidia-smi -L")
        choose = Fix.of(
            listing,
            Step.set_env(
                "CUDA_VISIBLE_DEVICES",
                first,
                "a CUDA process uses one MIG slice, chosen by its UUID: run one process per "
                f"slice, each with its own{others}",
                Layer.JOB,
            ),
            OR,
            Step.run(
                "to use the whole GPU in one process, turn MIG off (then reset the GPU)",
                f"sudo nvidia-smi -i {indices(visible_on)} -mig 0",
                gpus=gpu_refs(visible_on),
            ),
        )
        which = f"{picked.name or 'MIG device'} {picked.uuid or ''}".strip()
        if cvd is None:
            # Unset is the common healthy case (one job per slice, or a single-slice job):
            # CUDA runs on the first slice it enumerates. Information, not a failure; a job
            # that needs several GPUs is judged by --min-gpus.
            return Outcome.info(
                f"MIG is on: with CUDA_VISIBLE_DEVICES unset, a CUDA process sees one slice of "
                f"{len(slices)} ({which})",
                *evidence,
                "CUDA_VISIBLE_DEVICES is unset",
                fix=choose,
                subjects=gpu_subjects(visible_on),
            )
        return Outcome.warn(
            f"MIG is on and CUDA_VISIBLE_DEVICES names whole GPUs, not MIG slices: a CUDA "
            f"process sees one slice of {len(slices)} ({which})",
            *evidence,
            f"CUDA_VISIBLE_DEVICES = {cvd!r}",
            fix=choose,
            subjects=gpu_subjects(visible_on),
        )
    evidence.append(
        "a CUDA process uses one MIG device; select it by UUID: "
        "CUDA_VISIBLE_DEVICES=MIG-<uuid> (indices name whole GPUs, not slices)"
    )
    return Outcome.info(f"MIG is on for {len(on)} GPU(s)", *evidence, subjects=gpu_subjects(on))


@check("gpus.memory-in-use", "no other process holds most of a GPU's memory")
def memory_in_use(ctx: Context) -> Outcome | None:
    gpus, unknown = healthy_reporting(ctx, "memory_used", "Memory in use")
    if not gpus or unknown:
        return unknown
    holders = merge(ctx.snapshot)
    by_pid = {h.pid: h for h in holders.holders}
    accounts = {a.index: a for a in holders.gpus}
    jobs = ctx.requirements.job_pids
    on_host = _is_host_pid_namespace(ctx.snapshot)
    busy: list[tuple[GpuFacts, str]] = []
    dead: set[int] = set()  # GPUs holding memory under PIDs that exited
    for g in gpus:
        account = accounts.get(g.index)
        if account is None:
            continue
        procs = sorted(g.processes or [], key=lambda p: -(p.used_memory or 0))
        if jobs is None:
            over_half = bool(
                g.memory_total and g.memory_used and 2 * g.memory_used > g.memory_total
            )
        else:  # the scheduler's profile: a running job's memory is normal, any other leaked
            # (a display server's graphics context is no job's and no leak either)
            procs = [p for p in procs if p.pid not in jobs and p.kind != "graphics"]
            over_half = bool(procs)
        in_container = ctx.snapshot.system.container is not None
        # On a host, a PID NVML lists that the host's /proc lacks is no other namespace's: its
        # process exited and the driver still holds its context (qizhou000/VisEdit#5).
        gone = on_host and account.held_outside >= UNACCOUNTED_FLOOR
        if gone:
            dead.add(g.index)
        if not (over_half or account.leaked or account.zombie_pids or gone):
            continue
        who = ", ".join(_holder_text(p, by_pid.get(p.pid), in_container) for p in procs[:3])
        line = f"{gpu_label(g)}: {gib(g.memory_used)} of {gib(g.memory_total)} used"
        line += f" by {who}" if who else ""
        if account.leaked:
            line += (
                f"; {gib(account.unaccounted)} by no process listed (another container or VM, "
                "a leaked context, or the driver itself)"
            )
        busy.append((g, line))
    if busy:
        if jobs is not None:
            title = (
                f"{len(busy)} GPU(s) have memory held by no running job: processes of no job, "
                "or no live process (leaked)"
            )
        elif any(
            accounts[g.index].leaked
            or accounts[g.index].zombie_pids
            or (on_host and accounts[g.index].outside_pids)
            for g, _ in busy
        ):
            title = (
                f"{len(busy)} GPU(s) already have most of their memory in use, or memory held "
                "by no live process"
            )
        else:
            title = f"{len(busy)} GPU(s) already have most of their memory in use"
        return Outcome.warn(
            title,
            *[line for _, line in busy],
            fix=_memory_fix(
                [g for g, _ in busy],
                accounts,
                {pid: h for pid, h in by_pid.items() if jobs is None or pid not in jobs},
                [g for g in gpus if g not in [t for t, _ in busy]],
                dead,
            ),
            subjects=gpu_subjects([g for g, _ in busy]),
        )
    used = [g for g in gpus if g.processes]
    note = [
        f"{gpu_label(g)}: {len(g.processes or [])} process(es), {gib(g.memory_used)} used"
        for g in used
    ]
    known, blind = known_count(gpus, "memory_used")
    if jobs is not None and used:
        return Outcome.passed(
            f"GPU memory on {known} GPU(s) free or held by running jobs", *note, *blind
        )
    return Outcome.passed(f"Memory free on {known} GPU(s)", *note, *blind)


# PID 1's name on a host: its init system.
HOST_INITS = frozenset({"systemd", "init", "runit", "openrc-init", "s6-svscan"})


def _is_host_pid_namespace(snapshot: Snapshot) -> bool:
    """Whether this /proc is the driver's PID namespace, where a PID NVML lists and /proc lacks
    has exited. Not in a container; /proc lists every PID (hidepid hides other users' jobs,
    unknown proves nothing); and either a PID NVML lists is in this /proc (the namespaces
    agree) or PID 1 is a host's init. A private PID namespace with no container marker
    (unshare -p --mount-proc, bubblewrap, Apptainer --pid) has its own program as PID 1 and
    none of the driver's PIDs, so every NVML PID would look gone there."""
    facts = snapshot.processes
    if snapshot.system.container is not None or not facts.scanned:
        return False
    if facts.sees_every_pid is not True:
        return False
    listed = {p.pid for g in snapshot.nvml.gpus for p in g.processes or []}
    return bool(listed & {p.pid for p in facts.processes}) or facts.init_name in HOST_INITS


def _holder_text(p: GpuProcess, holder: Holder | None, in_container: bool) -> str:
    text = f"PID {p.pid} {p.name or '?'} ({gib(p.used_memory)})"
    if holder is not None and holder.state == "zombie":
        parent = holder.process.ppid if holder.process else None
        text += f" [zombie: exited, not reaped by its parent {parent or '?'}]"
    elif holder is not None and not holder.visible:
        text += (
            " [a host PID: not in this container]"
            if in_container
            else " [not in /proc here: exited since, or in another PID namespace]"
        )
    return text


def _memory_fix(
    busy: list[GpuFacts],
    account_of: dict[int, GpuAccount],
    by_pid: dict[int, Holder],
    free: list[GpuFacts],
    dead: set[int],
) -> Fix:
    accounts = [account_of[g.index] for g in busy]
    wanted = {a.index for a in accounts}
    visible = sorted(
        h.pid
        for h in by_pid.values()
        if h.visible and h.state != "zombie" and h.memory and wanted & set(h.gpus)
    )
    zombies = sorted({pid for a in accounts for pid in a.zombie_pids})
    parents = sorted(
        {
            str(h.process.ppid)
            for pid in zombies
            if (h := by_pid.get(pid)) is not None and h.process is not None and h.process.ppid
        }
    )
    parts: list[Step | Literal["or"]] = []
    if visible:
        pids = ",".join(map(str, visible))
        kills = " ".join(f"--kill {pid}" for pid in visible)
        parts += [
            Step.run(
                "wait for these jobs or stop them: see what they are (or with "
                f"ps -o pid,user,cmd -p {pids})",
                "gpucheck procs",
            ),
            Step.run("then end them", f"gpucheck procs {kills}"),
        ]
    if zombies:
        parts.append(
            Step.manual(
                f"PID(s) {', '.join(map(str, zombies))} exited but were not reaped: end or "
                f"restart their parent ({', '.join(parents) or 'see gpucheck procs'})"
            )
        )
    if any(a.outside_pids or a.leaked for a in accounts):
        # Only a GPU whose memory no live process holds is worth a reset; another busy GPU's
        # job would lose its work. (Host PIDs seen from a container are live: no reset.)
        leaked = [g for g in busy if account_of[g.index].leaked or g.index in dead]
        parts += [
            Step.run(
                "memory held by no process here: see every holder (in a container, processes "
                "of others show only as host PIDs: look with nvidia-smi on the host)",
                "gpucheck procs",
            ),
        ]
        if leaked:
            parts.append(reset_gpus(leaked, "with nothing left holding it, reset the GPU"))
    if not parts:
        # The driver names holders without their memory (Windows WDDM, a vGPU guest): name them.
        listed = sorted(h.pid for h in by_pid.values() if wanted & set(h.gpus))
        parts.append(
            Step.run(
                (
                    f"PID(s) {', '.join(map(str, listed))} hold it"
                    if listed
                    else "something holds it"
                )
                + ": see what they are and close or wait for the programs you do "
                "not need",
                "gpucheck procs",
            )
        )
    if free:
        parts += [
            OR,
            Step.set_env("CUDA_VISIBLE_DEVICES", indices(free), "use the other GPUs", Layer.JOB),
        ]
    return Fix.of(*parts)
