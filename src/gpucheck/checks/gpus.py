"""Per-GPU health, each check aggregated over all GPUs: one line for eight healthy GPUs, and
one evidence line per GPU that has the problem."""

from __future__ import annotations

from collections.abc import Callable

from gpucheck.checks.context import Context, gib, gpu_label
from gpucheck.checks.registry import check
from gpucheck.gpu_holders import GpuAccount, Holder, merge
from gpucheck.model.finding import Outcome, Section
from gpucheck.model.snapshot import GpuFacts, GpuProcess

NO_GPUS = "No GPU facts from the driver (see driver.nvml)"
# A PCIe link idles at a lower generation to save power; only under load does it matter.
BUSY_UTILIZATION = 30
# Throttle reasons that mean the GPU is protecting itself, not just saving power.
HW_SLOWDOWN = {
    "hw_slowdown": "hardware slowdown (clocks cut by half or more)",
    "hw_thermal_slowdown": "hardware thermal slowdown (too hot)",
    "hw_power_brake_slowdown": "power brake slowdown (external power supply signal)",
}
SW_THERMAL = {"sw_thermal_slowdown": "software thermal slowdown"}


def _unknown(gpus: list[GpuFacts], field: str) -> list[GpuFacts]:
    return [g for g in gpus if getattr(g, field) is None]


def _unknown_note(gpus: list[GpuFacts], field: str) -> list[str]:
    unknown = _unknown(gpus, field)
    if not unknown:
        return []
    reasons = sorted({g.field_errors.get(field, "not reported") for g in unknown})
    return [f"unknown on {len(unknown)} GPU(s): {', '.join(reasons)}"]


def _known(gpus: list[GpuFacts], field: str) -> tuple[int, list[str]]:
    """For a pass: how many GPUs the fact is known for, and a note on the others (a pass
    covers only what was seen; an unknown is never counted as fine)."""
    return sum(1 for g in gpus if getattr(g, field) is not None), _unknown_note(gpus, field)


def _all_unknown(gpus: list[GpuFacts], field: str, what: str) -> Outcome | None:
    if gpus and len(_unknown(gpus, field)) == len(gpus):
        return Outcome.skip(f"{what}: not reported by these GPUs", *_unknown_note(gpus, field))
    return None


def _per_gpu(
    ctx: Context, check_one: Callable[[GpuFacts], str | None]
) -> tuple[list[GpuFacts], list[str]]:
    bad, evidence = [], []
    for g in ctx.healthy_handles:
        problem = check_one(g)
        if problem:
            bad.append(g)
            evidence.append(f"{gpu_label(g)}: {problem}")
    return bad, evidence


@check("gpu.lost", Section.GPUS, "every GPU answers (none fallen off the bus or needing reset)")
def lost(ctx: Context) -> Outcome | None:
    if not ctx.gpus:
        return Outcome.skip(NO_GPUS) if ctx.has_gpu else None
    lost = [g for g in ctx.gpus if g.handle_error is not None]
    count = ctx.snapshot.nvml.device_count
    unread = count - len(ctx.gpus) if count is not None and count > len(ctx.gpus) else 0
    if not lost and (count is None or count == len(ctx.gpus)):
        return Outcome.passed(f"All {len(ctx.gpus)} GPU(s) answer")
    evidence = [f"GPU {g.index}: {g.handle_error.name}" for g in lost if g.handle_error is not None]
    if count is not None and count > len(ctx.gpus):
        evidence.append(f"the driver counts {count} GPUs but only {len(ctx.gpus)} were read")
    pci = len(ctx.snapshot.system.pci_gpus)
    return Outcome.fail(
        f"{len(lost) + unread} GPU(s) do not answer: fallen off the bus or needing a reset",
        *evidence,
        *([f"{pci} NVIDIA GPU(s) on the PCI bus"] if pci else []),
        fix=f"sudo nvidia-smi -r -i {','.join(str(g.index) for g in lost) or '<index>'} "
        "(reset the GPU, with nothing running on it) or reboot; "
        "sudo dmesg | grep -i xid tells why (Xid 79: fallen off the bus). If it repeats, the "
        "GPU, its slot or its power is failing.",
    )


