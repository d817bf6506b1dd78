"""Running the real `gpucheck procs` on a simulated machine, and the busy node most procs tests
look at."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from conftest import run_gpucheck
from sim.scenario import (
    GIB,
    HostProcess,
    Machine,
    Process,
    Scenario,
    h100,
    replace,
)

DOCKER_ID = "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708"


def procs(
    machine: Machine, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return run_gpucheck("procs", *args, env=machine.env, stdin=stdin, timeout=60)


def procs_json(machine: Machine, *args: str) -> dict[str, Any]:
    result = procs(machine, "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def busy_node() -> Scenario:
    """GPU 0: a training job (visible, device file open). GPU 1: a job NVML lists under a
    PID this /proc lacks (another namespace), and a fuser-only holder. GPU 2: 20 GiB used by
    no process. GPU 3: a zombie's context. Plus nvidia-persistenced on /dev/nvidiactl only."""
    gpus = [h100(i) for i in range(4)]
    gpus[0] = replace(
        gpus[0],
        memory_used=gpus[0].memory_used + 40 * GIB,
        processes=[Process(4242, "python3", 40 * GIB)],
    )
    gpus[1] = replace(
        gpus[1],
        memory_used=gpus[1].memory_used + 10 * GIB,
        processes=[Process(91234, "python", 10 * GIB)],
    )
    gpus[2] = replace(gpus[2], memory_used=gpus[2].memory_used + 20 * GIB)
    gpus[3] = replace(
        gpus[3],
        memory_used=gpus[3].memory_used + 5 * GIB,
        processes=[Process(5555, "python3", 5 * GIB)],
    )
    return Scenario(
        gpus=gpus,
        host_processes=[
            HostProcess(
                4242,
                ["/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidiactl"],
                cmdline=["python3", "train.py", "--epochs", "90"],
                uid=1000,
                cgroup=f"0::/system.slice/docker-{DOCKER_ID}.scope",
                nspid=[4242, 17],
            ),
            HostProcess(7777, ["/dev/nvidia1", "/dev/nvidiactl"], name="dcgm", cmdline=["dcgm"]),
            HostProcess(5555, [], name="python3", state="Z (zombie)", ppid=4000, cmdline=[]),
            HostProcess(
                1300,
                ["/dev/nvidiactl"],
                name="nvidia-persiste",
                cmdline=["/usr/bin/nvidia-persistenced", "--user", "nvidia-persistenced"],
                uid=0,
            ),
        ],
    )
