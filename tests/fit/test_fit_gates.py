"""`gpucheck fit` as a gate on a simulated machine (tests/sim): it never says "fits" with exit 0
for a job this machine cannot run as asked (more GPUs than it has), for a GPU NVML cannot open
(lost), or for a machine whose driver is not loaded (GPUs on the PCI bus, nothing to ask)."""

from __future__ import annotations

import json

from conftest import Simulate, run_gpucheck
from sim import scenario as sim
from sim.scenario import Scenario, replace

CONFIG = "tests/fixtures/fit/meta-llama-3-8b/config.json"
JOB = (CONFIG, "--infer", "--seq", "2048", "--json")  # ~16 GiB: fits one H100


def test_more_gpus_than_the_machine_has_is_not_a_quiet_fits(simulate: Simulate) -> None:
    machine = simulate(sim.h100_node(2))
    out = run_gpucheck("fit", *JOB, "--gpus", "16", env=machine.env)
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert [v["verdict"] for v in report["verdicts"]] == ["fits", "fits"]
    assert (
        "--gpus 16: judged for 16 GPUs of this kind; this machine has 2, so the job cannot run "
        "here as asked"
    ) in report["notes"]
    same = run_gpucheck("fit", *JOB, "--gpus", "2", env=machine.env)
    assert same.returncode == 0, same.stderr


def test_a_lost_gpu_is_said_and_the_answer_is_could_not_tell(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[sim.h100(0), replace(sim.h100(1), lost=True)]))
    out = run_gpucheck("fit", *JOB, env=machine.env)
    assert out.returncode == 5, out.stderr
    report = json.loads(out.stdout)
    assert [v["index"] for v in report["verdicts"]] == [0]
    assert report["notes"] == [
        "GPU 1: could not tell: NVML cannot open it (GpuIsLost); `gpucheck doctor` says why"
    ]


def test_gpus_on_the_bus_with_no_driver_loaded_are_not_no_gpu(simulate: Simulate) -> None:
    machine = simulate(sim.h100_node(2, module_loaded=False, uvm_loaded=False))
    out = run_gpucheck("fit", *JOB, env=machine.env)
    assert out.returncode == 5, out.stderr
    assert out.stderr == (
        "gpucheck: no GPU judged: The GPUs here could not be read: the NVIDIA driver is not "
        "loaded (2 NVIDIA GPUs on the PCI bus; `gpucheck doctor` says how to load it): pass "
        "--gpu-memory 80GiB, or --all-gpus for every GPU in the compat data\n"
    )
    assert "NVML sees none" not in out.stdout + out.stderr


def test_a_machine_without_gpus_is_still_no_gpu_exit_1(simulate: Simulate) -> None:
    machine = simulate(Scenario(gpus=[]))
    out = run_gpucheck("fit", *JOB, env=machine.env)
    assert out.returncode == 1, out.stderr
    assert "No GPU on this machine to judge against (none on the PCI bus)" in out.stderr


def test_a_second_python_is_refused_by_fit_and_bench_alike() -> None:
    for command in (("fit", "--params", "1B"), ("bench",)):
        out = run_gpucheck(*command, "--python", "/usr/bin/python3", "--python", "/bin/sh")
        assert out.returncode == 2, (command, out.stderr)
        assert out.stderr == (
            "gpucheck: --python was given 2 times: this command probes one environment (the "
            "doctor and snapshot take several)\n"
        )