@check("gpu.ecc-errors", Section.GPUS, "no uncorrectable ECC memory errors")
def ecc(ctx: Context) -> Outcome | None:
    gpus = ctx.healthy_handles
    if not gpus:
        return None
    with_ecc = [g for g in gpus if g.ecc_enabled]
    if not with_ecc:
        if all(g.ecc_enabled is None for g in gpus):
            return Outcome.skip(
                "ECC: not supported by these GPUs", *_unknown_note(gpus, "ecc_enabled")
            )
        return Outcome.info("ECC is off on every GPU: memory errors go undetected")
    unknown = _all_unknown(with_ecc, "ecc_uncorrected_volatile", "Uncorrectable ECC error counts")
    if unknown:
        return unknown
    bad, evidence = _per_gpu(
        ctx,
        lambda g: (
            f"{g.ecc_uncorrected_volatile} uncorrectable error(s) since the last reboot"
            if g.ecc_uncorrected_volatile
            else None
        ),
    )
    if bad:
        return Outcome.fail(
            f"Uncorrectable ECC memory errors on {len(bad)} GPU(s): results and jobs on them "
            "are not to be trusted",
            *evidence,
            fix="Drain the node; reset the GPU (sudo nvidia-smi -r -i <index>) or reboot, then "
            "re-check. Errors that return after a reset mean the GPU needs replacing (RMA).",
        )
    history = [g for g in with_ecc if g.ecc_uncorrected_aggregate]
    note = [f"{gpu_label(g)}: {g.ecc_uncorrected_aggregate} in its lifetime" for g in history]
    known, blind = _known(with_ecc, "ecc_uncorrected_volatile")
    return Outcome.passed(
        f"No uncorrectable ECC errors on {known} GPU(s) since boot", *note, *blind
    )


@check("gpu.memory-remapping", Section.GPUS, "no pending or failed row remaps / page retirements")
def remapping(ctx: Context) -> Outcome | None:
    gpus = [g for g in ctx.healthy_handles if g.ecc_enabled]
    if not gpus:
        return None
    failed, ev_failed = _per_gpu(
        ctx, lambda g: "row remapping failed (no spare rows left)" if g.remap_failed else None
    )
    if failed:
        return Outcome.fail(
            f"Row remapping failed on {len(failed)} GPU(s): the memory has errors it can no "
            "longer repair",
            *ev_failed,
            fix="Take the GPU out of service and replace it (RMA); run NVIDIA's field "
            "diagnostics (dcgmi diag -r 3) to confirm.",
        )
    pending, ev_pending = _per_gpu(
        ctx,
        lambda g: (
            "a row remap is pending (takes effect at the next GPU reset)"
            if g.remap_pending
            else ("a page retirement is pending" if g.retired_pages_pending else None)
        ),
    )
    if pending:
        return Outcome.warn(
            f"Memory repairs pending on {len(pending)} GPU(s) until they are reset",
            *ev_pending,
            fix="Reset the GPU when idle (sudo nvidia-smi -r -i <index>) or reboot the node.",
        )
    dbe = [g for g in gpus if (g.retired_pages_dbe or 0) > 0]
    evidence = [
        f"{gpu_label(g)}: {g.retired_pages_dbe} page(s) retired for double-bit errors" for g in dbe
    ]
    reported = [
        g for g in gpus if g.remap_pending is not None or g.retired_pages_pending is not None
    ]
    if not reported:
        return Outcome.skip("Row remapping and page retirement: not reported by these GPUs")
    silent = len(gpus) - len(reported)
    return Outcome.passed(
        f"No pending or failed memory repairs on {len(reported)} GPU(s)",
        *evidence,
        *([f"not reported by {silent} GPU(s)"] if silent else []),
    )


