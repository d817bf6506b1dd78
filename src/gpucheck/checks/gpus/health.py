"""Per-GPU health, each check aggregated over all GPUs: one line for eight healthy GPUs, and
one evidence line per GPU that has the problem."""

from __future__ import annotations

from collections.abc import Callable

from gpucheck.checks.context import Context, gpu_label, gpu_refs, gpu_subjects, indices
from gpucheck.checks.fixes import install_driver, reset_gpus
from gpucheck.checks.gpus.xids import action_steps, meaning, see_why, xid_events
from gpucheck.checks.registry import check
from gpucheck.model.finding import Outcome, Status, Subjects
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import GpuFacts

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


def known_count(gpus: list[GpuFacts], field: str) -> tuple[int, list[str]]:
    """For a pass: how many GPUs the fact is known for, and a note on the others (a pass
    covers only what was seen; an unknown is never counted as fine)."""
    return sum(1 for g in gpus if getattr(g, field) is not None), _unknown_note(gpus, field)


def all_unknown(gpus: list[GpuFacts], field: str, what: str) -> Outcome | None:
    if gpus and len(_unknown(gpus, field)) == len(gpus):
        return Outcome.skip(f"{what}: not reported by these GPUs", *_unknown_note(gpus, field))
    return None


def healthy_reporting(ctx: Context, field: str, what: str) -> tuple[list[GpuFacts], Outcome | None]:
    """The GPUs a per-GPU check judges, and the skip to give at once where none reports
    `field` (None also where there is no GPU: the check then has nothing to say)."""
    gpus = ctx.healthy_handles
    return gpus, all_unknown(gpus, field, what)


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


@check("gpus.lost", "every GPU answers (none fallen off the bus or needing reset)")
def lost(ctx: Context) -> Outcome | None:
    if not ctx.gpus:
        unseen = _pci_not_in_nvml(ctx)
        if unseen is not None:
            return unseen
        return Outcome.skip(NO_GPUS) if ctx.has_gpu else None
    lost = [g for g in ctx.gpus if g.handle_error is not None]
    count = ctx.snapshot.nvml.device_count
    unread = count - len(ctx.gpus) if count is not None and count > len(ctx.gpus) else 0
    if not lost and (count is None or count == len(ctx.gpus)):
        unseen = _pci_not_in_nvml(ctx)
        return unseen or Outcome.passed(f"All {len(ctx.gpus)} GPU(s) answer")
    evidence = [f"GPU {g.index}: {g.handle_error.name}" for g in lost if g.handle_error is not None]
    if count is not None and count > len(ctx.gpus):
        evidence.append(f"the driver counts {count} GPUs but only {len(ctx.gpus)} were read")
    log = _nvrm_lines(ctx, [g.pci_bus_id or "" for g in lost])
    events = xid_events(ctx.compat, [line.removeprefix("kernel log: ") for line in log])
    evidence += log + [f"means: {meaning(ctx.compat, e.xid)}" for e in events]
    pci = len(ctx.snapshot.system.pci_gpus)
    refs = gpu_refs(lost)
    return Outcome.fail(
        f"{len(lost) + unread} GPU(s) do not answer: fallen off the bus or needing a reset",
        *evidence,
        *([f"{pci} NVIDIA GPU(s) on the PCI bus"] if pci else []),
        fix=Fix.of(
            *action_steps(ctx, events),
            reset_gpus(lost, "reset the GPU, with nothing running on it (or reboot)"),
            see_why(ctx.compat),
            Step.hardware("if it repeats, the GPU, its slot or its power is failing", refs),
        ),
        subjects=gpu_subjects(lost),
    )


