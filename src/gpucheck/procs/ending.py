"""Ending GPU holders safely: which of the asked-for processes may be ended (a pure plan),
and ending exactly those (SIGTERM, a grace period, SIGKILL only if still alive), each signal
to the process confirmed or to none (signals.py).

The plan never widens what was asked: only the PIDs named, or with --kill-mine only the
invoking user's own processes (SUDO_UID's under sudo) in gpucheck's own container with a
compute context on a GPU (of --gpu, if given). PIDs are as signals from here reach them
(Holder.local_pid). It refuses PID 1, gpucheck itself and its parent shell, processes that
cannot be acted on from here (NVML's host PIDs in a container: end them where they run),
zombies (already dead: their parent must reap them), non-holders, and another user's process
unless the caller is root and said --force.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from gpucheck.model.holders import Holder, Holders
from gpucheck.probes.processes import read_process
from gpucheck.procs.signals import GONE, Target, open_target
from gpucheck.procs.view import invoking_uid
from gpucheck.report.text import printable

KILL_WAIT = 2.0  # seconds to wait for the exit after SIGKILL


@dataclass(frozen=True)
class Caller:
    uid: int  # whose processes are "mine": the invoking user's (SUDO_UID under sudo)
    pid: int  # gpucheck itself
    ppid: int  # the shell (or script) that started it
    privileged: bool = False  # running as root: may end another user's, with --force

    @property
    def is_root(self) -> bool:
        return self.privileged

    @classmethod
    def this(cls) -> Caller:
        real = os.getuid()
        return cls(invoking_uid(real, os.environ), os.getpid(), os.getppid(), real == 0)


@dataclass(frozen=True)
class Request:
    pids: tuple[int, ...] = ()  # --kill PID...
    mine: bool = False  # --kill-mine
    force: bool = False  # --force: another user's process, as root only
    gpu: int | None = None  # --gpu: only holders of this GPU


@dataclass
class Decision:
    pid: int
    end: bool
    reason: str  # why not, or what it is
    holder: Holder | None = None


def plan(holders: Holders, request: Request, caller: Caller) -> list[Decision]:
    """One decision per asked-for PID, in the order asked; --kill-mine's after."""
    by_pid = {h.local_pid: h for h in holders.holders if h.local_pid is not None}
    asked = list(dict.fromkeys(request.pids))
    if request.mine:
        # Compute contexts only: a desktop's graphics context or a daemon that merely has the
        # device open (Xorg, nvidia-persistenced, a monitoring agent) ends only when named.
        # Another container's are listed (refused): they end only when named.
        asked += [
            h.local_pid
            for h in holders.holders
            if h.local_pid is not None
            and h.mine
            and h.local_pid not in asked
            and any(
                u.kind == "compute" and (request.gpu is None or u.gpu == request.gpu)
                for u in h.uses
            )
            and h.local_pid not in (caller.pid, caller.ppid)
        ]
    return [_decide(pid, by_pid.get(pid), holders, request, caller) for pid in asked]