@check("gpu.throttling", Section.GPUS, "no thermal, power-brake or hardware clock slowdown")
def throttling(ctx: Context) -> Outcome | None:
    gpus = ctx.healthy_handles
    if not gpus:
        return None
    unknown = _all_unknown(gpus, "clock_event_reasons", "Clock slowdown reasons")
    if unknown:
        return unknown

    def hw(g: GpuFacts) -> str | None:
        reasons = [HW_SLOWDOWN[r] for r in (g.clock_event_reasons or []) if r in HW_SLOWDOWN]
        return ", ".join(reasons) + _temp(g) if reasons else None

    bad, evidence = _per_gpu(ctx, hw)
    if bad:
        return Outcome.fail(
            f"{len(bad)} GPU(s) are slowed down by hardware protection",
            *evidence,
            fix="Check cooling (fans, airflow, inlet temperature) and power delivery (PSU "
            "cables, power-brake signal); nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER "
            "shows the detail.",
        )

    def sw(g: GpuFacts) -> str | None:
        reasons = [SW_THERMAL[r] for r in (g.clock_event_reasons or []) if r in SW_THERMAL]
        hot = (
            g.temperature_c is not None
            and g.temperature_slowdown_c is not None
            and g.temperature_c >= g.temperature_slowdown_c - 5
        )
        if reasons or hot:
            return (", ".join(reasons) or "close to its slowdown temperature") + _temp(g)
        return None

    warm, evidence = _per_gpu(ctx, sw)
    if warm:
        return Outcome.warn(
            f"{len(warm)} GPU(s) run hot enough to lower their clocks",
            *evidence,
            fix="Improve cooling (airflow, fan curve, inlet temperature); check with "
            "nvidia-smi -q -d TEMPERATURE,PERFORMANCE under load.",
        )
    known, blind = _known(gpus, "clock_event_reasons")
    return Outcome.passed(f"No hardware or thermal slowdown on {known} GPU(s)", *blind)


def _temp(g: GpuFacts) -> str:
    if g.temperature_c is None:
        return ""
    limit = f", slowdown at {g.temperature_slowdown_c} °C" if g.temperature_slowdown_c else ""
    return f" ({g.temperature_c} °C{limit})"


@check("gpu.pcie-link", Section.GPUS, "each GPU's PCIe link runs at its full width")
def pcie_link(ctx: Context) -> Outcome | None:
    gpus = ctx.healthy_handles
    if not gpus:
        return None
    unknown = _all_unknown(gpus, "pcie_width_current", "PCIe link")
    if unknown:
        return unknown
    narrow_bad: list[str] = []
    narrow_warn: list[str] = []
    slow: list[str] = []
    idle_low: list[str] = []
    for g in gpus:
        cur_w, max_w = g.pcie_width_current, g.pcie_width_max
        if cur_w and max_w and cur_w < max_w:
            line = f"{gpu_label(g)}: x{cur_w} of x{max_w}"
            (narrow_bad if cur_w * 4 <= max_w else narrow_warn).append(line)
        cur_g, max_g = g.pcie_gen_current, g.pcie_gen_max
        if cur_g and max_g and cur_g < max_g:
            load = f"{g.utilization_gpu}%" if g.utilization_gpu is not None else "unknown"
            line = f"{gpu_label(g)}: gen {cur_g} of {max_g} at {load} utilisation"
            busy = g.utilization_gpu is not None and g.utilization_gpu >= BUSY_UTILIZATION
            (slow if busy else idle_low).append(line)
    idle_note = [line + " (idle: normal power saving)" for line in idle_low]
    fix = (
        "Reseat the GPU or its riser in a full-width slot, check the slot's lane sharing in the "
        "board manual (M.2 and second x16 slots often split lanes) and BIOS PCIe settings; "
        "in a VM, the hypervisor's passthrough sets the width. `gpucheck bench --quick` "
        "measures the host<->GPU transfers the link allows under load."
    )
    if narrow_bad:
        return Outcome.fail(
            "PCIe link trained far below its width: host<->GPU transfers are at a quarter or less",
            *narrow_bad,
            *narrow_warn,
            fix=fix,
        )
    if narrow_warn or slow:
        return Outcome.warn(
            "PCIe link below its maximum",
            *narrow_warn,
            *[s + " (under load)" for s in slow],
            *idle_note,
            fix=fix,
        )
    known, blind = _known(gpus, "pcie_width_current")
    return Outcome.passed(f"PCIe links at full width on {known} GPU(s)", *idle_note, *blind)


