"""A real one-node Slurm cluster for the integration tests: Debian's slurmctld and slurmd with
munge, started here on loopback in a temporary folder and always stopped after.

The configuration that runs without cgroups or extra privileges: proctrack/linuxproc,
task/none, no accounting, the daemons as root in the foreground (-D), munged with --force. The
node has one CPU (a job step of several tasks overcommits it) and this host's name as its
hostname, so that slurmd, started with -N NODE, finds itself.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.components import free_port, program, run, stop, wait_for

_CONF = """ClusterName={cluster}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={socket}
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
{extra}NodeName={node} NodeAddr=127.0.0.1 NodeHostname={hostname} CPUs=1 State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class SlurmCluster:
    root: Path  # slurm.conf, the daemons' state, spool and logs
    env: dict[str, str]  # this environment with SLURM_CONF set: for scontrol, srun, sbatch
    node_name: str

    def scontrol(self, *args: str) -> str:
        result = run(program("scontrol"), *args, env=self.env, timeout=30)
        assert result.returncode == 0, (args, result.stderr)
        return result.stdout

    def node(self) -> tuple[str, str]:
        """The node's state (IDLE, IDLE+DRAIN, ...) and its reason, as scontrol shows them."""
        shown = self.scontrol("-o", "show", "node", self.node_name)
        state = re.search(r"\bState=(\S+)", shown)
        reason = re.search(r" Reason=(.*?)(?: \[[^]]*\])?$", shown.strip())
        return (state.group(1) if state else ""), (reason.group(1) if reason else "")

    def logs(self) -> str:
        """The last lines of every daemon's log, for a failure's message."""
        tails = []
        folders = sorted((self.root / "log").glob("*")) + sorted(
            (self.root / "munge").glob("*.log")
        )
        for log in folders:
            tails.append(f"--- {log.name}\n" + "\n".join(log.read_text().splitlines()[-15:]))
        return "\n".join(tails)


@contextlib.contextmanager
def slurm_cluster(root: Path, name: str, node: str, extra: str = "") -> Iterator[SlurmCluster]:
    """The cluster `name` in `root` (empty), its one node `node` up and idle; `extra`:
    slurm.conf lines for the node (a health check program, a prolog), each ending in a newline."""
    munged, slurmctld, slurmd = program("munged"), program("slurmctld"), program("slurmd")
    program("scontrol")
    for sub in ("munge", "state", "spool", "log"):
        (root / sub).mkdir(mode=0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    socket_path = root / "munge" / "munge.socket"
    (root / "slurm.conf").write_text(
        _CONF.format(
            cluster=name,
            ctld_port=free_port(),
            slurmd_port=free_port(),
            socket=socket_path,
            root=root,
            extra=extra,
            node=node,
            hostname=socket.gethostname(),
        )
    )
    env = {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}
    cluster = SlurmCluster(root, env, node)
    logs = (root / "log" / "daemons.out").open("w")
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        munge = [
            munged,
            "-F",
            "--force",
            f"--key-file={key}",
            f"--socket={socket_path}",
            f"--pid-file={root}/munge/munged.pid",
            f"--log-file={root}/munge/munged.log",
            f"--seed-file={root}/munge/munged.seed",
        ]
        for command in (munge, [slurmctld, "-D", "-i"], [slurmd, "-D", "-N", node]):
            daemons.append(subprocess.Popen(command, env=env, stdout=logs, stderr=logs))
            if command is munge:
                wait_for("munged's socket", socket_path.exists, 20, cluster.logs())

        def node_up() -> bool:
            for daemon in daemons:
                if daemon.poll() is not None:
                    pytest.fail(f"{daemon.args!r} exited: {cluster.logs()}")
            try:
                state, _ = cluster.node()
            except AssertionError:
                return False
            return state.startswith("IDLE")

        wait_for("the Slurm node to come up idle", node_up, 60, cluster.logs())
        yield cluster
    finally:
        for daemon in reversed(daemons):
            stop(daemon.pid)
        logs.close()
