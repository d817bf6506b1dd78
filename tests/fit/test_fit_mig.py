"""`gpucheck fit` on a simulated MIG machine (tests/sim): a CUDA process gets one MIG device, not
the whole GPU (NVIDIA's MIG user guide, "CUDA Device Enumeration"), so the verdict is on that
slice's memory, as NVML reports it, never the card's. The slice is the doctor's (gpus.mig): the
one CUDA_VISIBLE_DEVICES names, else the first CUDA enumerates."""

from __future__ import annotations

import json

from conftest import Simulate, run_gpucheck
from sim import scenario as sim
from sim.scenario import MIB, MigDevice, Scenario, replace

CONFIG = "tests/fixtures/fit/meta-llama-3-8b/config.json"
JOB = ("--infer", "--seq", "8192", "--batch", "8")  # 30.16 GiB: over a 1g.20gb slice
FIRST = "MIG-1b3c0f2a-5d6e-5f70-8a9b-0c1d2e3f4a50"  # the a100_mig preset's slot 0


def a100(**changes: object) -> Scenario:
    return Scenario(gpus=[replace(sim.a100_mig(), **changes)], driver="535.54.03", cuda=12020)


def test_an_a100_with_four_1g_20gb_slices_is_judged_by_one_slice_not_80_gib(
    simulate: Simulate,
) -> None:
    machine = simulate(a100())
    out = run_gpucheck("fit", CONFIG, *JOB, "--json", env=machine.env)
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    (verdict,) = report["verdicts"]
    assert verdict["gpu"] == "GPU 0 MIG 1g.20gb (A100-SXM4-80GB)"
    assert verdict["index"] == 0
    assert verdict["memory_bytes"] == 19968 * MIB  # the slice, not 81920 MiB
    assert verdict["verdict"] == "does not fit"
    assert verdict["largest_batch"] == 1
    assert report["notes"] == [
        "MIG is on for GPU 0 (4 MIG devices): a CUDA process gets one, not the whole GPU; "
        f"judged by the first slice CUDA enumerates ({FIRST}; CUDA_VISIBLE_DEVICES unset): "
        "19.50 GiB of the GPU's 80.00 GiB. CUDA_VISIBLE_DEVICES=MIG-<uuid> picks another "
        "slice (nvidia-smi -L lists them)"
    ]
    text = run_gpucheck("fit", CONFIG, *JOB, env=machine.env)
    assert text.returncode == 1
    assert (
        "  does not fit  GPU 0 MIG 1g.20gb (A100-SXM4-80GB): 30.16 GiB of 19.50 GiB (155%); "
        "largest batch that fits: 1\n"
    ) in text.stdout


def test_the_slice_cuda_visible_devices_names_is_judged_not_the_first_or_largest(
    simulate: Simulate,
) -> None:
    # Slot 1 a 3g.40gb of 40192 MiB, slot 2 a 4g.40gb of the same: naming slot 1 judges slot 1;
    # unset, the first (1g.20gb) is judged, not the largest the doctor's --min-memory reads.
    slices = [
        MigDevice(0, "NVIDIA A100-SXM4-80GB MIG 1g.20gb", FIRST, 19968 * MIB),
        MigDevice(
            1,
            "NVIDIA A100-SXM4-80GB MIG 3g.40gb",
            "MIG-aaaa1111-0000-5000-8000-000000000001",
            40192 * MIB,
        ),
    ]
    machine = simulate(a100(mig_devices=slices))
    env = {**machine.env, "CUDA_VISIBLE_DEVICES": "MIG-aaaa1111-0000-5000-8000-000000000001"}
    out = run_gpucheck("fit", CONFIG, *JOB, "--json", env=env)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    (verdict,) = report["verdicts"]
    assert verdict["gpu"] == "GPU 0 MIG 3g.40gb (A100-SXM4-80GB)"
    assert verdict["memory_bytes"] == 40192 * MIB
    assert verdict["verdict"] == "fits"
    assert (
        "judged by the slice CUDA_VISIBLE_DEVICES names "
        "(MIG-aaaa1111-0000-5000-8000-000000000001): 39.25 GiB of the GPU's 80.00 GiB"
    ) in report["notes"][0]
    unset = json.loads(run_gpucheck("fit", CONFIG, *JOB, "--json", env=machine.env).stdout)
    assert unset["verdicts"][0]["memory_bytes"] == 19968 * MIB


def test_mig_on_with_no_slices_judges_nothing_and_says_why(simulate: Simulate) -> None:
    machine = simulate(a100(mig_devices=[]))
    out = run_gpucheck("fit", CONFIG, *JOB, "--json", env=machine.env)
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert report["verdicts"] == []
    assert report["notes"][0] == (
        "GPU 0 (A100-SXM4-80GB) has MIG on but no MIG device CUDA can use: not judged "
        "(nvidia-smi mig -lgip lists the profiles to create one)"
    )
    assert out.stderr == (
        "gpucheck: no GPU judged: No GPU on this machine to judge against (CUDA can use none "
        "of its GPUs): pass --gpu-memory 80GiB, or --all-gpus for every GPU in the compat data\n"
    )
