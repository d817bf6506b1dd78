"""`gpucheck preflight` under the real Slurm: as a job step: `srun -n 3` on a one-node cluster
(support/slurm_cluster.py: Debian's slurmctld and slurmd with munge on loopback; one CPU, so
srun overcommits it), each task on a simulated node of its own through a wrapper script. The tasks find rank 0
from Slurm's own variables (SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_NODELIST's first host).
And as the multi-node prolog of integrations/slurm/gpucheck-slurm (its preflight mode)."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO
from sim import scenario as sim
from sim.scenario import Machine
from support import venvs
from support.components import program, run
from support.sim_doctor import HOST_DEPENDENT
from support.slurm_cluster import slurm_cluster

pytestmark = pytest.mark.slow

HOST = socket.gethostname()  # the node's name: Slurm's node list names rank 0's host by it
WRAPPER = """#!/bin/sh
# This task's simulated node: its environment file, then the real command; its exit code kept.
. "{folder}/rank$SLURM_PROCID.env"
{python} -m gpucheck preflight "$@"
code=$?
echo $code > "{folder}/exit$SLURM_PROCID"
exit $code
"""


@pytest.fixture(scope="module")
def slurm_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    program("srun")
    root = tmp_path_factory.mktemp("slurm-preflight")
    with slurm_cluster(root, "gpucheck-preflight", HOST) as cluster:
        yield cluster.env


def test_srun_tasks_agree_on_one_verdict_and_only_the_failing_task_exits_1(
    slurm_env: dict[str, str], sim_libs: sim.Libraries, tmp_path: Path
) -> None:
    torch_python = venvs.require("torch-2.13.0")
    ecc = sim.Scenario(gpus=[sim.replace(sim.h100(0), ecc_uncorrected=(2, 2)), sim.h100(1)])
    healthy = Machine.create(sim.h100_node(2), sim_libs, tmp_path / "healthy")
    broken = Machine.create(ecc, sim_libs, tmp_path / "ecc")
    for rank, machine in enumerate((healthy, healthy, broken)):
        lines = [f"export {k}='{v}'" for k, v in machine.env.items()]
        (tmp_path / f"rank{rank}.env").write_text("\n".join(lines) + "\n")
    wrapper = tmp_path / "rank.sh"
    wrapper.write_text(WRAPPER.format(folder=tmp_path, python=sys.executable))
    wrapper.chmod(0o755)
    skips = [
        a for check in (*HOST_DEPENDENT, "frameworks.torch.cpu-build") for a in ("--skip", check)
    ]
    done = run(
        program("srun"),
        "--overcommit",
        "-n",
        "3",
        "--kill-on-bad-exit=0",
        str(wrapper),
        "--python",
        str(torch_python),
        *skips,
        "--timeout=30",
        "--min-fraction=0",  # stragglers: the torchrun tests' (three tasks, two cores)
        "--exit-for=node",
        "--json",
        env=slurm_env,
        timeout=90,
    )
    verdict = json.loads(done.stdout)
    assert verdict["launcher"] == "slurm" and verdict["world"] == 3
    assert verdict["exit_code"] == 1 and done.returncode == 1, done.stderr[-2000:]
    problems = verdict["problems"]
    assert len(problems) == 1, problems
    (problem,) = problems
    assert (problem["kind"], problem["ranks"]) == ("checks", [2])
    assert problem["problems"][0]["id"] == "gpus.ecc-errors"
    assert verdict["allreduce"]["world"] == 3 and verdict["allreduce"]["correct"]
    # --exit-for node: the failing task alone exits 1 (as a prolog there would drain its node).
    exits = [(tmp_path / f"exit{rank}").read_text().strip() for rank in range(3)]
    assert exits == ["0", "0", "1"]


def test_preflight_prolog_drains_the_node_the_verdict_names_and_spares_a_sound_one(
    slurm_env: dict[str, str], sim_libs: sim.Libraries, tmp_path: Path
) -> None:
    """integrations/slurm/gpucheck-slurm preflight, as slurmd runs a Prolog: the job's node
    list and this node's name in the environment, the settings from its file."""
    torch_python = venvs.require("torch-2.13.0")
    script = REPO / "integrations" / "slurm" / "gpucheck-slurm"
    ecc = sim.Scenario(gpus=[sim.replace(sim.h100(0), ecc_uncorrected=(2, 2)), sim.h100(1)])
    skips = " ".join(f"--skip {c}" for c in (*HOST_DEPENDENT, "frameworks.torch.cpu-build"))
    scontrol = program("scontrol")
    for name, scenario in (("sound", sim.h100_node(2)), ("broken", ecc)):
        machine = Machine.create(scenario, sim_libs, tmp_path / name)
        lines = [f"export {k}='{v}'" for k, v in machine.env.items()]
        gpucheck = tmp_path / f"{name}.sh"
        gpucheck.write_text(
            "\n".join(["#!/bin/sh", *lines, f'exec {sys.executable} -m gpucheck "$@"']) + "\n"
        )
        gpucheck.chmod(0o755)
        (tmp_path / f"{name}.conf").write_text(
            # The health gate's documented options, which preflight does not take: its own
            # are PREFLIGHT_ARGS.
            f'GPUCHECK="{gpucheck}"\nGPUCHECK_ARGS="--min-gpus 8 --strict"\n'
            f'PREFLIGHT_ARGS="--python {torch_python} {skips}"\n'
            f'TIMEOUT=60\nSCONTROL="{scontrol}"\nNODE={HOST}\n'
        )
    prolog = {**slurm_env, "SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": HOST}

    def state() -> str:
        return run(scontrol, "-o", "show", "node", HOST, env=slurm_env).stdout

    sound = run(
        sys.executable,
        str(script),
        "preflight",
        timeout=90,
        env={**prolog, "GPUCHECK_SLURM_CONF": str(tmp_path / "sound.conf")},
    )
    assert sound.returncode == 0, sound.stderr
    assert "DRAIN" not in state()
    broken = run(
        sys.executable,
        str(script),
        "preflight",
        timeout=90,
        env={**prolog, "GPUCHECK_SLURM_CONF": str(tmp_path / "broken.conf")},
    )
    try:
        assert broken.returncode == 1, broken.stderr
        shown = state()
        assert "DRAIN" in shown, shown
        assert "Reason=gpucheck: preflight of job 77 named this node (rank 0)" in shown
        assert "preflight of job 77: not ready: 1 problem" in broken.stderr
    finally:
        run(scontrol, "update", f"nodename={HOST}", "state=resume", env=slurm_env)


