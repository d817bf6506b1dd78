"""vLLM's prebuilt wheels against the GPUs here, judged from compat/extensions.toml
[[kernel_archs]], read from every release's PyPI wheel (scripts/wheel_archs.py): vllm/_C.abi3.so
carries sm_70 SASS up to 0.19.1 and none from 0.20.0, whose _C and _C_stable_libtorch carry
7.5, 8.0, 8.6, 8.9, 9.0, 9.0a, 10.0 and 12.0 (the row keeps 7.5, 8.0, 9.0, 10.0 and 12.0: the
others run where those do)."""

from __future__ import annotations

from support import builders, more_builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.finding import Finding, Status
from gpucheck.model.snapshot import Snapshot


def _vllm(snap: Snapshot, vllm: str) -> Finding:
    env = fb.with_torch(fb.environment(), "2.7.0+cu126", "12.6")
    fb.add(env, "vllm", vllm, ["torch==2.7.0"])
    return the(fb.on(snap, env), "frameworks.torch.extensions")


def _v100() -> Snapshot:
    snap = builders.workstation()
    snap.nvml.gpus[0].name = "Tesla V100-SXM2-16GB"
    snap.nvml.gpus[0].compute_capability = "7.0"
    return snap


def test_vllm_before_0_20_runs_on_a_v100() -> None:
    assert _vllm(_v100(), "0.14.0").status is Status.PASS
    assert _vllm(_v100(), "0.19.1").status is Status.PASS


def test_vllm_0_20_on_a_v100_names_the_releases_before_it() -> None:
    # The 0.21.0 docs say "7.5 or higher"; the wheels already lack sm_70 at 0.20.0.
    f = _vllm(_v100(), "0.20.1")
    assert f.status is Status.FAIL
    assert f.title == (
        "vllm 0.20.1 has no kernels for compute capability 7.0: its build carries code for "
        "compute capability 7.5, 8.0, 9.0, 10.0, 12.0 only, so its kernels fail there; vllm "
        "releases before 0.20.0 have it"
    )
    assert f.fix is not None and "pip install 'vllm<0.20.0'" in f.fix.text
    assert "--no-build-isolation" not in f.fix.text
    assert "Hugging Face transformers" in f.fix.text


def test_vllm_on_a_t4_on_both_sides_of_0_21() -> None:
    assert _vllm(more_builders.t4_vm(), "0.9.1").status is Status.PASS
    assert _vllm(more_builders.t4_vm(), "0.21.0").status is Status.PASS


def test_vllm_0_21_on_an_rtx_5090_is_not_failed_for_its_arch() -> None:
    # vllm-0.21.0-1-cp38-abi3-manylinux_2_24_x86_64.whl: _C carries sm_120 SASS.
    assert "no kernels" not in _vllm(fb.blackwell_workstation(), "0.21.0").title


def test_vllm_on_pascal_says_no_release_builds_for_it() -> None:
    f = _vllm(fb.pascal_workstation(), "0.21.0")
    assert f.status is Status.FAIL and "no vllm release builds for it" in f.title
    assert f.fix is not None
    assert f.fix.text.startswith(
        "Run vllm on GPUs of compute capability 7.5, 8.0, 9.0, 10.0, 12.0 (CUDA_VISIBLE_DEVICES "
        "can leave the others out); or use an engine without vLLM's compiled kernels"
    )


def test_vllm_before_its_first_wheel_is_not_judged() -> None:
    # vLLM 0.1.0 to 0.1.3 are an sdist alone (built on install): no row, no verdict on the arch.
    assert "no kernels" not in _vllm(fb.pascal_workstation(), "0.1.3").title
    assert "no kernels" in _vllm(fb.pascal_workstation(), "0.1.4").title


def test_vllm_0_21_on_a_v100_beside_an_h100_warns_with_every_way_out() -> None:
    snap = builders.node([builders.h100(0), builders.h100(1)])
    snap.nvml.gpus[1].compute_capability = "7.0"
    f = _vllm(snap, "0.21.0")
    assert f.status is Status.WARN and f.fix is not None
    assert f.fix.text.startswith("Run vllm on GPUs of compute capability 7.5, 8.0, 9.0, 10.0, 12.0")
    assert "CUDA_VISIBLE_DEVICES" in f.fix.text and "pip install 'vllm<0.20.0'" in f.fix.text


def test_vllm_0_4_0_alone_has_no_turing_code() -> None:
    # vllm-0.4.0-cp310-cp310-manylinux1_x86_64.whl: _C carries sm_80, 8.6, 8.9, 9.0 only.
    f = _vllm(more_builders.t4_vm(), "0.4.0")
    assert f.status is Status.FAIL
    assert f.title.endswith("vllm 0.4.0.post1 is the first release with it")
    assert f.fix is not None and "pip install 'vllm>=0.4.0.post1'" in f.fix.text
    assert "no kernels" not in _vllm(more_builders.t4_vm(), "0.4.0.post1").title


def test_vllm_on_an_rtx_5090_before_0_9_2_names_0_9_2() -> None:
    # 0.9.0 to 0.9.1 carry sm_100 but no sm_120; 0.6.3 on carry no compute_90 PTX either.
    for version in ("0.9.1", "0.8.5"):
        f = _vllm(fb.blackwell_workstation(), version)
        assert f.status is Status.FAIL
        assert f.title.endswith("vllm 0.9.2 is the first release with it")


def test_vllm_0_5_runs_on_an_rtx_5090_through_its_ptx() -> None:
    # 0.4.0.post1 to 0.6.2: compute_90 PTX in every file of _C, which the driver JIT-compiles.
    assert "no kernels" not in _vllm(fb.blackwell_workstation(), "0.5.0").title
    f = _vllm(fb.pascal_workstation(), "0.5.0")
    assert (
        "its build carries code for compute capability 7.0, 8.0, 9.0 and, through PTX, 9.0 "
        "and newer, so its kernels fail there" in f.title
    )
