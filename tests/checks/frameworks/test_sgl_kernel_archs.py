"""sgl-kernel's (and sglang-kernel's, its renamed successor) PyPI wheels against the GPUs here,
judged from compat/extensions.toml [[kernel_archs]] rows read from the wheels themselves
(scripts/wheel_archs.py): from 0.3.18 sgl_kernel/sm90/ and sm100/common_ops.abi3.so carry SASS for 8.0, 8.9, 9.0, 9.0a, 10.0a and
12.0a and no PTX (the row keeps 8.0, 9.0, 10.0a, 12.0a: 8.9 and 9.0a run where those do), so a
Turing GPU has no code, and the arch-specific 10.0a and 12.0a run on compute capability 10.0 and
12.0 alone; 0.1.0 to 0.3.5 carried sm_75."""

from __future__ import annotations

from support import builders, more_builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.finding import Finding, Status
from gpucheck.model.snapshot import Snapshot


def _sgl_kernel(snap: Snapshot, version: str) -> Finding:
    env = fb.with_torch(fb.environment(), "2.8.0+cu128", "12.8")
    fb.add(env, "sgl-kernel", version, [])
    return the(fb.on(snap, env), "frameworks.torch.extensions")


def test_sgl_kernel_0_3_20_runs_on_hopper_and_an_rtx_5090() -> None:
    # No torch pin to compare: an info finding, never a verdict on the arch.
    for snap in (builders.h100_node(2), fb.blackwell_workstation()):
        f = _sgl_kernel(snap, "0.3.20")
        assert f.status is Status.INFO and "no kernels" not in f.title


def test_sgl_kernel_0_3_20_on_a_t4_fails_with_its_list() -> None:
    f = _sgl_kernel(more_builders.t4_vm(), "0.3.20")
    assert f.status is Status.FAIL
    assert f.title == (
        "sgl-kernel 0.3.20 has no kernels for compute capability 7.5: its build carries code "
        "for compute capability 8.0, 9.0, 10.0a, 12.0a only, so its kernels fail there; "
        "sgl-kernel releases before 0.3.6.post1 have it"
    )
    assert f.fix is not None and "pip install 'sgl-kernel<0.3.6.post1'" in f.fix.text
    assert "an engine whose kernels are built for this GPU" in f.fix.text


def test_arch_specific_sm_100a_code_does_not_run_on_a_b300() -> None:
    # B300: compute capability 10.3; sm_100a code runs on 10.0 alone.
    f = _sgl_kernel(_b300(), "0.3.20")
    assert f.status is Status.FAIL and "compute capability 10.3" in f.title


def test_sgl_kernel_before_0_3_9_has_no_blackwell_code() -> None:
    f = _sgl_kernel(fb.blackwell_workstation(), "0.3.8")
    assert f.status is Status.FAIL
    assert f.title.endswith("sgl-kernel 0.3.9 is the first release with it")


def test_sgl_kernel_0_3_5_still_runs_on_a_t4() -> None:
    assert "no kernels" not in _sgl_kernel(more_builders.t4_vm(), "0.3.5").title


def _b300() -> Snapshot:
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].name = "NVIDIA B300 SXM6 AC"
    snap.nvml.gpus[0].compute_capability = "10.3"
    return snap


def test_sglang_kernel_reaches_the_b300_at_0_4_2() -> None:
    # sglang-kernel, sgl-kernel renamed: sm_100a alone up to 0.4.1.post1, sm_103a from 0.4.2.
    env = fb.with_torch(fb.environment(), "2.9.1+cu129", "12.9")
    fb.add(env, "sglang-kernel", "0.4.1", [])
    f = the(fb.on(_b300(), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert f.title.endswith("sglang-kernel 0.4.2 is the first release with it")
    fb.add(env, "sglang-kernel", "0.4.6", [])
    assert "no kernels" not in the(fb.on(_b300(), env), "frameworks.torch.extensions").title