def _nvrm_lines(ctx: Context, addresses: list[str], limit: int = 5) -> list[str]:
    """The kernel log's NVRM lines about these PCI addresses, or that say why a GPU failed
    to initialise (RmInitAdapter, GSP), newest last."""
    # "0000:01:00.0" in RmInitAdapter lines, "PCI:0000:68:00" in Xid lines: bus:device.
    keys = [_bus(a).rsplit(".", 1)[0] for a in addresses]
    lines = [
        line
        for line in ctx.snapshot.system.kernel_log_nvrm or []
        if any(k and k in line.lower() for k in keys) or "RmInitAdapter" in line or "GSP" in line
    ]
    return [f"kernel log: {line}" for line in lines[-limit:]]


def _bus(address: str | None) -> str:
    """NVML's "00000000:01:00.0" and sysfs's "0000:01:00.0" as one key: "01:00.0"."""
    return (address or "").lower().split(":", 1)[-1]


def _pci_not_in_nvml(ctx: Context) -> Outcome | None:
    """GPUs on the PCI bus, bound to nvidia, that the working driver does not list: the
    driver failed to initialise them (RmInitAdapter), so no CUDA program sees them."""
    sysf = ctx.snapshot.system
    if not ctx.nvml_ok or sysf.container or sysf.wsl or sysf.os != "Linux":
        return None  # a container's bus shows the host's GPUs, passed in or not
    # vfio-pci (a VM's) or nouveau GPUs are not the nvidia driver's to see.
    pci = [d for d in sysf.pci_gpus if d.driver in (None, "nvidia")]
    count = ctx.snapshot.nvml.device_count
    seen = count if count is not None else len(ctx.gpus)
    if len(pci) <= seen:
        return None
    listed = {_bus(g.pci_bus_id) for g in ctx.gpus}
    missing = [d for d in pci if _bus(d.address) not in listed] if listed else pci
    evidence = [
        f"{len(pci)} NVIDIA GPU(s) on the PCI bus, the driver "
        f"{ctx.snapshot.nvml.driver_version} sees {seen}",
        *[
            f"{d.name or 'device ' + d.device_id} at {d.address}: not initialised by the driver"
            for d in missing
        ],
    ]
    log = _nvrm_lines(ctx, [d.address for d in missing])
    evidence += log or [
        f"kernel log: {sysf.kernel_log_error or 'not read'}"
        if sysf.kernel_log_nvrm is None
        else "kernel log: no NVRM lines about these GPUs"
    ]
    driver = ctx.snapshot.nvml.driver_version or "installed"
    return Outcome.fail(
        f"{len(pci) - seen} GPU(s) on the PCI bus are not seen by the driver: no CUDA program "
        "can use them",
        *evidence,
        fix=Fix.of(
            Step.run(
                "likely causes, in order: (1) the driver failed to initialise the GPU: the "
                "kernel log says why",
                "sudo dmesg | grep -E 'NVRM|RmInitAdapter|Xid'",
            ),
            Step.manual(
                "'RmInitAdapter failed' with a GSP firmware error: try the other kernel module "
                "flavour, open or proprietary, of the same driver",
                Layer.DRIVER,
            ),
            Step.hardware(
                "(2) a large-BAR GPU needs Above 4G Decoding and Resizable BAR enabled in the "
                "BIOS (CSM off)"
            ),
            Step.hardware(
                "(3) insufficient power: every PCIe power connector plugged, the PSU sized for "
                "the GPU"
            ),
            install_driver(
                ctx,
                f"(4) a GPU newer than the driver {driver} knows: install a newer driver branch",
                None,
            ),
        ),
        subjects=Subjects(paths=[f"/sys/bus/pci/devices/{d.address}" for d in missing]),
    )


@check("gpus.ecc-errors", "no uncorrectable ECC memory errors")
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
    unknown = all_unknown(with_ecc, "ecc_uncorrected_volatile", "Uncorrectable ECC error counts")
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
            fix=Fix.of(
                Step.manual("drain the node", Layer.JOB),
                reset_gpus(bad, "reset the GPU (or reboot)"),
                Step.info("then re-check", command="gpucheck doctor --only gpus.ecc-errors"),
                Step.hardware(
                    "errors that return after a reset mean the GPU needs replacing (RMA)",
                    gpu_refs(bad),
                ),
            ),
            subjects=gpu_subjects(bad),
        )
    history = [g for g in with_ecc if g.ecc_uncorrected_aggregate]
    note = [f"{gpu_label(g)}: {g.ecc_uncorrected_aggregate} in its lifetime" for g in history]
    known, blind = known_count(with_ecc, "ecc_uncorrected_volatile")
    return Outcome.passed(
        f"No uncorrectable ECC errors on {known} GPU(s) since boot", *note, *blind
    )