def test_a_task_whose_torch_process_is_killed_is_named(
    slurm_env: dict[str, str], sim_libs: sim.Libraries, tmp_path: Path
) -> None:
    """Task 2's exchange (the torch child of its gpucheck) is killed with SIGKILL 4 s after it
    starts, as the OOM killer would: srun leaves the other tasks running, and rank 0 names task
    2, lost in the all-reduce (or missing, where it died before posting its report)."""
    torch_python = venvs.require("torch-2.13.0")
    healthy = Machine.create(sim.h100_node(2), sim_libs, tmp_path / "healthy")
    lines = [f"export {k}='{v}'" for k, v in healthy.env.items()]
    for rank in range(3):
        (tmp_path / f"rank{rank}.env").write_text("\n".join(lines) + "\n")
    # Task 2's local steps take 2 s more each (the documented test hook), so that the kill
    # below lands inside its exchange: on a quiet machine the whole job is over in 4 s.
    with (tmp_path / "rank2.env").open("a") as env:
        env.write("export GPUCHECK_PREFLIGHT_TEST_DELAY_MS=2000\n")
    # Task 2's interpreter: the real one, except that its exchange is killed after 4 s.
    dying = tmp_path / "python-dies"
    dying.write_text(
        "#!/bin/sh\n"
        'case "$1" in */exchange.py) (sleep 4; kill -9 $$) & ;; esac\n'
        f'exec {torch_python} "$@"\n'
    )
    dying.chmod(0o755)
    wrapper = tmp_path / "rank.sh"
    wrapper.write_text(
        WRAPPER.format(folder=tmp_path, python=sys.executable).replace(
            'preflight "$@"',
            f'preflight --python "$([ "$SLURM_PROCID" = 2 ] && echo {dying} || echo {torch_python})" "$@"',
        )
    )
    wrapper.chmod(0o755)
    skips = [
        a for check in (*HOST_DEPENDENT, "frameworks.torch.cpu-build") for a in ("--skip", check)
    ]
    done = run(
        program("srun"), "--overcommit", "-n", "3", "--kill-on-bad-exit=0", str(wrapper),
        *skips, "--timeout=30", "--min-fraction=0", "--json",
        env=slurm_env, timeout=90,
    )  # fmt: skip
    verdict = json.loads(done.stdout)
    assert verdict["exit_code"] == 1, done.stderr[-2000:]
    (problem,) = verdict["problems"]
    assert problem["kind"] in ("lost", "missing") and problem["ranks"] == [2], problem