def _decide(
    pid: int, holder: Holder | None, holders: Holders, request: Request, caller: Caller
) -> Decision:
    if pid <= 1:
        return Decision(pid, False, "PID 1 (init) and kernel PIDs are never ended")
    if pid == caller.pid:
        return Decision(pid, False, "that is gpucheck itself")
    if pid == caller.ppid:
        return Decision(pid, False, "that is the shell or script that started gpucheck")
    if holder is None:
        there = next((h for h in holders.holders if h.pid == pid and h.visible), None)
        if there is not None and there.local_pid is not None:
            return Decision(
                pid, False, f"that is its PID outside; here it is PID {there.local_pid}: name that"
            )
        if there is not None:
            return Decision(
                pid,
                False,
                "it is in another PID namespace than gpucheck's: it cannot be acted on from "
                "here; end it where it runs",
            )
        outside = any(pid in a.outside_pids for a in holders.gpus)
        if outside:
            return Decision(
                pid,
                False,
                "NVML lists it, but it is not in this PID namespace (a host PID): end it "
                "where it runs",
            )
        return Decision(pid, False, "it holds no GPU here (see `gpucheck procs`)")
    if request.gpu is not None and request.gpu not in holder.gpus:
        return Decision(pid, False, f"it does not hold GPU {request.gpu}", holder)
    if holder.elsewhere and pid not in request.pids:
        where = holder.process.container_id if holder.process else None
        return Decision(
            pid,
            False,
            f"it is in another container ({(where or '?')[:12]}) than gpucheck: "
            "--kill-mine ends only this container's; name it with --kill to end it",
            holder,
        )
    proc = holder.process
    if holder.state == "zombie":
        parent = f" {proc.ppid}" if proc and proc.ppid else ""
        return Decision(
            pid,
            False,
            f"it is a zombie (already dead): its parent{parent} must reap it; end the parent "
            "if it never will",
            holder,
        )
    if proc is None or proc.uid is None:
        return Decision(pid, False, "its owner cannot be read", holder)
    if proc.uid != caller.uid:
        owner = proc.user or f"uid {proc.uid}"
        if not caller.is_root:
            return Decision(pid, False, f"it belongs to {owner}, not to you", holder)
        if not request.force:
            return Decision(
                pid, False, f"it belongs to {owner}: add --force to end another user's", holder
            )
    return Decision(pid, True, _describe(holder), holder)


def _describe(holder: Holder) -> str:
    proc = holder.process
    who = proc.user if proc and proc.user else "?"
    command = " ".join(proc.cmdline) if proc and proc.cmdline else holder.name or "?"
    gpus = ",".join(map(str, holder.gpus)) or "driver only"
    return f"{printable(who)}: {shorten(printable(command), 60)} (GPU {gpus})"


def shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# --- ending ---------------------------------------------------------------------------------


@dataclass
class Ended:
    pid: int
    outcome: str  # terminated | killed | gone | survived | changed | denied
    detail: str = ""
    seconds: float = 0.0
    guard: str | None = None  # how signals were kept to this process: pidfd | start time


@dataclass
class Ender:
    """Sends the signals; `root` is the /proc the plan was read from (its identity check).
    Every signal goes to the process confirmed or to none (signals.py): through a pidfd taken
    at confirmation, or, where there is none, after its start time is read again."""

    root: Path
    grace: float
    use_pidfd: bool = True

    def end(self, decision: Decision) -> Ended:
        pid = decision.pid
        holder = decision.holder
        if not decision.end or holder is None:
            return Ended(pid, "denied", decision.reason)
        start = time.monotonic()
        then = holder.process
        proc = self.root / "proc"

        def same() -> bool:
            # The PID may have been reused since the plan read it: the same process only.
            now = read_process(proc, holder.pid)
            return (
                then is not None
                and now is not None
                and (now.start_time, now.uid) == (then.start_time, then.uid)
            )

        target, why = open_target(pid, same, self.use_pidfd, proc, holder.pid)
        if target is None:
            return Ended(pid, "gone" if why == GONE else "changed", why)
        try:
            return self._end(pid, target, start)
        finally:
            target.close()

    def _end(self, pid: int, target: Target, start: float) -> Ended:
        guard = target.guard

        def took() -> float:
            return time.monotonic() - start

        try:
            if not target.send(signal.SIGTERM):
                return Ended(pid, "gone", GONE, took(), guard)
        except PermissionError as exc:
            return Ended(pid, "denied", f"SIGTERM refused: {exc.strerror}", guard=guard)
        if target.wait(self.grace):
            return Ended(pid, "terminated", "ended on SIGTERM", took(), guard)
        try:
            if not target.send(signal.SIGKILL):
                return Ended(pid, "terminated", "ended on SIGTERM", took(), guard)
        except PermissionError as exc:
            return Ended(pid, "survived", f"SIGKILL refused: {exc.strerror}", guard=guard)
        # SIGKILL is not deferred, but the exit may take a moment.
        if target.wait(KILL_WAIT):
            return Ended(
                pid,
                "killed",
                f"still alive {self.grace:g} s after SIGTERM: ended with SIGKILL",
                took(),
                guard,
            )
        return Ended(
            pid,
            "survived",
            "still alive after SIGKILL: it is stuck in the kernel or driver (state D); "
            "only a driver reload or a reboot will free it",
            guard=guard,
        )
