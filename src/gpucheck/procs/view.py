"""Where gpucheck stands, as /proc tells it: whose processes are "mine", which container it
runs in, and how this /proc's PIDs relate to NVML's (the host's) and to the PIDs its signals
reach (model/holders.py's View). Read once per `gpucheck procs`, from the same root as the
holders (GPUCHECK_ROOT in the tests).

- "Mine" is the invoking user's: SUDO_UID under sudo (as root, `--kill-mine` would otherwise
  mean every root job on the machine), and only in gpucheck's own container (its cgroup).
- This /proc is the host's (the PID namespace NVML reports in) where it shows kernel threads:
  they live in the initial PID namespace only (PID 2, kthreadd, with PF_KTHREAD set).
- gpucheck's own NSpid says how many PID namespaces lie between this /proc's and its own: a
  host /proc mounted in a container lists host PIDs, and a process's NSpid entry at that depth
  is the PID signals from here reach, when it shares gpucheck's PID namespace.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from gpucheck.model.holders import View
from gpucheck.probes.processes import (
    STAT_FLAGS,
    nspid,
    parse_cgroup,
    read_stat,
    stat_number,
    status_fields,
)

PF_KTHREAD = 0x00200000  # include/linux/sched.h: a kernel thread


def invoking_uid(real_uid: int, env: Mapping[str, str]) -> int:
    """The user who asked: sudo's SUDO_UID when running as root, else the real uid. Only root
    is trusted with it: for anyone else it would name nothing they may end anyway."""
    sudo = env.get("SUDO_UID", "")
    return int(sudo) if real_uid == 0 and sudo.isdigit() else real_uid


def _read(path: Path) -> str | None:
    try:
        return path.read_text("utf-8", "replace")
    except OSError:
        return None


def _link(path: Path) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def kernel_threads_visible(proc: Path) -> bool | None:
    """Whether this /proc is the initial PID namespace's (None: this /proc cannot be read).
    There, PID 2 is always kthreadd; a namespace without a PID 2 is another one."""
    stat = read_stat(proc / "2")
    if stat is None:
        return False if (proc / "1").is_dir() else None
    flags = stat_number(stat, STAT_FLAGS)
    if flags is None:
        return None
    return bool(flags & PF_KTHREAD)


def read_view(
    root: Path, env: Mapping[str, str], in_container: bool, pids: Iterable[int] = ()
) -> View:
    """gpucheck's View; `pids` are the /proc PIDs whose namespace matters (the holders)."""
    proc = root / "proc"
    own = proc / "self"
    cgroup = _read(own / "cgroup")
    container_id = parse_cgroup(cgroup)[1] if cgroup is not None else None
    depth = max(0, len(nspid(status_fields(_read(own / "status") or ""))) - 1)
    host = kernel_threads_visible(proc)
    same: list[int] = []
    if depth > 0:
        mine = _link(own / "ns" / "pid")
        same = [p for p in pids if mine is not None and _link(proc / str(p) / "ns" / "pid") == mine]
    return View(
        uid=invoking_uid(os.getuid(), env),
        container_id=container_id,
        # Unreadable: a container is taken to have its own /proc, a host to be one.
        proc_is_host=host if host is not None else not in_container,
        depth=depth,
        same_namespace=same,
    )
