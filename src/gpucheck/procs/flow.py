"""`gpucheck procs`' flow, for the command line and Python alike: read who holds the GPUs (NVML
and /proc merged), narrowed to one GPU where asked; decide which holders --kill/--kill-mine may
end; end them and read the holders again. The command line asks before ending and renders.
Bad input raises UserError (exit 2)."""

from __future__ import annotations

import os

from msgspec import Struct

from gpucheck.inputs import UserError
from gpucheck.model.holders import Holders, View, ambiguous_gpu, merge, only_gpu, select_gpu
from gpucheck.model.snapshot import Snapshot
from gpucheck.probes.run import ProbeOptions, collect_holders
from gpucheck.procs.ending import Caller, Decision, Ended, Ender, Request, plan
from gpucheck.procs.render import MemoryChange, ProcsDocument, actions, document
from gpucheck.procs.view import read_view


class Looked(Struct):
    """The holders as read, and what they were read with."""

    options: ProbeOptions
    snapshot: Snapshot
    view: View
    holders: Holders
    index: int | None = None  # --gpu's NVML index, where it named one
    # --gpu matched none of the GPUs NVML listed, and NVML could not list every GPU: why.
    unmatched: str | None = None

    @property
    def in_container(self) -> bool:
        return self.snapshot.system.container is not None


def look(gpu: str | None, timeout: float) -> Looked:
    """Who holds the GPUs (only `gpu`, an index or UUID prefix, where given)."""
    options = ProbeOptions(timeout=timeout)
    snap = collect_holders(options)
    in_container = snap.system.container is not None
    pids = [p.pid for p in snap.processes.processes]
    view = read_view(options.root, os.environ, in_container, pids)
    holders = merge(snap, view)
    if gpu is None:
        return Looked(options, snap, view, holders)
    chosen = select_gpu(gpu, snap.nvml.gpus)
    uuids = {g.index: g.uuid or "UUID unknown" for g in snap.nvml.gpus}
    if len(chosen) > 1:
        raise UserError(ambiguous_gpu(gpu, [(i, uuids[i]) for i in chosen]))
    if not chosen and holders.unknown:  # NVML listed no GPU it could be: not "no such GPU"
        # Only the device files' holders no GPU was matched to: any of them may be its.
        narrowed = Holders(
            [h for h in holders.holders if not h.uses], [], holders.notes, holders.unknown
        )
        return Looked(options, snap, view, narrowed, unmatched=holders.unknown[0])
    if not chosen:
        known = ", ".join(f"{i} ({uuid})" for i, uuid in uuids.items()) or "none answer"
        raise UserError(f"--gpu {gpu}: no such GPU (GPUs: {known})")
    index = chosen[0]
    return Looked(options, snap, view, only_gpu(holders, index), index)


def listing(looked: Looked) -> ProcsDocument:
    return document(looked.holders, looked.snapshot.created_at, looked.in_container)


def endings(
    looked: Looked, kill: tuple[int, ...], kill_mine: bool, force: bool
) -> tuple[list[Decision], list[str]]:
    """Which holders may be ended and which not, each with why; and, for --kill-mine, why some
    compute contexts could not be asked about (NVML could not list them)."""
    request = Request(kill, kill_mine, force, looked.index)
    decisions = plan(looked.holders, request, Caller.this())
    return decisions, looked.holders.unasked() if kill_mine else []


def end(looked: Looked, decisions: list[Decision], grace: float) -> ProcsDocument:
    """End the holders `decisions` allow (SIGTERM, SIGKILL after `grace` seconds); the holders
    read again, with what each ending did and the memory it freed."""
    to_end = [d for d in decisions if d.end]
    ender = Ender(looked.options.root, grace)
    ended: dict[int, Ended] = {d.pid: ender.end(d) for d in to_end}
    before = looked.holders
    after = merge(collect_holders(looked.options), looked.view) if to_end else before
    if looked.index is not None:
        after = only_gpu(after, looked.index)
    memory = [
        MemoryChange(a.index, a.memory_used, b.memory_used)
        for a in before.gpus
        for b in after.gpus
        if a.index == b.index
    ]
    created = looked.snapshot.created_at
    return document(after, created, looked.in_container, actions(decisions, ended), memory)
