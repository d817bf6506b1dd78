"""The Slurm wrapper's preflight mode gives preflight its own options (PREFLIGHT_ARGS, never
the health gate's GPUCHECK_ARGS, which preflight does not take), the running jobs' PIDs
(--job-pids), and logs the tail of preflight's stderr when it could not tell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO

SCRIPT = REPO / "integrations" / "slurm" / "gpucheck-slurm"


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_preflight_gets_its_own_args_and_job_pids_and_its_stderr_is_logged(
    tmp_path: Path,
) -> None:
    called = tmp_path / "called"
    # scontrol as the wrapper asks it: the job's hosts, then the PIDs of running jobs.
    scontrol = _executable(
        tmp_path / "scontrol",
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  show) echo gpu01 ;;\n"
        '  listpids) printf "PID JOBID STEPID LOCALID GLOBALID\\n4242 7 0 0 0\\n" ;;\n'
        "esac\n",
    )
    gpucheck = _executable(
        tmp_path / "gpucheck",
        f'#!/bin/sh\necho "$@" > {called}\necho "gpucheck preflight (rank 0): no torch" >&2\n'
        "exit 5\n",
    )
    conf = tmp_path / "conf"
    conf.write_text(
        f'GPUCHECK="{gpucheck}"\nGPUCHECK_ARGS="--min-gpus 8 --strict"\n'
        f'PREFLIGHT_ARGS="--min-fraction 0.7"\nSCONTROL="{scontrol}"\nNODE=gpu01\nTIMEOUT=30\n'
    )
    env = {
        "PATH": os.environ["PATH"],
        "GPUCHECK_SLURM_CONF": str(conf),
        "SLURM_JOB_ID": "7",
        "SLURM_JOB_NODELIST": "gpu01",
    }
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "preflight"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr  # could not tell: the node is left as it is
    assert called.read_text().split() == [
        "preflight",
        "--exit-for",
        "node",
        "--json",
        "--timeout",
        "20",
        "--job-pids",
        "4242",
        "--min-fraction",
        "0.7",
    ]
    assert (
        "gpucheck-slurm: preflight of job 7: could not tell (exit 5); node left as it is: "
        "gpucheck preflight (rank 0): no torch"
    ) in done.stderr