@check("gpus.memory-remapping", "no pending or failed row remaps / page retirements")
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
            fix=Fix.of(
                Step.run("confirm with NVIDIA's field diagnostics", "dcgmi diag -r 3"),
                Step.hardware("take the GPU out of service and replace it (RMA)", gpu_refs(failed)),
            ),
            subjects=gpu_subjects(failed),
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
            fix=Fix.of(
                reset_gpus(pending, "reset the GPU when idle"),
                OR,
                Step.reboot("reboot the node"),
            ),
            subjects=gpu_subjects(pending),
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


@check("gpus.throttling", "no thermal, power-brake or hardware clock slowdown")
def throttling(ctx: Context) -> Outcome | None:
    gpus, unknown = healthy_reporting(ctx, "clock_event_reasons", "Clock slowdown reasons")
    if not gpus or unknown:
        return unknown
    slowed = _slowed_down(
        ctx,
        _hardware_slowdown,
        Status.FAIL,
        "are slowed down by hardware protection",
        look=("see the detail", "PERFORMANCE,TEMPERATURE,POWER"),
        care="check cooling (fans, airflow, inlet temperature) and power delivery (PSU "
        "cables, power-brake signal)",
    ) or _slowed_down(
        ctx,
        _thermal_slowdown,
        Status.WARN,
        "run hot enough to lower their clocks",
        look=("check under load", "TEMPERATURE,PERFORMANCE"),
        care="improve cooling (airflow, fan curve, inlet temperature)",
        care_first=True,
    )
    if slowed is not None:
        return slowed
    known, blind = known_count(gpus, "clock_event_reasons")
    return Outcome.passed(f"No hardware or thermal slowdown on {known} GPU(s)", *blind)


def _hardware_slowdown(g: GpuFacts) -> str | None:
    reasons = [HW_SLOWDOWN[r] for r in (g.clock_event_reasons or []) if r in HW_SLOWDOWN]
    return ", ".join(reasons) + _temp(g) if reasons else None


def _thermal_slowdown(g: GpuFacts) -> str | None:
    reasons = [SW_THERMAL[r] for r in (g.clock_event_reasons or []) if r in SW_THERMAL]
    hot = (
        g.temperature_c is not None
        and g.temperature_slowdown_c is not None
        and g.temperature_c >= g.temperature_slowdown_c - 5
    )
    if reasons or hot:
        return (", ".join(reasons) or "close to its slowdown temperature") + _temp(g)
    return None


def _slowed_down(
    ctx: Context,
    reasons: Callable[[GpuFacts], str | None],
    status: Status,
    title: str,
    look: tuple[str, str],
    care: str,
    care_first: bool = False,
) -> Outcome | None:
    """The GPUs `reasons` finds slowed down (None: none is), with the two steps every
    slowdown gets: the cooling or power work (`care`), and nvidia-smi's detail (`look`: the
    step's text and its -d sections)."""
    slow, evidence = _per_gpu(ctx, reasons)
    if not slow:
        return None
    detail = Step.run(
        look[0], f"nvidia-smi -i {indices(slow)} -q -d {look[1]}", gpus=gpu_refs(slow)
    )
    hardware = Step.hardware(care, gpu_refs(slow))
    return Outcome.make(
        status,
        f"{len(slow)} GPU(s) {title}",
        tuple(evidence),
        Fix.of(*((hardware, detail) if care_first else (detail, hardware))),
        gpu_subjects(slow),
    )


