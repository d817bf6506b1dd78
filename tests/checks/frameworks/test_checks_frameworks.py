"""Framework checks, what they share and the torch checks: each test puts one real-world
environment on one machine and checks that the finding names the build, the GPU or the library
at fault, and that the fix carries the versions and command the compat data gives for this
machine (literals read off compat/*.toml, never computed with gpucheck.compat)."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support import more_builders as mb
from support.evaluate import finding, run_checks, the
from support.framework_checks import (
    FRAMEWORK_CHECKS,
    H100_DRIVER,
    TORCH_215,
    framework_findings,
    min_driver,
)

from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Status
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import NvccFacts, Snapshot
from gpucheck.report.core import exit_code

# --- what every framework check shares -------------------------------------------------------------


def test_every_framework_check_is_registered_in_report_order_and_tested_here() -> None:
    from pathlib import Path

    from gpucheck import checks

    ids = [c.id for c in checks.all_checks() if c.section is Layer.FRAMEWORKS]
    assert tuple(ids) == FRAMEWORK_CHECKS
    # This module and its topic siblings, and the layers above the frameworks (extensions,
    # NumPy, NVML bindings, TensorRT, XLA).
    here = Path(__file__).parent
    files = [
        *here.glob("test_checks_frameworks*.py"),
        here / "test_checks_framework_layers.py",
        here / "test_host_facts_loader_cache.py",
    ]
    tests = "".join(f.read_text(encoding="utf-8") for f in files)
    assert [i for i in ids if f'"{i}"' not in tests] == []


def test_no_environment_no_framework_finding() -> None:
    snap = builders.h100_node(2)
    assert framework_findings(snap) == []
    snap = fb.on(builders.h100_node(2), fb.environment())  # an environment without frameworks
    assert framework_findings(snap) == []


def test_every_framework_check_is_silent_for_a_framework_that_is_not_installed() -> None:
    snap = fb.on(builders.h100_node(1), fb.torch_cu124())
    ids = {f.id for f in framework_findings(snap)}
    assert not {
        i
        for i in ids
        if i.startswith(("frameworks.tensorflow.", "frameworks.jax.", "frameworks.cupy."))
    }


def test_frameworks_is_a_section_of_its_own() -> None:
    assert Layer.FRAMEWORKS.label == "Frameworks"
    snap = fb.on(builders.h100_node(1), fb.torch_cu124())
    assert the(snap, "frameworks.torch.cpu-build").section is Layer.FRAMEWORKS


def test_several_environments_are_named_and_fixed_with_their_own_pip() -> None:
    own = fb.torch_cu124(fb.environment(prefix="/opt/gpucheck", origin="gpucheck"))
    user = fb.torch_cpu(fb.environment(prefix="/home/user/proj/.venv"))
    snap = fb.on(builders.h100_node(1), own, user)
    f = the(snap, "frameworks.torch.cpu-build")
    assert f.status is Status.FAIL
    assert any(
        e.startswith("/home/user/proj/.venv/bin/python: torch/version.py") for e in f.evidence
    )
    assert any(
        e.startswith("/opt/gpucheck/bin/python: torch 2.5.1+cu124 is a CUDA 12.4 build")
        for e in f.evidence
    )
    assert f.fix and f.fix.commands[0] == (
        "/home/user/proj/.venv/bin/python -m pip install torch==2.9.1+cu130 --index-url "
        "https://download.pytorch.org/whl/cu130"
    )


def test_an_interpreter_given_with_python_is_fixed_with_its_own_pip() -> None:
    env = fb.torch_cpu(fb.environment(prefix="/srv/job/env", origin="--python"))
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.cpu-build")
    assert f.fix and f.fix.commands[0].startswith("/srv/job/env/bin/python -m pip install torch==")


def test_odd_facts_never_break_a_check() -> None:
    """Versions that are not versions, requirements that do not parse, an unknown platform:
    unknown facts, judged as such (never an ERROR finding)."""
    env = PythonEnvironment(
        python="/x/bin/python", origin="virtualenv", version="three", platform="plan9"
    )
    fb.add(env, "torch", "nightly", ["nvidia-cudnn-cu12 ==== 9", "!!!"])
    fb.add(env, "tensorflow", "2.x", ["nvidia-cudnn-cu12==8.9; extra == 'and-cuda' and oops"])
    fb.add(env, "jaxlib", "0.4.30+cuda12.cudnn89")
    fb.add(env, "cupy-cuda12x", "13.3.0")
    fb.add(env, "nvidia-cudnn-cu12", "nine")
    fb.imported(env, "torch", 1, status="crashed", error="crashed with SIGSEGV")
    fb.imported(env, "tensorflow", 0, status="weird")  # type: ignore[arg-type]  # a newer probe's
    snap = fb.on(builders.h100_node(1), env, deep=True)
    snap.nvml.gpus[0].compute_capability = "x.y"
    findings = run_checks(snap)
    assert not [f for f in findings if f.status is Status.ERROR]


# --- frameworks.torch.cpu-build -----------------------------------------------------------------------------


def test_torch_cpu_build_on_an_h100_fails_with_the_same_version_built_for_cuda() -> None:
    f = the(fb.on(builders.h100_node(8), fb.torch_cpu()), "frameworks.torch.cpu-build")
    assert f.status is Status.FAIL
    assert (
        f.title == "torch 2.9.1+cpu is a CPU-only build: it cannot use this machine's NVIDIA GPU(s)"
    )
    assert "torch/version.py: cuda=None, hip=None" in f.evidence
    # The smallest change: the same 2.9.1, as its newest CUDA variant that runs
    # here (torch.toml, release 2.9: cuda_variants 12.6, 12.8, 13.0; driver 590 runs 13.0),
    # not the newest torch.
    assert f.fix is not None
    assert f.fix.commands[0] == (
        "pip install torch==2.9.1+cu130 --index-url https://download.pytorch.org/whl/cu130"
    )
    assert "the same PyTorch 2.9.1, built with CUDA 13.0" in f.fix.text


def test_torch_cuda_build_passes() -> None:
    f = the(fb.on(builders.h100_node(1), fb.torch_cu124()), "frameworks.torch.cpu-build")
    assert f.status is Status.PASS
    assert f.title == "torch 2.5.1+cu124 is a CUDA 12.4 build"


def test_torch_rocm_build_on_an_nvidia_machine_fails() -> None:
    env = fb.with_torch(fb.environment(), "2.5.1+rocm6.2", cuda=None, hip="6.2.41133-dd7f95766")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.cpu-build")
    assert f.status is Status.FAIL
    assert "a ROCm (AMD GPU) build" in f.title
    # torch.toml, release 2.5: cuda_variants 11.8, 12.1, 12.4
    assert f.fix and f.fix.commands == [
        "pip install torch==2.5.1+cu124 --index-url https://download.pytorch.org/whl/cu124"
    ]


def test_torch_cpu_build_without_a_gpu_is_info_and_the_doctor_stays_green() -> None:
    snap = fb.on(builders.no_gpu_machine(), fb.torch_cpu())
    f = the(snap, "frameworks.torch.cpu-build")
    assert f.status is Status.INFO
    assert "no NVIDIA GPU, so there is nothing to fix" in f.title
    found = framework_findings(snap)
    assert {x.status for x in found} <= {Status.INFO, Status.PASS, Status.SKIP}
    assert exit_code(found) == 0
    # The whole report fails on this machine for one reason only: it has no GPU.
    problems = [x.id for x in run_checks(snap) if x.status in (Status.FAIL, Status.WARN)]
    assert problems == ["system.gpu-present"]


def test_torch_build_type_unknown_without_version_py_is_skipped() -> None:
    env = fb.add(fb.environment(), "torch", "2.5.1")  # no local tag, version.py not read
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.cpu-build")
    assert f.status is Status.SKIP


# --- frameworks.torch.cuda-driver -------------------------------------------------------------------------------


def test_torch_cu130_on_driver_535_fails_with_the_driver_and_a_build_for_it() -> None:
    env = fb.with_torch(fb.environment(), "2.9.1+cu130", "13.0")
    f = the(fb.on(mb.driver_535_node(), env), "frameworks.torch.cuda-driver")
    assert f.status is Status.FAIL
    assert f.title == "torch 2.9.1+cu130 (CUDA 13.0) needs a newer NVIDIA driver than 535.104.05"
    assert f"Upgrade the NVIDIA driver to {min_driver('13.0')} or newer" in (
        f.fix.text if f.fix else ""
    )
    # torch.toml, release 2.9: cuda_variants 12.6, 12.8, 13.0; driver 535 runs 12.8 through
    # minor version compatibility (cuda.toml [[minor_compat]] 12: >= 525)
    assert f.fix and f.fix.steps[-1].option == 1
    assert f.fix.commands[-1] == (
        "pip install torch==2.9.1+cu128 --index-url https://download.pytorch.org/whl/cu128"
    )


def test_torch_within_minor_version_compatibility_is_info_naming_ptx() -> None:
    f = the(fb.on(mb.driver_535_node(), fb.torch_cu124()), "frameworks.torch.cuda-driver")
    assert f.status is Status.INFO
    assert "minor version compatibility" in f.title
    assert any("PTX" in e for e in f.evidence)


def test_torch_cuda_older_than_the_driver_passes() -> None:
    f = the(fb.on(builders.h100_node(1), fb.torch_cu124()), "frameworks.torch.cuda-driver")
    assert f.status is Status.PASS
    assert f.title == f"torch 2.5.1+cu124 (CUDA 12.4) runs on driver {H100_DRIVER}"


def test_torch_cuda_driver_unknown_driver_is_skipped_and_cpu_builds_are_left_to_cpu_build() -> None:
    snap = fb.on(mb.nvml_fails(builders.h100_node(1), "DriverNotLoaded"), fb.torch_cu124())
    snap.system.nvidia_module_version = None
    assert the(snap, "frameworks.torch.cuda-driver").status is Status.SKIP
    assert (
        finding(fb.on(builders.h100_node(1), fb.torch_cpu()), "frameworks.torch.cuda-driver")
        is None
    )


# --- frameworks.torch.arch-support ------------------------------------------------------------------------------


def test_pascal_gtx_1080_with_torch_cu128_fails_naming_a_build_that_still_has_6_1() -> None:
    # gpus.toml [[gpu]] "GeForce GTX 1080": compute_capability = "6.1" (Pascal)
    env = fb.with_torch(fb.environment(), "2.7.1+cu128", "12.8", pins=fb.TORCH_271_CU128_PINS)
    snap = fb.on(fb.pascal_workstation(), env)
    f = the(snap, "frameworks.torch.arch-support")
    assert f.status is Status.FAIL
    assert "compute capability 6.1" in f.title
    assert any("6.1 (Pascal), older than this build supports (dropped)" in e for e in f.evidence)
    # torch.toml, release 2.7: cuda_variants 11.8, 12.6, 12.8; the 12.6 build still has sm_61
    assert f.fix is not None and f.fix.commands[0] == (
        "pip install torch==2.7.1+cu126 --index-url https://download.pytorch.org/whl/cu126"
    )


def test_rtx_5090_with_torch_cu126_fails_naming_a_cu128_or_newer_build() -> None:
    # gpus.toml [[gpu]] "GeForce RTX 5090": compute_capability = "12.0" (Blackwell)
    env = fb.with_torch(fb.environment(), "2.6.0+cu126", "12.6")
    f = the(fb.on(fb.blackwell_workstation(), env), "frameworks.torch.arch-support")
    assert f.status is Status.FAIL
    assert any(
        "12.0 (Blackwell), newer than every architecture in this build" in e for e in f.evidence
    )
    assert f.fix and TORCH_215 in f.fix.text


def test_h100_with_torch_cu124_has_code_for_every_gpu() -> None:
    f = the(fb.on(builders.h100_node(8), fb.torch_cu124()), "frameworks.torch.arch-support")
    assert f.status is Status.PASS
    assert f.title == "torch 2.5.1+cu124 has code for every GPU (compute capability 9.0)"
    assert any("compiled for sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90" in e for e in f.evidence)


def test_torch_arch_list_from_the_deep_pass_wins_over_the_compat_data() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, version="2.5.1+cu124", arch_list=["sm_80", "sm_86"])
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.torch.arch-support")
    assert f.status is Status.FAIL
    assert any("doctor --deep" in e for e in f.evidence)


def test_torch_ptx_runs_forward_unless_the_driver_is_older_than_the_build() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, arch_list=["sm_80", "compute_80"])
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.torch.arch-support")
    assert f.status is Status.PASS
    assert any("through PTX JIT compilation" in e for e in f.evidence)
    env = fb.torch_cu124()  # CUDA 12.4 PTX on a CUDA 12.2 driver cannot be JIT-compiled
    fb.imported(env, "torch", 1, arch_list=["sm_80", "compute_80"])
    f = the(fb.on(mb.driver_535_node(1), env, deep=True), "frameworks.torch.arch-support")
    assert f.status is Status.FAIL
    assert any("cannot JIT-compile for CUDA 12.4" in e for e in f.evidence)


def test_torch_arch_unknown_is_skipped_not_passed() -> None:
    env = fb.with_torch(fb.environment(), "2.16.0+cu140", "14.0")  # newer than the data
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.arch-support")
    assert f.status is Status.SKIP


# --- frameworks.torch.python ----------------------------------------------------------------------------------


def test_torch_on_a_python_it_has_no_wheels_for_fails_with_a_release_that_has() -> None:
    env = fb.torch_cu124(fb.environment(version="3.14.0"))
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.python")
    assert f.status is Status.FAIL
    # torch.toml [[release]] 2.5: python_min = "3.9", python_max = "3.13"
    assert "PyTorch 2.5 has wheels for Python 3.9 to 3.13" in f.evidence[0]
    assert "python3.13 -m venv" in (f.fix.text if f.fix else "")
    assert TORCH_215 in (f.fix.text if f.fix else "")  # 2.15: Python 3.11-3.15


def test_torch_on_a_supported_python_passes() -> None:
    f = the(fb.on(builders.h100_node(1), fb.torch_cu124()), "frameworks.torch.python")
    assert f.status is Status.PASS


# --- frameworks.torch.extension-toolkit ------------------------------------------------------------------------


def _nvcc(snap: Snapshot, version: str) -> Snapshot:
    snap.cuda.nvcc = NvccFacts(path=f"/usr/local/cuda-{version[:4]}/bin/nvcc", version=version)
    snap.cuda.cuda_home, snap.cuda.cuda_home_source = "/usr/local/cuda", "default"
    return snap


def test_extension_toolkit_of_another_major_warns_with_torch_s_error_text() -> None:
    # Building any extension stops there (flash-attention#1480, MM-EUREKA#24); torch runs:
    # a warning naming the condition, never a failure, with both ways out.
    snap = _nvcc(fb.on(builders.h100_node(1), fb.torch_cu124()), "13.0.88")
    f = the(snap, "frameworks.torch.extension-toolkit")
    assert f.status is Status.WARN
    assert f.fix and "install a torch built with CUDA 13.x" in f.fix.text
    assert (
        "The detected CUDA version (13.0) mismatches the version that was used to compile PyTorch (12.4)"
        in f.title
    )
    assert f.fix and "export CUDA_HOME=/usr/local/cuda-12.4" in f.fix.text


def test_extension_toolkit_of_another_minor_only_warns_in_torch() -> None:
    f = the(
        _nvcc(fb.on(builders.h100_node(1), fb.torch_cu124()), "12.8.93"),
        "frameworks.torch.extension-toolkit",
    )
    assert f.status is Status.INFO and "minor versions differ" in f.title


def test_extension_toolkit_matching_passes_and_absent_says_nothing() -> None:
    f = the(
        _nvcc(fb.on(builders.h100_node(1), fb.torch_cu124()), "12.4.131"),
        "frameworks.torch.extension-toolkit",
    )
    assert f.status is Status.PASS
    assert (
        finding(
            fb.on(builders.h100_node(1), fb.torch_cu124()), "frameworks.torch.extension-toolkit"
        )
        is None
    )