@check("gpu.compute-mode", Section.GPUS, "compute mode lets CUDA programs use the GPU")
def compute_mode(ctx: Context) -> Outcome | None:
    gpus = ctx.healthy_handles
    if not gpus:
        return None
    unknown = _all_unknown(gpus, "compute_mode", "Compute mode")
    if unknown:
        return unknown
    prohibited = [g for g in gpus if g.compute_mode == "prohibited"]
    exclusive = [g for g in gpus if g.compute_mode in ("exclusive_process", "exclusive_thread")]
    if prohibited:
        return Outcome.fail(
            f"Compute is prohibited on {len(prohibited)} GPU(s): no CUDA program can use them",
            *[gpu_label(g) for g in prohibited],
            fix="sudo nvidia-smi -i " + ",".join(str(g.index) for g in prohibited) + " -c DEFAULT",
        )
    if exclusive:
        return Outcome.warn(
            f"{len(exclusive)} GPU(s) in exclusive-process mode: only one process at a time "
            "(a second one, e.g. a data-loader worker or an evaluation job, fails with "
            "'all CUDA-capable devices are busy or unavailable')",
            *[f"{gpu_label(g)}: {g.compute_mode}" for g in exclusive],
            fix="If not set on purpose by the scheduler: sudo nvidia-smi -i "
            + ",".join(str(g.index) for g in exclusive)
            + " -c DEFAULT",
        )
    known, blind = _known(gpus, "compute_mode")
    return Outcome.passed(f"Compute mode default on {known} GPU(s)", *blind)


@check("gpu.mig", Section.GPUS, "MIG mode, and what it means for CUDA_VISIBLE_DEVICES")
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
            fix="Reset the GPU (sudo nvidia-smi -r -i <index>) or reboot to apply it.",
        )
    if not on:
        return None
    empty = [g for g in on if not g.mig_devices]
    if empty:
        return Outcome.fail(
            f"MIG is on but no MIG devices exist on {len(empty)} GPU(s): CUDA sees nothing there",
            *[gpu_label(g) for g in empty],
            fix="Create GPU and compute instances, e.g. sudo nvidia-smi mig -i "
            + ",".join(str(g.index) for g in empty)
            + " -cgi <profile> -C (list profiles: nvidia-smi mig -lgip); or turn MIG off: "
            "sudo nvidia-smi -i <index> -mig 0",
        )
    evidence = [
        f"{gpu_label(g)}: {len(g.mig_devices)} MIG device(s): "
        + ", ".join(f"{m.name or 'MIG'} {m.uuid or ''}".strip() for m in g.mig_devices[:4])
        + (" ..." if len(g.mig_devices) > 4 else "")
        for g in on
    ]
    evidence.append(
        "a CUDA process uses one MIG device; select it by UUID: "
        "CUDA_VISIBLE_DEVICES=MIG-<uuid> (indices name whole GPUs, not slices)"
    )
    return Outcome.info(f"MIG is on for {len(on)} GPU(s)", *evidence)