def _temp(g: GpuFacts) -> str:
    if g.temperature_c is None:
        return ""
    limit = f", slowdown at {g.temperature_slowdown_c} °C" if g.temperature_slowdown_c else ""
    return f" ({g.temperature_c} °C{limit})"


@check("gpus.pcie-link", "each GPU's PCIe link runs at its full width")
def pcie_link(ctx: Context) -> Outcome | None:
    gpus, unknown = healthy_reporting(ctx, "pcie_width_current", "PCIe link")
    if not gpus or unknown:
        return unknown
    narrow_bad: list[GpuFacts] = []
    narrow_warn: list[GpuFacts] = []
    slow: list[GpuFacts] = []  # generation low under load
    unsure: list[GpuFacts] = []  # generation low, load unknown: idle or a bad link
    lines: dict[int, list[str]] = {}
    idle_note: list[str] = []
    for g in gpus:
        cur_w, max_w = g.pcie_width_current, g.pcie_width_max
        if cur_w and max_w and cur_w < max_w:
            lines.setdefault(g.index, []).append(f"{gpu_label(g)}: x{cur_w} of x{max_w}")
            (narrow_bad if cur_w * 4 <= max_w else narrow_warn).append(g)
        cur_g, max_g = g.pcie_gen_current, g.pcie_gen_max
        if cur_g and max_g and cur_g < max_g:
            load = f"{g.utilization_gpu}%" if g.utilization_gpu is not None else "unknown"
            line = f"{gpu_label(g)}: gen {cur_g} of {max_g} at {load} utilisation"
            if g.utilization_gpu is None:
                unsure.append(g)
                lines.setdefault(g.index, []).append(line + " (idle, or a link that cannot train)")
            elif g.utilization_gpu >= BUSY_UTILIZATION:
                slow.append(g)
                lines.setdefault(g.index, []).append(line + " (under load)")
            else:
                idle_note.append(line + " (idle: normal power saving)")
    bad = narrow_bad + narrow_warn + slow + unsure
    reseat = [
        Step.hardware(
            "reseat the GPU or its riser in a full-width slot, check the slot's lane sharing in "
            "the board manual (M.2 and second x16 slots often split lanes) and BIOS PCIe "
            "settings; in a VM, the hypervisor's passthrough sets the width",
            gpu_refs(bad),
        ),
        Step.run(
            "measure the host<->GPU transfers the link allows under load",
            "gpucheck bench --quick",
        ),
    ]
    fix = Fix.of(*reseat)
    evidence = [line for g in gpus for line in lines.get(g.index, [])]
    if narrow_bad:
        return Outcome.fail(
            "PCIe link trained far below its width: host<->GPU transfers are at a quarter or less",
            *evidence,
            fix=fix,
            subjects=gpu_subjects(narrow_bad),
        )
    if narrow_warn or slow:
        return Outcome.warn(
            "PCIe link below its maximum",
            *evidence,
            *idle_note,
            fix=fix,
            subjects=gpu_subjects(bad),
        )
    if unsure:
        # A link idles at gen 1 to save power and retrains under load; one that stays low
        # under load is broken. With the load unknown, only a re-check under load tells.
        return Outcome.warn(
            "PCIe link generation below its maximum, with the load unknown",
            *evidence,
            *idle_note,
            fix=Fix.of(
                Step.run(
                    "re-check while the GPU is under load (a training job, or gpucheck doctor "
                    "during one); a link that idles low retrains to its maximum under load",
                    f"nvidia-smi -i {indices(unsure)} "
                    "--query-gpu=pcie.link.gen.current,pcie.link.gen.max,utilization.gpu "
                    "--format=csv",
                    gpus=gpu_refs(unsure),
                ),
                Step.info("one that stays low is the slot, riser or BIOS PCIe setting"),
                *reseat,
            ),
            subjects=gpu_subjects(unsure),
        )
    known, blind = known_count(gpus, "pcie_width_current")
    return Outcome.passed(f"PCIe links at full width on {known} GPU(s)", *idle_note, *blind)
