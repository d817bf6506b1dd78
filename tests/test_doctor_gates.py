"""The doctor as a gate never says "Ready" for what it could not judge: a --python that is not
a Python interpreter (its probe script cannot run) answers "could not tell" (exit 5)."""

from __future__ import annotations

import json

from conftest import Simulate, run_gpucheck
from sim import scenario as sim


def test_a_python_that_is_not_python_is_could_not_tell_not_ready(simulate: Simulate) -> None:
    machine = simulate(sim.h100_node(2))
    out = run_gpucheck("doctor", "--python", "/bin/sh", env=machine.env)
    assert out.returncode == 5, out.stdout + out.stderr
    last = out.stdout.rstrip().splitlines()[-1]
    assert last.startswith(
        "? Could not tell: --python /bin/sh could not be probed, so its frameworks were not "
        "judged (is it a Python interpreter? exited with status 2"
    ), last
    as_json = run_gpucheck("doctor", "--python", "/bin/sh", "--json", env=machine.env)
    summary = json.loads(as_json.stdout)["summary"]
    assert (as_json.returncode, summary["exit_code"], summary["ready"]) == (5, 5, False)
    assert summary["reason"].startswith("--python /bin/sh could not be probed")
