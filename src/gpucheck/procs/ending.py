"""Ending GPU holders safely: which of the asked-for processes may be ended (a pure plan),
and ending exactly those (SIGTERM, a grace period, SIGKILL only if still alive).

The plan never widens what was asked: only the PIDs named, or with --kill-mine only the
caller's own processes with a compute context on a GPU (of --gpu, if given). It refuses
PID 1, gpucheck itself and its parent shell, processes this /proc does not show (NVML's host
PIDs: end them where they run), zombies (already dead: their parent must reap them),
non-holders, and another user's
process unless the caller is root and said --force.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpucheck.model.holders import Holder, Holders
from gpucheck.probes.processes import read_process
from gpucheck.report.text import printable


@dataclass(frozen=True)
class Caller:
    uid: int
    pid: int  # gpucheck itself
    ppid: int  # the shell (or script) that started it

    @property
    def is_root(self) -> bool:
        return self.uid == 0

    @classmethod
    def this(cls) -> Caller:
        return cls(os.getuid(), os.getpid(), os.getppid())


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
    by_pid = {h.pid: h for h in holders.holders if h.visible}
    asked = list(dict.fromkeys(request.pids))
    if request.mine:
        # Compute contexts only: a desktop's graphics context or a daemon that merely has the
        # device open (Xorg, nvidia-persistenced, a monitoring agent) ends only when named.
        asked += [
            h.pid
            for h in holders.holders
            if h.visible
            and h.mine
            and h.pid not in asked
            and any(
                u.kind == "compute" and (request.gpu is None or u.gpu == request.gpu)
                for u in h.uses
            )
            and h.pid not in (caller.pid, caller.ppid)
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


def alive(pid: int) -> bool:
    """Whether the real process still runs. Signals reach real processes, so this reads the
    real /proc, not GPUCHECK_ROOT's: a zombie has ended (its memory is the driver's to free)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


@dataclass
class Ender:
    """Sends the signals; `root` is the /proc the plan was read from (PID-reuse guard)."""

    root: Path
    grace: float
    poll: float = 0.05
    clock: Callable[[], float] = time.monotonic
    log: list[str] = field(default_factory=list)

    def end(self, decision: Decision) -> Ended:
        pid = decision.pid
        holder = decision.holder
        if not decision.end or holder is None:
            return Ended(pid, "denied", decision.reason)
        start = self.clock()
        # The PID may have been reused since it was read: end only the same process.
        now = read_process(self.root / "proc", pid)
        then = holder.process
        if now is None or not alive(pid):
            return Ended(pid, "gone", "it had already exited")
        if then is None or (now.start_time, now.uid) != (then.start_time, then.uid):
            return Ended(pid, "changed", "the PID now belongs to another process: not ended")
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return Ended(pid, "gone", "it had already exited")
        except PermissionError as exc:
            return Ended(pid, "denied", f"SIGTERM refused: {exc.strerror}")
        deadline = start + self.grace
        while self.clock() < deadline:
            if not alive(pid):
                return Ended(pid, "terminated", "ended on SIGTERM", self.clock() - start)
            time.sleep(self.poll)
        if not alive(pid):
            return Ended(pid, "terminated", "ended on SIGTERM", self.clock() - start)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return Ended(pid, "terminated", "ended on SIGTERM", self.clock() - start)
        except PermissionError as exc:
            return Ended(pid, "survived", f"SIGKILL refused: {exc.strerror}")
        for _ in range(40):  # SIGKILL is not deferred, but the exit may take a moment
            if not alive(pid):
                return Ended(
                    pid,
                    "killed",
                    f"still alive {self.grace:g} s after SIGTERM: ended with SIGKILL",
                    self.clock() - start,
                )
            time.sleep(self.poll)
        return Ended(
            pid,
            "survived",
            "still alive after SIGKILL: it is stuck in the kernel or driver (state D); "
            "only a driver reload or a reboot will free it",
        )
