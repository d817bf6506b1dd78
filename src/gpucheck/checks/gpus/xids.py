"""The kernel log's Xid lines since boot, judged with NVIDIA's Xid catalog (compat/xids.toml,
read through the one matcher explain uses): per Xid, NVIDIA's description and the action its
catalog gives. An Xid that asks for a reset or a reboot is a warning, never a failure: the
kernel log keeps the line after the GPU was reset, and a GPU that no longer answers is
gpus.lost's failure. An application's own fault (Xid 13, 31, 43) and what the catalog says to
ignore are info: the GPU needs nothing."""

from __future__ import annotations

import re

from msgspec import Struct

from gpucheck.checks.context import Context
from gpucheck.checks.registry import check
from gpucheck.compat import Compat
from gpucheck.compat.xids import XID_LINE, Xid, fill_gpu, nvidia_smi_bus_id
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import Fix, Step, StepKind
from gpucheck.model.layers import Layer

_ADDRESS = re.compile(XID_LINE)
_SHOWN = 3  # quoted lines per Xid


class XidEvent(Struct):
    """One Xid code the kernel log holds: its catalog row, its lines, the GPUs they name."""

    xid: Xid
    lines: list[str]
    addresses: list[str]  # "0000:2b:00", as the lines print them


def xid_events(compat: Compat, lines: list[str]) -> list[XidEvent]:
    """The Xid lines among `lines` (kernel log lines), grouped by code, in code order."""
    if not any("Xid" in line for line in lines):
        return []  # the usual kernel log: the matcher (and its catalogs) are not loaded
    from gpucheck.compat.matching import Lines, matcher

    events: dict[int, XidEvent] = {}
    text = "\n".join(lines)
    for match in matcher(compat).matches(Lines(text)):
        if not match.message.id.startswith("xid."):
            continue
        code = int(match.message.id.removeprefix("xid."))
        xid = compat.xids.get(code) or _unknown(code)
        found = [hit.text for hit in match.hits]
        addresses = [m.group(1).removeprefix("PCI:") for m in map(_ADDRESS.search, found) if m]
        events[code] = XidEvent(xid, found, list(dict.fromkeys(addresses)))
    return [events[code] for code in sorted(events)]


def _unknown(code: int) -> Xid:
    return Xid(
        code=code,
        mnemonic="",
        description="not in NVIDIA's catalog",
        applies_to=(),
        immediate="",
        investigatory="",
        note=None,
        title=None,
        cause=None,
        layer=None,
        severity="warn",
        also=None,
        examples=(),
        examples_from=None,
        source="",
    )


def needs_action(compat: Compat, xid: Xid) -> bool:
    """Whether the catalog asks something of the machine (not only of the application)."""
    bucket = compat.xids.bucket(xid)
    layer = xid.layer or (bucket.layer if bucket else "gpus")
    return compat.xids.severity(xid) != "info" and layer != Layer.FRAMEWORKS.value


def meaning(compat: Compat, xid: Xid) -> str:
    """'Xid 79 (GPU has fallen off the bus): NVIDIA's action RESTART_BM'."""
    action = f"NVIDIA's action {xid.immediate}" if xid.immediate else "no action in the catalog"
    return f"Xid {xid.code} ({xid.description}): {action}"


def see_why(compat: Compat) -> Step:
    """Where a lost GPU's reason is: its Xid lines (79, named from the catalog)."""
    fell_off = compat.xids.get(79)
    named = f" (Xid 79: {fell_off.description})" if fell_off else ""
    return Step.run(f"see why{named}", "sudo dmesg | grep -i xid")


def action_steps(ctx: Context, events: list[XidEvent]) -> list[Step]:
    """One step per distinct action the catalog gives for these Xids, the GPU filled in where
    the lines name one the driver lists."""
    steps: dict[str, Step] = {}
    xids = ctx.compat.xids
    for event in events:
        bucket = xids.bucket(event.xid)
        if bucket is None or bucket.name in steps or not needs_action(ctx.compat, event.xid):
            continue
        sentence = f"Xid {event.xid.code}: {bucket.action[0].lower()}{bucket.action[1:]}"
        kind = StepKind(bucket.step)
        command = bucket.command and fill_gpu(bucket.command, _targets(ctx, event.addresses))
        if kind is StepKind.COMMAND and command:
            steps[bucket.name] = Step.run(sentence, command, layer=Layer.GPUS)
        elif kind is StepKind.COMMAND and bucket.command:  # no GPU named: never one for all
            steps[bucket.name] = Step.manual(f"{sentence} ({_NO_GPU})", Layer.GPUS)
        elif kind is StepKind.REBOOT:
            steps[bucket.name] = Step.reboot(sentence)
        elif kind is StepKind.HARDWARE:
            steps[bucket.name] = Step.hardware(sentence)
        else:
            steps[bucket.name] = Step.manual(sentence, Layer.GPUS)
    return list(steps.values())


# nvidia-smi -r without -i resets every GPU: a line naming no GPU leaves the choice to a person.
_NO_GPU = "the kernel log lines name no GPU: give nvidia-smi -i the one that logged it"


def _targets(ctx: Context, addresses: list[str]) -> list[str]:
    """nvidia-smi's -i for each GPU at these addresses ("0000:2b:00" is domain:bus:device):
    the driver's index where it lists the GPU, else the line's own bus id."""
    listed = {
        (g.pci_bus_id or "").lower().split(":", 1)[-1].rsplit(".", 1)[0]: str(g.index)
        for g in ctx.gpus
    }
    found = []
    for address in addresses:
        index = listed.get(address.lower().split(":", 1)[-1])
        target = index or nvidia_smi_bus_id(address)
        if target:
            found.append(target)
    return list(dict.fromkeys(found))


@check("gpus.xid-events", "the kernel log holds no Xid since boot that needs an action")
def xid_check(ctx: Context) -> Outcome | None:
    system = ctx.snapshot.system
    if not ctx.has_gpu:
        return None
    if system.kernel_log_nvrm is None:
        return Outcome.skip(f"kernel log not read: {system.kernel_log_error or 'unknown why'}")
    events = xid_events(ctx.compat, system.kernel_log_nvrm)
    if not events:
        return Outcome.passed(
            "No Xid in the kernel log since boot",
            f"{len(system.kernel_log_nvrm)} NVIDIA driver (NVRM) lines read",
        )
    evidence = []
    for event in events:
        where = f" on {', '.join(event.addresses)}" if event.addresses else ""
        times = f", {len(event.lines)} lines" if len(event.lines) > 1 else ""
        evidence.append(f"{meaning(ctx.compat, event.xid)}{where}{times}")
        evidence += [f"  kernel log: {line}" for line in event.lines[-_SHOWN:]]
    evidence.append(f"source: {ctx.compat.xids.source}")
    acting = [e for e in events if needs_action(ctx.compat, e.xid)]
    codes = ", ".join(str(e.xid.code) for e in (acting or events))
    if not acting:
        return Outcome.info(
            f"Xid {codes} in the kernel log since boot: an application's fault or nothing to "
            "act on, by NVIDIA's catalog",
            *evidence,
        )
    fix = Fix.of(
        *action_steps(ctx, acting),
        Step.info("if the action was taken since, the line stays until the next boot"),
    )
    return Outcome.warn(
        f"Xid {codes} in the kernel log since boot: NVIDIA's catalog asks for an action",
        *evidence,
        fix=fix,
    )
