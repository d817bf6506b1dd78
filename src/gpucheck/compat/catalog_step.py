"""The catalog's own fix step for a matched message, made true for what is known: a command
never holds a placeholder (`<GPU>` would be a shell redirect), and a command for one kind of
machine (WSL2's library folder) is given only where the facts say the machine is one."""

from __future__ import annotations

import re

from msgspec.structs import replace

from gpucheck.compat.matching import Match
from gpucheck.compat.xids import fill_gpu, line_addresses, nvidia_smi_bus_id
from gpucheck.model.fix import Step, StepKind
from gpucheck.model.snapshot import Snapshot

# A catalog command's blank to fill ("<GPU>", "<version>"): never printed as runnable.
PLACEHOLDER = re.compile(r"<[A-Za-z][A-Za-z0-9_ -]*>")
_NO_GPU = "no GPU is named (give -i the GPU that logged it)"
GET_FACTS = "gpucheck snapshot -o snapshot.json, then gpucheck explain FILE --from snapshot.json"


def catalog_step(match: Match, snapshot: Snapshot | None) -> Step:
    """The message's fix step, its GPU filled from the matched lines (or the snapshot), made a
    person's step where a blank stays, and a WSL2-only command decided by the snapshot."""
    message = match.message
    step = message.fix_step()
    if step.command is None:
        return step
    if message.decide == "wsl":
        return _wsl_step(step, snapshot)
    command = fill_gpu(step.command, _gpu_targets(match, snapshot))
    blank = PLACEHOLDER.search(command) if command is not None else None
    if command is None or blank is not None:
        why = f"fill in {blank.group()} yourself" if blank else _NO_GPU
        return replace(
            step, kind=StepKind.MANUAL, command=None, tool=None, text=f"{step.text} ({why})"
        )
    return replace(step, command=command)


def _gpu_targets(match: Match, snapshot: Snapshot | None) -> list[str]:
    """nvidia-smi's -i for the GPUs the matched lines name: the snapshot's index where it
    lists the GPU, else the line's bus id."""
    listed = {}
    if snapshot is not None:
        for gpu in snapshot.nvml.gpus:
            bus = (gpu.pci_bus_id or "").lower().split(":", 1)[-1].rsplit(".", 1)[0]
            listed[bus] = str(gpu.index)
    found = []
    for address in line_addresses(hit.text for hit in match.hits):
        target = listed.get(address.lower().split(":", 1)[-1]) or nvidia_smi_bus_id(address)
        if target:
            found.append(target)
    return list(dict.fromkeys(found))


def _wsl_step(step: Step, snapshot: Snapshot | None) -> Step:
    """The catalog's WSL2 command where the snapshot is of WSL2; off it, the other way (the
    driver's user-space libraries); with no facts, the command for WSL2 only, saying so."""
    if snapshot is None:
        return replace(
            step, text=f"On WSL2 only (whether the machine is WSL2 decides: {GET_FACTS})"
        )
    if snapshot.system.wsl:
        return replace(step, text="This machine is WSL2: put /usr/lib/wsl/lib on the loader path")
    return replace(
        step,
        kind=StepKind.MANUAL,
        command=None,
        tool=None,
        text="Install the driver's user-space libraries (libcuda.so) for the running driver, "
        "or put their folder on the loader path (this machine is not WSL2: /usr/lib/wsl/lib "
        "is not it)",
    )
