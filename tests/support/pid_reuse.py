"""Real PID reuse, forced: run as PID 1 of a new PID namespace (`unshare --user --map-root-user
--pid --fork --mount-proc`), where writing /proc/sys/kernel/ns_last_pid decides the next PID
(as CRIU restores processes). A process the ender confirmed exits mid-way, and a newcomer is
started under its very PID: the newcomer must receive no signal.

    python pid_reuse.py MODE LIBS_JSON FOLDER

MODE: `cli` runs `gpucheck procs --kill A --grace 4` on a simulated machine listing A as a GPU
holder; `pidfd` and `start-time` drive the Ender itself with that guard. In each, A ignores
SIGTERM, the script kills and reaps A once A has received SIGTERM (an exit during --grace),
and B takes A's PID. `send-pidfd` and `send-start-time` confirm A, then A exits and B takes
its PID before the first signal. Prints one JSON object: what happened to B, and what the
ender said.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

# tests/, where the simulator package (sim) lives: this file runs as a script.
TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

# A sleeper that says each SIGTERM it receives on stdout (and lives on): any SIGTERM to the
# newcomer is seen, and a SIGKILL shows as its death.
SLEEPER = (
    "import signal, sys, time\n"
    "def said(n, f):\n"
    "    print('TERM', flush=True)\n"
    "signal.signal(signal.SIGTERM, said)\n"
    "print('ready', flush=True)\n"
    "time.sleep(120)\n"
)


def sleeper() -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def line(stream: IO[str], seconds: float) -> str | None:
    ready, _, _ = select.select([stream], [], [], seconds)
    return stream.readline() if ready else None


def sleeper_at(pid: int) -> subprocess.Popen[str]:
    """A sleeper whose PID is `pid` (free again): the kernel gives ns_last_pid + 1."""
    for _ in range(20):
        Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
        proc = sleeper()
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    raise SystemExit(f"could not start a process as PID {pid}")


def reuse(a: subprocess.Popen[str]) -> subprocess.Popen[str]:
    """Once A has had its SIGTERM: A exits (killed and reaped here), B gets its PID."""
    assert a.stdout is not None
    if line(a.stdout, 30) != "TERM\n":
        raise SystemExit("A never received SIGTERM")
    a.kill()
    a.wait()
    return sleeper_at(a.pid)


def run_cli(a: subprocess.Popen[str], libs: dict[str, str], folder: Path) -> dict[str, object]:
    from sim.scenario import GIB, HostProcess, Libraries, Machine, Process, Scenario, h100, replace

    libraries = Libraries(
        Path(libs["build"]),
        libs["compiler"],
        Path(libs["object"]),
        Path(libs["nvml"]),
        Path(libs["cuda"]),
    )
    gpu = replace(h100(0), processes=[Process(a.pid, "python3", 4 * GIB)])
    machine = Machine.create(
        Scenario(gpus=[gpu], host_processes=[HostProcess(a.pid, ["/dev/nvidia0"], mirror=True)]),
        libraries,
        folder,
    )
    env = {**os.environ, **machine.env}
    cmd = [sys.executable, "-m", "gpucheck", "procs", "--json", "--kill", str(a.pid)]
    gpucheck = subprocess.Popen(
        [*cmd, "--yes", "--grace", "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    b = reuse(a)
    out, err = gpucheck.communicate(timeout=60)
    doc = json.loads(out) if gpucheck.returncode in (0, 1) and out else {}
    return {
        "b": b,
        "rc": gpucheck.returncode,
        "stderr": err.decode(),
        "actions": doc.get("actions"),
    }


def run_ender(a: subprocess.Popen[str], use_pidfd: bool) -> dict[str, object]:
    from gpucheck.model.holders import Holder
    from gpucheck.probes.processes import read_process
    from gpucheck.procs.ending import Decision, Ended, Ender

    holder = Holder(pid=a.pid, visible=True, process=read_process(Path("/proc"), a.pid))
    ender = Ender(Path("/"), grace=4, use_pidfd=use_pidfd)
    ended: list[Ended] = []
    thread = threading.Thread(
        target=lambda: ended.append(ender.end(Decision(a.pid, True, "", holder)))
    )
    thread.start()
    b = reuse(a)
    thread.join(60)
    e = ended[0]
    return {"b": b, "actions": [{"outcome": e.outcome, "detail": e.detail, "guard": e.guard}]}


def run_send(a: subprocess.Popen[str], use_pidfd: bool) -> dict[str, object]:
    """Confirmed, then A exits and B takes its PID before the first signal is sent."""
    from gpucheck.procs.signals import open_target

    target, why = open_target(a.pid, lambda: True, use_pidfd)
    assert target is not None, why
    a.kill()
    a.wait()
    b = sleeper_at(a.pid)
    sent = target.send(signal.SIGTERM)
    exited = target.wait(0)
    target.close()
    return {"b": b, "actions": [{"sent": sent, "exited": exited, "guard": target.guard}]}


def main() -> None:
    mode, libs, folder = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
    assert os.getpid() == 1, "run me as PID 1 of a new PID namespace"
    a = sleeper()
    if mode == "cli":
        found = run_cli(a, libs, folder)
    elif mode.startswith("send-"):
        found = run_send(a, mode == "send-pidfd")
    else:
        found = run_ender(a, mode == "pidfd")
    b = found.pop("b")
    assert isinstance(b, subprocess.Popen) and b.stdout is not None
    time.sleep(0.3)
    b_alive = b.poll() is None
    b_said = line(b.stdout, 0.2) if b_alive else None
    b.kill()
    b.wait()
    print(
        json.dumps({"a_pid": a.pid, "b_pid": b.pid, "b_alive": b_alive, "b_said": b_said, **found})
    )


if __name__ == "__main__":
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    main()
