"""`gpucheck preflight` under the real torchrun (the torch CPU wheel, gloo), several ranks on
this machine, each rank on a simulated node of its own: a wrapper script that torchrun starts
sources that rank's environment file (its GPUCHECK_ROOT, fake NVML and libcuda) and runs the
real command. One rank broken in each way; rank 0's verdict is read from torchrun's stdout.

The host-dependent checks (this machine's own CUDA toolkit and cuDNN) and the CPU wheel's own
finding on a GPU node are skipped, as the simulator tests do: what is judged is the nodes'.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sim import scenario as sim
from sim.scenario import Machine
from support import venvs
from support.components import free_port
from support.sim_doctor import HOST_DEPENDENT

pytestmark = pytest.mark.slow

WRAPPER = """#!/bin/sh
# This rank's simulated node: its environment file, then the real command.
. "{folder}/rank$RANK.env"
exec {python} -m gpucheck preflight "$@"
"""
SKIPPED = (*HOST_DEPENDENT, "frameworks.torch.cpu-build")
SCENARIO_LIMIT = 60  # seconds each run may take


@pytest.fixture(scope="module")
def torch_python() -> Path:
    return venvs.require("torch-2.13.0")


@pytest.fixture(scope="module")
def nodes(sim_libs: sim.Libraries, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Machine]:
    folder = tmp_path_factory.mktemp("preflight-nodes")
    ecc = sim.Scenario(gpus=[sim.replace(sim.h100(0), ecc_uncorrected=(2, 2)), sim.h100(1)])
    return {
        "healthy": Machine.create(sim.h100_node(2), sim_libs, folder / "healthy"),
        "ecc": Machine.create(ecc, sim_libs, folder / "ecc"),
    }


Launch = Callable[..., tuple[subprocess.CompletedProcess[str], dict[str, Any], float]]


@pytest.fixture
def launch(torch_python: Path, nodes: dict[str, Machine], tmp_path: Path) -> Launch:
    def run(
        ranks: int,
        node: dict[int, str] | None = None,
        extra: dict[int, str] | None = None,
        timeout: float = 30,
        min_fraction: float = 0,
    ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], float]:
        """torchrun with `ranks` ranks; rank r on nodes[node[r]] (healthy by default), its
        environment file ending with extra[r] (shell). Stragglers are judged only where a
        scenario asks (`min_fraction`): three ranks on two busy cores are not a steady clock."""
        for r in range(ranks):
            machine = nodes[(node or {}).get(r, "healthy")]
            lines = [f"export {k}='{v}'" for k, v in machine.env.items()]
            (tmp_path / f"rank{r}.env").write_text("\n".join([*lines, (extra or {}).get(r, "")]))
        wrapper = tmp_path / "rank.sh"
        wrapper.write_text(WRAPPER.format(folder=tmp_path, python=sys.executable))
        wrapper.chmod(0o755)
        skips = [a for check in SKIPPED for a in ("--skip", check)]
        cmd = [
            str(torch_python.parent / "torchrun"),
            f"--nproc-per-node={ranks}",
            "--no-python",
            "--master-addr=127.0.0.1",
            f"--master-port={free_port()}",
            str(wrapper),
            "--python",
            str(torch_python),
            *skips,
            f"--timeout={timeout}",
            f"--min-fraction={min_fraction}",
            "--json",
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "WORLD_SIZE"))}
        start = time.monotonic()
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=SCENARIO_LIMIT, env=env, check=False
        )
        seconds = time.monotonic() - start
        assert done.stdout.strip(), f"rank 0 printed no verdict:\n{done.stderr[-3000:]}"
        return done, json.loads(done.stdout), seconds

    return run


def test_a_healthy_job_is_ready(launch: Launch) -> None:
    done, verdict, _ = launch(3)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (verdict["ready"], verdict["exit_code"], verdict["problems"]) == (True, 0, [])
    assert (verdict["launcher"], verdict["world"]) == ("torchrun", 3)
    allreduce = verdict["allreduce"]
    assert (allreduce["backend"], allreduce["world"], allreduce["correct"]) == ("gloo", 3, True)
    assert allreduce["busbw_gbs"] > 0
    assert sorted(t["rank"] for t in verdict["times"]) == [0, 1, 2]


def test_a_rank_on_a_node_with_failing_checks_is_named(launch: Launch) -> None:
    done, verdict, _ = launch(3, node={1: "ecc"})
    assert done.returncode != 0 and verdict["exit_code"] == 1
    (problem,) = verdict["problems"]
    assert (problem["kind"], problem["ranks"]) == ("checks", [1])
    (check,) = problem["problems"]
    assert (check["id"], check["status"], check["gpus"]) == ("gpus.ecc-errors", "fail", [0])
    assert check["fix"] and "nvidia-smi -r -i 0" in check["fix"]


def test_a_slow_rank_is_the_straggler(launch: Launch) -> None:
    # The documented test hook: 300 ms more on each of rank 2's local steps.
    done, verdict, _ = launch(
        3, extra={2: "export GPUCHECK_PREFLIGHT_TEST_DELAY_MS=300"}, min_fraction=0.3
    )
    assert verdict["exit_code"] == 1, done.stderr[-3000:]
    (problem,) = verdict["problems"]
    assert (problem["kind"], problem["ranks"]) == ("straggler", [2])
    assert verdict["slowest_rank"] == 2


def test_a_rank_that_dies_is_named_when_torchrun_stops_the_others(launch: Launch) -> None:
    # Rank 2's process ends (exit 3) 10 s in, while the others are at work (gpucheck has
    # started on them, whatever the load on the machine); torchrun then sends
    # SIGTERM to every other rank, and rank 0 answers with what it has.
    done, verdict, _ = launch(3, extra={2: "sleep 10; exit 3"})
    assert verdict["exit_code"] == 1
    (problem,) = verdict["problems"]
    assert problem["kind"] == "missing" and 2 in problem["ranks"]
    assert any("SIGTERM" in line for line in problem["evidence"])
    assert "exitcode  : 3" in done.stderr  # torchrun's own account names the dead rank


def test_a_rank_that_never_starts_is_named_within_the_timeout(launch: Launch) -> None:
    # A world of 4 that torchrun starts 3 ranks of: rank 3 never arrives.
    everyone = {r: "export WORLD_SIZE=4" for r in range(3)}
    _, verdict, seconds = launch(3, extra=everyone, timeout=20)
    assert verdict["exit_code"] == 1
    (problem,) = verdict["problems"]
    assert (problem["kind"], problem["ranks"]) == ("missing", [3])
    assert problem["title"].startswith("rank 3 never arrived within")
    assert seconds < 20 + 25  # the bound, plus torchrun's start and the ranks' own exits