@check("gpu.memory-in-use", Section.GPUS, "no other process holds most of a GPU's memory")
def memory_in_use(ctx: Context) -> Outcome | None:
    gpus = ctx.healthy_handles
    if not gpus:
        return None
    unknown = _all_unknown(gpus, "memory_used", "Memory in use")
    if unknown:
        return unknown
    holders = merge(ctx.snapshot)
    by_pid = {h.pid: h for h in holders.holders}
    accounts = {a.index: a for a in holders.gpus}
    busy: list[tuple[GpuFacts, str]] = []
    for g in gpus:
        account = accounts.get(g.index)
        if account is None:
            continue
        over_half = bool(g.memory_total and g.memory_used and 2 * g.memory_used > g.memory_total)
        if not (over_half or account.leaked or account.zombie_pids):
            continue
        procs = sorted(g.processes or [], key=lambda p: -(p.used_memory or 0))
        in_container = ctx.snapshot.system.container is not None
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
        return Outcome.warn(
            f"{len(busy)} GPU(s) already have most of their memory in use, or memory held by "
            "no live process"
            if any(accounts[g.index].leaked or accounts[g.index].zombie_pids for g, _ in busy)
            else f"{len(busy)} GPU(s) already have most of their memory in use",
            *[line for _, line in busy],
            fix=_memory_fix([accounts[g.index] for g, _ in busy], by_pid, len(busy) < len(gpus)),
        )
    used = [g for g in gpus if g.processes]
    note = [
        f"{gpu_label(g)}: {len(g.processes or [])} process(es), {gib(g.memory_used)} used"
        for g in used
    ]
    known, blind = _known(gpus, "memory_used")
    return Outcome.passed(f"Memory free on {known} GPU(s)", *note, *blind)


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


def _memory_fix(accounts: list[GpuAccount], by_pid: dict[int, Holder], others_free: bool) -> str:
    indices = {a.index for a in accounts}
    visible = sorted(
        h.pid
        for h in by_pid.values()
        if h.visible and h.state != "zombie" and h.memory and indices & set(h.gpus)
    )
    zombies = sorted({pid for a in accounts for pid in a.zombie_pids})
    parents = sorted(
        {
            str(h.process.ppid)
            for pid in zombies
            if (h := by_pid.get(pid)) is not None and h.process is not None and h.process.ppid
        }
    )
    parts = []
    if visible:
        pids = ",".join(map(str, visible))
        kills = " ".join(f"--kill {pid}" for pid in visible)
        parts.append(
            f"Wait for these jobs or stop them: see what they are with `gpucheck procs` (or "
            f"`ps -o pid,user,cmd -p {pids}`), then end them: `gpucheck procs {kills}`"
        )
    if zombies:
        parts.append(
            f"PID(s) {', '.join(map(str, zombies))} exited but were not reaped: end or restart "
            f"their parent ({', '.join(parents) or 'see `gpucheck procs`'})"
        )
    hidden = any(a.outside_pids or a.leaked for a in accounts)
    parts = []
    if visible:
        pids = ",".join(map(str, visible))
        kills = " ".join(f"--kill {pid}" for pid in visible)
        parts.append(
            f"Wait for these jobs or stop them: see what they are with `gpucheck procs` (or "
            f"`ps -o pid,user,cmd -p {pids}`), then end them: `gpucheck procs {kills}`"
        )
    if zombies:
        parents = sorted(
            {
                str(by_pid[z].process.ppid)  # type: ignore[union-attr]
                for z in zombies
                if z in by_pid and by_pid[z].process and by_pid[z].process.ppid  # type: ignore[union-attr]
            }
        )
        parts.append(
            f"PID(s) {', '.join(map(str, zombies))} exited but were not reaped: end or restart "
            f"their parent ({', '.join(parents) or 'see `gpucheck procs`'})"
        )
    if hidden:
        parts.append(
            "Memory held by no process here: see every holder with `gpucheck procs` (in a "
            "container, processes of others show only as host PIDs: look with nvidia-smi on the "
            "host); with nothing left holding it, reset the GPU (`sudo nvidia-smi --gpu-reset "
            f"-i {','.join(str(a.index) for a in accounts if a.leaked) or accounts[0].index}`)"
        )
    fix = "; ".join(parts)
    if others_free:
        fix += "; or use the other GPUs (CUDA_VISIBLE_DEVICES)"
    return fix
