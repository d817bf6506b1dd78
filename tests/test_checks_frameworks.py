"""Framework checks: each test puts one real-world environment on one machine and checks that
the finding names the build, the GPU or the library at fault, and that the fix carries the
versions and command the compat data gives for this machine (computed here from
gpucheck.compat, never copied from the code)."""

from __future__ import annotations

import builders
import framework_builders as fb
import more_builders as mb
import pytest
from framework_builders import COMPAT
from more_builders import finding, run_checks, the
from packaging.version import Version

from gpucheck.checks.frameworks.builds import jaxlib_cuda
from gpucheck.compat.answers import tf_install
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Section, Status
from gpucheck.model.snapshot import NvccFacts, Snapshot
from gpucheck.model.types import ChildFailure
from gpucheck.report.core import exit_code

H100_DRIVER = "590.48.01"
# Every framework check, in report order: what this module covers.
FRAMEWORK_CHECKS = (
    "torch.cpu-build",
    "torch.cuda-driver",
    "torch.arch-support",
    "torch.python",
    "torch.extension-toolkit",
    "torch.extensions",
    "tensorflow.cpu-build",
    "tensorflow.legacy-gpu-package",
    "tensorflow.windows-native",
    "tensorflow.cuda-driver",
    "tensorflow.arch-support",
    "tensorflow.python",
    "tensorflow.keras",
    "tensorflow.cuda-libraries",
    "jax.cpu-build",
    "jax.cuda-driver",
    "cupy.cuda-driver",
    "frameworks.library-shadowing",
    "frameworks.loader-cache",
    "frameworks.nvidia-conflicts",
    "tensorrt.support",
    "tensorrt.libraries",
    "xla.compiler",
    "frameworks.numpy-abi",
    "frameworks.nvml-bindings",
    "frameworks.device-count",
    "frameworks.smoke-test",
)


def framework_findings(snap: Snapshot) -> list:  # type: ignore[type-arg]
    return [f for f in run_checks(snap) if f.section is Section.FRAMEWORKS]


# The newest builds that fit, read off compat/torch.toml and compat/tensorflow.toml by hand:
# torch 2.15's variants are not published yet, but its PyPI wheel is CUDA 13.2 (driver 580+,
# Python 3.11+); 2.14 is the newest with published variants: cu132, and cu126, which runs on
# R535 and still has sm_61 (Pascal).
TORCH_215 = "pip install 'torch==2.15.*'"  # PyPI's own 2.15 wheel is CUDA 13.2 (torch.toml)
TORCH_214_CU132 = "pip install 'torch==2.14.*' --index-url https://download.pytorch.org/whl/cu132"
TORCH_214_CU126 = "pip install 'torch==2.14.*' --index-url https://download.pytorch.org/whl/cu126"
TF_221 = "pip install 'tensorflow[and-cuda]==2.21.*'"  # CUDA 12.5, cuDNN 9.3, Python 3.9-3.13
TF_214 = "pip install 'tensorflow[and-cuda]==2.14.*'"  # CUDA 11.8: the newest for R515


MIN_DRIVER = {"12.2": "535.54.03", "12.8": "570.26", "13.0": "580.65.06"}  # cuda.toml


def min_driver(cuda: str) -> str:
    return MIN_DRIVER[cuda]


# --- what every framework check shares -------------------------------------------------------------


def test_every_framework_check_is_registered_in_report_order_and_tested_here() -> None:
    from pathlib import Path

    from gpucheck import checks

    ids = [c.id for c in checks.all_checks() if c.section is Section.FRAMEWORKS]
    assert tuple(ids) == FRAMEWORK_CHECKS
    text = Path(__file__).read_text(encoding="utf-8")
    tests = text[text.index("\n)\n", text.index("FRAMEWORK_CHECKS = (")) :]
    # The layers above the frameworks (extensions, NumPy, NVML bindings, TensorRT, XLA).
    tests += (Path(__file__).parent / "test_checks_framework_layers.py").read_text("utf-8")
    tests += (Path(__file__).parent / "test_host_facts_loader_cache.py").read_text("utf-8")
    assert [i for i in ids if f'"{i}"' not in tests] == []


def test_no_environment_no_framework_finding() -> None:
    snap = builders.h100_node(2)
    assert framework_findings(snap) == []
    snap = fb.on(builders.h100_node(2), fb.environment())  # an environment without frameworks
    assert framework_findings(snap) == []


def test_every_framework_check_is_silent_for_a_framework_that_is_not_installed() -> None:
    snap = fb.on(builders.h100_node(1), fb.torch_cu124())
    ids = {f.id for f in framework_findings(snap)}
    assert not {i for i in ids if i.startswith(("tensorflow.", "jax.", "cupy."))}


def test_frameworks_is_a_section_of_its_own() -> None:
    assert Section.FRAMEWORKS.label == "Frameworks"
    snap = fb.on(builders.h100_node(1), fb.torch_cu124())
    assert the(snap, "torch.cpu-build").section is Section.FRAMEWORKS


def test_several_environments_are_named_and_fixed_with_their_own_pip() -> None:
    own = fb.torch_cu124(fb.environment(prefix="/opt/gpucheck", origin="gpucheck"))
    user = fb.torch_cpu(fb.environment(prefix="/home/user/proj/.venv"))
    snap = fb.on(builders.h100_node(1), own, user)
    f = the(snap, "torch.cpu-build")
    assert f.status is Status.FAIL
    assert any(
        e.startswith("/home/user/proj/.venv/bin/python: torch/version.py") for e in f.evidence
    )
    assert any(
        e.startswith("/opt/gpucheck/bin/python: torch 2.5.1+cu124 is a CUDA 12.4 build")
        for e in f.evidence
    )
    assert f.fix and f.fix.commands[0] == (
        "/home/user/proj/.venv/bin/python -m pip install 'torch==2.9.1+cu130' --index-url "
        "https://download.pytorch.org/whl/cu130"
    )


def test_an_interpreter_given_with_python_is_fixed_with_its_own_pip() -> None:
    env = fb.torch_cpu(fb.environment(prefix="/srv/job/env", origin="--python"))
    f = the(fb.on(builders.h100_node(1), env), "torch.cpu-build")
    assert f.fix and f.fix.commands[0].startswith("/srv/job/env/bin/python -m pip install 'torch==")


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


# --- torch.cpu-build -----------------------------------------------------------------------------


def test_torch_cpu_build_on_an_h100_fails_with_the_same_version_built_for_cuda() -> None:
    f = the(fb.on(builders.h100_node(8), fb.torch_cpu()), "torch.cpu-build")
    assert f.status is Status.FAIL
    assert (
        f.title == "torch 2.9.1+cpu is a CPU-only build: it cannot use this machine's NVIDIA GPU(s)"
    )
    assert "torch/version.py: cuda=None, hip=None" in f.evidence
    # The smallest change (issue 23): the same 2.9.1, as its newest CUDA variant that runs
    # here (torch.toml, release 2.9: cuda_variants 12.6, 12.8, 13.0; driver 590 runs 13.0),
    # not the newest torch.
    assert f.fix is not None
    assert f.fix.commands[0] == (
        "pip install 'torch==2.9.1+cu130' --index-url https://download.pytorch.org/whl/cu130"
    )
    assert "the same PyTorch 2.9.1, built with CUDA 13.0" in f.fix.text


def test_torch_cuda_build_passes() -> None:
    f = the(fb.on(builders.h100_node(1), fb.torch_cu124()), "torch.cpu-build")
    assert f.status is Status.PASS
    assert f.title == "torch 2.5.1+cu124 is a CUDA 12.4 build"


def test_torch_rocm_build_on_an_nvidia_machine_fails() -> None:
    env = fb.with_torch(fb.environment(), "2.5.1+rocm6.2", cuda=None, hip="6.2.41133-dd7f95766")
    f = the(fb.on(builders.h100_node(1), env), "torch.cpu-build")
    assert f.status is Status.FAIL
    assert "a ROCm (AMD GPU) build" in f.title
    # torch.toml, release 2.5: cuda_variants 11.8, 12.1, 12.4
    assert f.fix and f.fix.commands == [
        "pip install 'torch==2.5.1+cu124' --index-url https://download.pytorch.org/whl/cu124"
    ]


def test_torch_cpu_build_without_a_gpu_is_info_and_the_doctor_stays_green() -> None:
    snap = fb.on(builders.no_gpu_machine(), fb.torch_cpu())
    f = the(snap, "torch.cpu-build")
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
    f = the(fb.on(builders.h100_node(1), env), "torch.cpu-build")
    assert f.status is Status.SKIP


# --- torch.cuda-driver -------------------------------------------------------------------------------


def test_torch_cu130_on_driver_535_fails_with_the_driver_and_a_build_for_it() -> None:
    env = fb.with_torch(fb.environment(), "2.9.1+cu130", "13.0")
    f = the(fb.on(mb.driver_535_node(), env), "torch.cuda-driver")
    assert f.status is Status.FAIL
    assert f.title == "torch 2.9.1+cu130 (CUDA 13.0) needs a newer NVIDIA driver than 535.104.05"
    assert f"Upgrade the NVIDIA driver to {min_driver('13.0')} or newer" in (
        f.fix.text if f.fix else ""
    )
    # torch.toml, release 2.9: cuda_variants 12.6, 12.8, 13.0; driver 535 runs 12.8 through
    # minor version compatibility (cuda.toml [[minor_compat]] 12: >= 525)
    assert f.fix and f.fix.steps[-1].option == 1
    assert f.fix.commands[-1] == (
        "pip install 'torch==2.9.1+cu128' --index-url https://download.pytorch.org/whl/cu128"
    )


def test_torch_within_minor_version_compatibility_is_info_naming_ptx() -> None:
    f = the(fb.on(mb.driver_535_node(), fb.torch_cu124()), "torch.cuda-driver")
    assert f.status is Status.INFO
    assert "minor version compatibility" in f.title
    assert any("PTX" in e for e in f.evidence)


def test_torch_cuda_older_than_the_driver_passes() -> None:
    f = the(fb.on(builders.h100_node(1), fb.torch_cu124()), "torch.cuda-driver")
    assert f.status is Status.PASS
    assert f.title == f"torch 2.5.1+cu124 (CUDA 12.4) runs on driver {H100_DRIVER}"


def test_torch_cuda_driver_unknown_driver_is_skipped_and_cpu_builds_are_left_to_cpu_build() -> None:
    snap = fb.on(mb.nvml_fails(builders.h100_node(1), "DriverNotLoaded"), fb.torch_cu124())
    snap.system.nvidia_module_version = None
    assert the(snap, "torch.cuda-driver").status is Status.SKIP
    assert finding(fb.on(builders.h100_node(1), fb.torch_cpu()), "torch.cuda-driver") is None


# --- torch.arch-support ------------------------------------------------------------------------------


def test_pascal_gtx_1080_with_torch_cu128_fails_naming_a_build_that_still_has_6_1() -> None:
    assert COMPAT.gpus.lookup("GeForce GTX 1080").compute_capability == "6.1"  # type: ignore[union-attr]
    env = fb.with_torch(fb.environment(), "2.7.1+cu128", "12.8", pins=fb.TORCH_271_CU128_PINS)
    snap = fb.on(fb.pascal_workstation(), env)
    f = the(snap, "torch.arch-support")
    assert f.status is Status.FAIL
    assert "compute capability 6.1" in f.title
    assert any("6.1 (Pascal), older than this build supports (dropped)" in e for e in f.evidence)
    # torch.toml, release 2.7: cuda_variants 11.8, 12.6, 12.8; the 12.6 build still has sm_61
    assert f.fix is not None and f.fix.commands[0] == (
        "pip install 'torch==2.7.1+cu126' --index-url https://download.pytorch.org/whl/cu126"
    )


def test_rtx_5090_with_torch_cu126_fails_naming_a_cu128_or_newer_build() -> None:
    assert COMPAT.gpus.lookup("GeForce RTX 5090").compute_capability == "12.0"  # type: ignore[union-attr]
    env = fb.with_torch(fb.environment(), "2.6.0+cu126", "12.6")
    f = the(fb.on(fb.blackwell_workstation(), env), "torch.arch-support")
    assert f.status is Status.FAIL
    assert any(
        "12.0 (Blackwell), newer than every architecture in this build" in e for e in f.evidence
    )
    assert f.fix and TORCH_215 in f.fix.text


def test_h100_with_torch_cu124_has_code_for_every_gpu() -> None:
    f = the(fb.on(builders.h100_node(8), fb.torch_cu124()), "torch.arch-support")
    assert f.status is Status.PASS
    assert f.title == "torch 2.5.1+cu124 has code for every GPU (compute capability 9.0)"
    assert any("compiled for sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90" in e for e in f.evidence)


def test_torch_arch_list_from_the_deep_pass_wins_over_the_compat_data() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, version="2.5.1+cu124", arch_list=["sm_80", "sm_86"])
    f = the(fb.on(builders.h100_node(1), env, deep=True), "torch.arch-support")
    assert f.status is Status.FAIL
    assert any("doctor --deep" in e for e in f.evidence)


def test_torch_ptx_runs_forward_unless_the_driver_is_older_than_the_build() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, arch_list=["sm_80", "compute_80"])
    f = the(fb.on(builders.h100_node(1), env, deep=True), "torch.arch-support")
    assert f.status is Status.PASS
    assert any("through PTX JIT compilation" in e for e in f.evidence)
    env = fb.torch_cu124()  # CUDA 12.4 PTX on a CUDA 12.2 driver cannot be JIT-compiled
    fb.imported(env, "torch", 1, arch_list=["sm_80", "compute_80"])
    f = the(fb.on(mb.driver_535_node(1), env, deep=True), "torch.arch-support")
    assert f.status is Status.FAIL
    assert any("cannot JIT-compile for CUDA 12.4" in e for e in f.evidence)


def test_torch_arch_unknown_is_skipped_not_passed() -> None:
    env = fb.with_torch(fb.environment(), "2.16.0+cu140", "14.0")  # newer than the data
    f = the(fb.on(builders.h100_node(1), env), "torch.arch-support")
    assert f.status is Status.SKIP


# --- torch.python ----------------------------------------------------------------------------------


def test_torch_on_a_python_it_has_no_wheels_for_fails_with_a_release_that_has() -> None:
    env = fb.torch_cu124(fb.environment(version="3.14.0"))
    f = the(fb.on(builders.h100_node(1), env), "torch.python")
    rel = COMPAT.torch.release("2.5.1")
    assert rel is not None
    assert f.status is Status.FAIL
    assert (
        f"PyTorch 2.5 has wheels for Python {rel.python_min} to {rel.python_max}" in f.evidence[0]
    )
    assert f"python{rel.python_max} -m venv" in (f.fix.text if f.fix else "")
    assert TORCH_215 in (f.fix.text if f.fix else "")  # 2.15: Python 3.11-3.15


def test_torch_on_a_supported_python_passes() -> None:
    f = the(fb.on(builders.h100_node(1), fb.torch_cu124()), "torch.python")
    assert f.status is Status.PASS


# --- torch.extension-toolkit ------------------------------------------------------------------------


def _nvcc(snap: Snapshot, version: str) -> Snapshot:
    snap.cuda.nvcc = NvccFacts(path=f"/usr/local/cuda-{version[:4]}/bin/nvcc", version=version)
    snap.cuda.cuda_home, snap.cuda.cuda_home_source = "/usr/local/cuda", "default"
    return snap


def test_extension_toolkit_of_another_major_warns_with_torch_s_error_text() -> None:
    # Building any extension stops there (flash-attention#1480, MM-EUREKA#24); torch runs:
    # a warning naming the condition (issue 23), with both ways out.
    snap = _nvcc(fb.on(builders.h100_node(1), fb.torch_cu124()), "13.0.88")
    f = the(snap, "torch.extension-toolkit")
    assert f.status is Status.WARN
    assert f.fix and "install a torch built with CUDA 13.x" in f.fix.text
    assert (
        "The detected CUDA version (13.0) mismatches the version that was used to compile PyTorch (12.4)"
        in f.title
    )
    assert f.fix and "export CUDA_HOME=/usr/local/cuda-12.4" in f.fix.text


def test_extension_toolkit_of_another_minor_only_warns_in_torch() -> None:
    f = the(
        _nvcc(fb.on(builders.h100_node(1), fb.torch_cu124()), "12.8.93"), "torch.extension-toolkit"
    )
    assert f.status is Status.INFO and "minor versions differ" in f.title


def test_extension_toolkit_matching_passes_and_absent_says_nothing() -> None:
    f = the(
        _nvcc(fb.on(builders.h100_node(1), fb.torch_cu124()), "12.4.131"), "torch.extension-toolkit"
    )
    assert f.status is Status.PASS
    assert (
        finding(fb.on(builders.h100_node(1), fb.torch_cu124()), "torch.extension-toolkit") is None
    )


# --- tensorflow.cpu-build --------------------------------------------------------------------------


def test_tensorflow_cpu_on_an_h100_fails_with_the_and_cuda_install() -> None:
    f = the(fb.on(builders.h100_node(2), fb.tensorflow_cpu()), "tensorflow.cpu-build")
    assert f.status is Status.FAIL
    assert f.title.startswith("tensorflow-cpu 2.15.0 is a CPU-only build")
    rel = COMPAT.tensorflow.release("2.15")
    assert rel is not None and COMPAT.cuda_runs_on_driver(rel.cuda or "", H100_DRIVER)
    assert f.fix and f.fix.commands[0].startswith(
        f"pip uninstall -y tensorflow-cpu && {tf_install(rel.version)}"
    )
    assert "'tensorflow[and-cuda]==2.15.*'" in f.fix.text


def test_tensorflow_build_info_cpu_build_fails_and_cuda_build_passes() -> None:
    env = fb.with_tensorflow(fb.environment(), is_cuda_build=False, and_cuda=False)
    assert the(fb.on(builders.h100_node(1), env), "tensorflow.cpu-build").status is Status.FAIL
    f = the(
        fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())), "tensorflow.cpu-build"
    )
    assert f.status is Status.PASS and f.title == "tensorflow 2.15.0 is a CUDA 12.2 build, cuDNN 8"


def test_tensorflow_cpu_without_a_gpu_is_info() -> None:
    f = the(fb.on(builders.no_gpu_machine(), fb.tensorflow_cpu()), "tensorflow.cpu-build")
    assert f.status is Status.INFO


# --- tensorflow.legacy-gpu-package -------------------------------------------------------------------


def test_tensorflow_gpu_alone_warns_with_the_compat_note_and_the_replacement() -> None:
    env = fb.with_tensorflow(
        fb.environment(), "2.11.0", package="tensorflow-gpu", cuda="11.2", and_cuda=False
    )
    f = the(fb.on(builders.h100_node(1), env), "tensorflow.legacy-gpu-package")
    assert f.status is Status.WARN
    note = COMPAT.tensorflow.packages["tensorflow-gpu"].note
    assert any(e.startswith("compat data: " + note[:40]) for e in f.evidence)
    pick = {"version": "2.21", "install": TF_221}
    assert pick is not None
    assert f.fix and f.fix.commands[0].startswith(
        f"pip uninstall -y tensorflow-gpu && {pick['install']}"
    )


def test_tensorflow_gpu_beside_tensorflow_fails() -> None:
    env = fb.with_tensorflow(
        fb.environment(), "2.10.0", package="tensorflow-gpu", cuda="11.2", and_cuda=False
    )
    fb.with_tensorflow(env, "2.15.0")
    f = the(fb.on(builders.h100_node(1), env), "tensorflow.legacy-gpu-package")
    assert f.status is Status.FAIL
    assert "tensorflow-gpu 2.10.0 and tensorflow 2.15.0 are both installed" in f.title
    assert f.fix and f.fix.commands[0].startswith(
        "pip uninstall -y tensorflow tensorflow-gpu && pip install 'tensorflow[and-cuda]==2.15.*'"
    )


def test_no_tensorflow_gpu_no_finding() -> None:
    assert (
        finding(
            fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())),
            "tensorflow.legacy-gpu-package",
        )
        is None
    )


# --- tensorflow.windows-native -------------------------------------------------------------------------


def test_native_windows_tensorflow_2_15_fails_with_wsl2_or_the_last_windows_gpu_release() -> None:
    snap = fb.on(fb.windows_workstation(), fb.tensorflow_windows("2.15.0"))
    f = the(snap, "tensorflow.windows-native")
    last = COMPAT.tensorflow.windows_native_gpu_last
    row = next(r for r in COMPAT.tensorflow.windows_gpu if r.version == last)
    assert f.status is Status.FAIL
    assert (
        f.title
        == f"tensorflow 2.15.0 cannot use the GPU on native Windows: GPU support there ended with {last}"
    )
    assert f.fix and "Use WSL2" in f.fix.text
    assert f"pip install 'tensorflow=={last}.*'" in f.fix.commands
    assert (
        f"conda install -c conda-forge cudatoolkit={row.cuda} cudnn={row.cudnn}" in f.fix.commands
    )
    # The CPU-only build there is the same root cause, reported once.
    assert the(snap, "tensorflow.cpu-build").status is Status.SKIP


def test_native_windows_tensorflow_2_10_passes_and_linux_says_nothing() -> None:
    snap = fb.on(fb.windows_workstation(), fb.tensorflow_windows("2.10.0"))
    assert the(snap, "tensorflow.windows-native").status is Status.PASS
    assert the(snap, "tensorflow.cuda-driver").status is Status.PASS  # build_info '64_112' = 11.2
    assert (
        the(snap, "tensorflow.cpu-build").title == "tensorflow 2.10.0 is a CUDA 11.2 build, cuDNN 8"
    )
    assert (
        finding(
            fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())),
            "tensorflow.windows-native",
        )
        is None
    )


# --- tensorflow.cuda-driver --------------------------------------------------------------------------


def test_tensorflow_2_15_on_driver_515_fails_with_the_driver_or_a_release_for_it() -> None:
    f = the(fb.on(mb.t4_vm(), fb.with_tensorflow(fb.environment())), "tensorflow.cuda-driver")
    assert f.status is Status.FAIL
    assert f"Upgrade the NVIDIA driver to {min_driver('12.2')} or newer" in (
        f.fix.text if f.fix else ""
    )
    pick = {"version": "2.14", "install": TF_214}
    assert pick is not None
    assert f.fix and f.fix.steps[-1].option == 1
    assert f.fix.commands[-1] == f"pip uninstall -y tensorflow && {pick['install']}"


def test_tensorflow_cuda_from_the_compat_data_when_build_info_is_unread() -> None:
    env = fb.with_tensorflow(fb.environment())
    env.tensorflow = None  # whether it is a CUDA build is not known: tensorflow.cpu-build skips
    assert finding(fb.on(mb.t4_vm(), env), "tensorflow.cuda-driver") is None
    assert the(fb.on(mb.t4_vm(), env), "tensorflow.cpu-build").status is Status.SKIP
    env = fb.with_tensorflow(fb.environment(), cuda=None)
    f = the(fb.on(mb.t4_vm(), env), "tensorflow.cuda-driver")
    assert f.status is Status.FAIL
    assert "CUDA 12.2 from the tested configuration in the compat data" in f.evidence


# --- tensorflow.arch-support ------------------------------------------------------------------------


def test_tensorflow_on_h100_runs_from_ptx_info_with_the_jit_cache_fix() -> None:
    f = the(
        fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())),
        "tensorflow.arch-support",
    )
    assert f.status is Status.INFO
    assert "JIT-compiling its PTX" in f.title
    assert f.fix and "CUDA_CACHE_MAXSIZE" in f.fix.text


def test_tensorflow_ptx_only_with_a_driver_older_than_its_cuda_fails() -> None:
    env = fb.with_tensorflow(fb.environment(), "2.16.1", cuda="12.3")
    f = the(fb.on(mb.driver_535_node(1), env), "tensorflow.arch-support")
    assert f.status is Status.FAIL
    assert any("cannot JIT-compile for CUDA 12.3" in e for e in f.evidence)


def test_tensorflow_with_sass_for_the_gpu_passes_and_a_dropped_gpu_fails() -> None:
    f = the(
        fb.on(builders.workstation(), fb.with_tensorflow(fb.environment())),
        "tensorflow.arch-support",
    )
    assert f.status is Status.PASS  # RTX 3060 (8.6) runs sm_80
    env = fb.with_tensorflow(fb.environment(), "2.17.0", cuda="12.3", archs=fb.TF_217_ARCHS)
    snap = fb.on(builders.workstation(), env)
    snap.nvml.gpus[0].compute_capability = "5.2"  # a Maxwell card: dropped in 2.17
    f = the(snap, "tensorflow.arch-support")
    assert f.status is Status.FAIL
    assert f.fix and "TF_CUDA_COMPUTE_CAPABILITIES=5.2" in f.fix.text


# --- tensorflow.cuda-libraries ----------------------------------------------------------------------


def _without(env: PythonEnvironment, *names: str) -> PythonEnvironment:
    env.distributions = [d for d in env.distributions if d.name not in names]
    return env


def test_tensorflow_2_15_without_nvidia_cudnn_fails_with_the_and_cuda_install() -> None:
    env = _without(fb.with_tensorflow(fb.environment()), "nvidia-cudnn-cu12")
    f = the(fb.on(builders.h100_node(1), env), "tensorflow.cuda-libraries")
    row = COMPAT.tensorflow.and_cuda_for("2.15.0")
    assert row is not None
    pin = next(r for r in row.requires if r.startswith("nvidia-cudnn-cu12"))
    assert f.status is Status.FAIL
    assert "(nvidia-cudnn-cu12)" in f.title
    assert f"missing: {pin}" in f.evidence
    assert f.fix and f.fix.commands == ["pip install 'tensorflow[and-cuda]==2.15.0'"]


def test_tensorflow_with_its_wheels_passes_and_a_system_cudnn_of_its_major_stands_in() -> None:
    f = the(
        fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())),
        "tensorflow.cuda-libraries",
    )
    assert f.status is Status.PASS
    snap = fb.on(
        builders.h100_node(1), _without(fb.with_tensorflow(fb.environment()), "nvidia-cudnn-cu12")
    )
    snap.cudnn.libraries = [
        builders.library("cudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "8.9.7")
    ]
    f = the(snap, "tensorflow.cuda-libraries")
    assert f.status is Status.PASS
    assert any("a system copy is on the loader path: 8.9.7" in e for e in f.evidence)


def test_tensorflow_cudnn_of_another_major_counts_as_missing() -> None:
    env = fb.add(fb.with_tensorflow(fb.environment()), "nvidia-cudnn-cu12", "9.1.0.70")
    f = the(fb.on(builders.h100_node(1), env), "tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert any("(9.1.0.70 installed: another major)" in e for e in f.evidence)


def test_tensorflow_missing_only_optional_wheels_warns() -> None:
    env = _without(fb.with_tensorflow(fb.environment()), "nvidia-cuda-nvcc-cu12")
    assert the(fb.on(builders.h100_node(1), env), "tensorflow.cuda-libraries").status is Status.WARN


def test_tensorflow_before_2_14_needs_the_system_cuda_and_cudnn_it_was_built_with() -> None:
    rel = COMPAT.tensorflow.release("2.12")
    assert rel is not None and rel.cuda and rel.cudnn
    env = fb.with_tensorflow(
        fb.environment(), "2.12.0", cuda=rel.cuda, cudnn=rel.cudnn.split(".")[0], and_cuda=False
    )
    snap = fb.on(builders.h100_node(1), env)
    f = the(snap, "tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert f.fix and f"cudatoolkit={rel.cuda}" in f.fix.text
    snap.cuda.runtimes = [
        builders.library("cudart", "/usr/local/cuda-11.8/lib64/libcudart.so.11.0", "11.8.89")
    ]
    snap.cudnn.libraries = [
        builders.library("cudnn", "/usr/local/cuda-11.8/lib64/libcudnn.so.8", "8.6.0")
    ]
    assert the(snap, "tensorflow.cuda-libraries").status is Status.PASS


def test_tensorflow_loader_warnings_of_the_deep_pass_fail_even_when_the_wheels_are_there() -> None:
    env = fb.with_tensorflow(fb.environment())
    fb.imported(
        env,
        "tensorflow",
        0,
        warnings=[
            "W tensorflow/core/common_runtime/gpu/gpu_device.cc:2256] Cannot dlopen some GPU libraries.",
            "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file",
        ],
    )
    snap = fb.on(builders.h100_node(1), env, deep=True)
    f = the(snap, "tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert "libcudnn.so.8" in f.title
    # The smoke test points here rather than reporting the same cause again.
    assert the(snap, "frameworks.smoke-test").status is Status.SKIP


def test_tensorflow_trt_warnings_are_not_missing_cuda_libraries() -> None:
    """TensorRT is optional for TensorFlow: the libnvinfer lines every pip TF prints without
    it fail nothing (hiyouga/LlamaFactory#3673: training runs with 'TF-TRT Warning: Could not
    find TensorRT'; tensorflow/tensorflow#64809)."""
    env = fb.with_tensorflow(fb.environment())
    fb.imported(
        env,
        "tensorflow",
        1,
        warnings=[
            "W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could "
            "not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open "
            "shared object file: No such file or directory",
            "W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not "
            "find TensorRT",
        ],
    )
    snap = fb.on(builders.h100_node(1), env, deep=True)
    assert the(snap, "tensorflow.cuda-libraries").status is Status.PASS
    assert all(f.status is not Status.FAIL for f in run_checks(snap))


# --- tensorflow.python and tensorflow.keras ------------------------------------------------------------


def test_tensorflow_on_an_untested_python_fails_with_a_release_for_it() -> None:
    env = fb.with_tensorflow(fb.environment(version="3.12.3"))
    f = the(fb.on(builders.h100_node(1), env), "tensorflow.python")
    assert f.status is Status.FAIL
    assert f.fix and TF_221 in f.fix.text
    assert (
        the(
            fb.on(builders.h100_node(1), fb.with_tensorflow(fb.environment())), "tensorflow.python"
        ).status
        is Status.PASS
    )


def test_keras_2_with_tensorflow_2_16_warns_with_both_ways_out() -> None:
    env = fb.add(fb.with_tensorflow(fb.environment(), "2.16.1", cuda="12.3"), "keras", "2.15.0")
    f = the(fb.on(builders.h100_node(1), env), "tensorflow.keras")
    assert f.status is Status.WARN
    assert f.fix and "pip install -U 'keras>=3'" in f.fix.text and "tf-keras~=2.16.0" in f.fix.text
    assert "TF_USE_LEGACY_KERAS=1" in f.fix.text
    assert any(
        e.startswith("compat data: Keras 3 is the default Keras from TensorFlow 2.16")
        for e in f.evidence
    )


def test_keras_3_with_tensorflow_2_15_and_a_mismatched_tf_keras_warn() -> None:
    env = fb.add(fb.with_tensorflow(fb.environment()), "keras", "3.3.3")
    f = the(fb.on(builders.h100_node(1), env), "tensorflow.keras")
    assert f.status is Status.WARN and f.fix and f.fix.commands == ["pip install 'keras~=2.15.0'"]
    env = fb.add(
        fb.add(fb.with_tensorflow(fb.environment(), "2.16.1", cuda="12.3"), "keras", "3.3.3"),
        "tf-keras",
        "2.15.1",
    )
    f = the(fb.on(builders.h100_node(1), env), "tensorflow.keras")
    assert (
        f.status is Status.WARN and f.fix and f.fix.commands == ["pip install 'tf-keras~=2.16.0'"]
    )


def test_matching_keras_passes() -> None:
    env = fb.add(fb.with_tensorflow(fb.environment()), "keras", "2.15.0")
    assert the(fb.on(builders.h100_node(1), env), "tensorflow.keras").status is Status.PASS


# --- jax.cpu-build and jax.cuda-driver -----------------------------------------------------------------


def test_jax_without_its_cuda_plugin_fails_choosing_the_cuda_major_for_the_driver() -> None:
    env = fb.with_jax(fb.environment(), plugin=None)
    f = the(fb.on(builders.h100_node(1), env), "jax.cpu-build")
    assert f.status is Status.FAIL
    assert f.fix and f.fix.commands[0].startswith(
        'pip install -U "jax[cuda13]"'
    )  # driver 590: CUDA 13.1
    f = the(
        fb.on(mb.driver_535_node(1), fb.with_jax(fb.environment(), plugin=None)), "jax.cpu-build"
    )
    assert not COMPAT.cuda_runs_on_driver("13.0", "535.104.05")
    assert f.fix and f.fix.commands[0].startswith('pip install -U "jax[cuda12]"')


def test_jax_cuda13_is_not_offered_to_a_gpu_older_than_cuda_13_supports() -> None:
    f = the(
        fb.on(fb.pascal_workstation(), fb.with_jax(fb.environment(), plugin=None)), "jax.cpu-build"
    )
    rng = COMPAT.cc_range("13.0")
    assert rng is not None and Version("6.1") < rng.min_cc
    assert f.fix and '"jax[cuda12]"' in f.fix.text


def test_jax_with_its_plugin_passes_and_a_stale_plugin_fails_with_the_aligning_command() -> None:
    f = the(fb.on(builders.h100_node(1), fb.with_jax(fb.environment())), "jax.cpu-build")
    assert f.status is Status.PASS
    env = fb.add(fb.with_jax(fb.environment(), "0.4.31"), "jax-cuda12-plugin", "0.4.30")
    f = the(fb.on(builders.h100_node(1), env), "jax.cpu-build")
    # JAX does not load it at all: no GPU (issue 23). jaxlib stays; the plugin moves to it.
    assert f.status is Status.FAIL and "does not match jaxlib 0.4.31" in f.title
    assert f.fix is not None
    assert f.fix.commands == ['pip install "jax-cuda12-plugin==0.4.31"']
    (step,) = f.fix.steps
    assert [(c.name, c.from_version, c.to_version) for c in step.changes] == [
        ("jax-cuda12-plugin", "0.4.30", "0.4.31")
    ]


def test_jax_cuda13_plugin_on_driver_535_fails_with_the_cuda12_plugin_as_way_out() -> None:
    env = fb.with_jax(fb.environment(), "0.8.0", plugin=13)
    f = the(fb.on(mb.driver_535_node(1), env), "jax.cuda-driver")
    assert f.status is Status.FAIL
    assert f"Upgrade the NVIDIA driver to {min_driver('13.0')} or newer" in (
        f.fix.text if f.fix else ""
    )
    assert 'pip uninstall -y jax-cuda13-plugin jax-cuda13-pjrt && pip install -U "jax[cuda12]"' in (
        f.fix.text if f.fix else ""
    )
    env = fb.add(
        fb.with_jax(fb.environment(), "0.8.0", plugin=12), "nvidia-cuda-runtime-cu12", "12.9.79"
    )
    f = the(fb.on(builders.h100_node(1), env), "jax.cuda-driver")
    assert f.status is Status.PASS and "12.9" in f.title


# --- cupy.cuda-driver ----------------------------------------------------------------------------------


def test_cupy_for_cuda_13_on_driver_535_fails_with_the_cuda_12_wheel() -> None:
    env = fb.add(fb.environment(), "cupy-cuda13x", "13.6.0")
    f = the(fb.on(mb.driver_535_node(1), env), "cupy.cuda-driver")
    assert f.status is Status.FAIL
    assert f.fix and f.fix.steps[-1].option == 1
    assert f.fix.commands[-1] == "pip uninstall -y cupy-cuda13x && pip install cupy-cuda12x"


def test_cupy_wheels_that_fit_the_driver_pass() -> None:
    env = fb.add(fb.add(fb.environment(), "cupy-cuda12x", "13.6.0"), "cupy-cuda102", "9.6.0")
    f = the(fb.on(mb.driver_535_node(1), env), "cupy.cuda-driver")
    assert f.status is Status.PASS


# --- frameworks.library-shadowing --------------------------------------------------------------------


def _ld_cudnn(snap: Snapshot, version: str, folder: str = "/usr/local/cuda-12.1/lib64") -> Snapshot:
    snap.system.env["LD_LIBRARY_PATH"] = f"{folder}:/opt/tools/lib"
    snap.cudnn.libraries = [fb.ld_library_path_copy("cudnn", folder, version)]
    return snap


def test_an_older_cudnn_on_ld_library_path_than_torch_s_wheel_fails_with_the_cleaned_path() -> None:
    # cuDNN 9.0.0 before the nvidia-cudnn-cu12 9.1.0.70 torch 2.5.1+cu124 pins: torch refuses
    # a runtime cuDNN minor older than the one it was built with.
    snap = _ld_cudnn(fb.on(builders.h100_node(1), fb.torch_cu124()), "9.0.0")
    f = the(snap, "frameworks.library-shadowing")
    assert f.status is Status.FAIL
    assert "RUNPATH" in f.title and "older than the 9.1.0.70" in f.title
    assert any(
        "/usr/local/cuda-12.1/lib64/libcudnn.so.9 (cudnn 9.0.0) comes before nvidia-cudnn-cu12 9.1.0.70 (required by torch 2.5.1+cu124): older"
        in e
        for e in f.evidence
    )
    assert f.fix and "export LD_LIBRARY_PATH=/opt/tools/lib" in f.fix.commands
    assert f.subjects.paths == ["/usr/local/cuda-12.1/lib64"]


def test_a_newer_cudnn_on_ld_library_path_than_torch_s_wheel_warns() -> None:
    snap = _ld_cudnn(fb.on(builders.h100_node(1), fb.torch_cu124()), "9.3.0")
    f = the(snap, "frameworks.library-shadowing")
    assert f.status is Status.WARN
    assert "RUNPATH" in f.title
    assert f.fix and "export LD_LIBRARY_PATH=/opt/tools/lib" in f.fix.text


def test_shadowing_confirmed_or_cleared_by_what_the_deep_pass_saw_loaded() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, loaded_libraries=["/usr/local/cuda-12.1/lib64/libcudnn.so.9.0.0"])
    f = the(
        _ld_cudnn(fb.on(builders.h100_node(1), env, deep=True), "9.0.0"),
        "frameworks.library-shadowing",
    )
    assert f.status is Status.FAIL and "confirmed" in f.title
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, loaded_libraries=[f"{fb.site()}/nvidia/cudnn/lib/libcudnn.so.9"])
    f = the(
        _ld_cudnn(fb.on(builders.h100_node(1), env, deep=True), "9.0.0"),
        "frameworks.library-shadowing",
    )
    assert f.status is Status.INFO


def test_shadowing_is_not_judged_without_the_library_facts() -> None:
    snap = mb.probe(
        _ld_cudnn(fb.on(builders.h100_node(1), fb.torch_cu124()), "9.0.0"), "libraries", "timeout"
    )
    assert the(snap, "frameworks.library-shadowing").status is Status.SKIP


def test_same_version_or_another_soname_on_ld_library_path_does_not_shadow() -> None:
    assert (
        the(
            _ld_cudnn(fb.on(builders.h100_node(1), fb.torch_cu124()), "9.1.0"),
            "frameworks.library-shadowing",
        ).status
        is Status.PASS
    )
    assert (
        the(
            _ld_cudnn(fb.on(builders.h100_node(1), fb.torch_cu124()), "8.9.2"),
            "frameworks.library-shadowing",
        ).status
        is Status.PASS
    )


# --- frameworks.nvidia-conflicts --------------------------------------------------------------------------


def test_torch_and_tensorflow_pinning_different_cudnn_warn_naming_who_needs_what() -> None:
    env = fb.with_tensorflow(fb.environment())
    fb.with_torch(env, pins=fb.TORCH_251_CU124_PINS)  # pip installed torch last: its pins won
    f = the(fb.on(builders.h100_node(1), env), "frameworks.nvidia-conflicts")
    assert f.status is Status.WARN
    line = next(e for e in f.evidence if e.startswith("nvidia-cudnn-cu12 "))
    assert line == (
        "nvidia-cudnn-cu12 9.1.0.70 is installed: tensorflow 2.15.0 requires ==8.9.4.25 (not met); "
        "torch 2.5.1+cu124 requires ==9.1.0.70"
    )
    assert f.fix and "python3 -m venv ~/venvs/tensorflow" in f.fix.text
    assert "'tensorflow[and-cuda]==2.15.0'" in f.fix.text


def test_conflicts_fix_names_a_tensorflow_whose_pins_accept_torch_s() -> None:
    env = fb.with_tensorflow(fb.environment())
    fb.with_torch(env, "2.7.1+cu128", "12.8", pins=fb.TORCH_271_CU128_PINS)
    f = the(fb.on(builders.h100_node(1), env), "frameworks.nvidia-conflicts")
    assert f.status is Status.WARN
    assert (
        f.fix
        and "or install a TensorFlow whose pins agree: `pip install 'tensorflow[and-cuda]==2.20.0'`"
        in f.fix.text
    )
    # ... and with that TensorFlow, they agree.
    env = fb.with_tensorflow(fb.environment(), "2.20.0", cuda="12.5", cudnn="9")
    fb.with_torch(env, "2.7.1+cu128", "12.8", pins=fb.TORCH_271_CU128_PINS)
    f = the(fb.on(builders.h100_node(1), env), "frameworks.nvidia-conflicts")
    assert f.status is Status.PASS


def test_one_framework_alone_has_no_conflict_finding() -> None:
    assert (
        finding(fb.on(builders.h100_node(1), fb.torch_cu124()), "frameworks.nvidia-conflicts")
        is None
    )


# --- frameworks.device-count ----------------------------------------------------------------------------


def test_frameworks_seeing_every_gpu_pass_and_fewer_warn() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 8, version="2.5.1+cu124")
    f = the(fb.on(builders.h100_node(8), env, deep=True), "frameworks.device-count")
    assert f.status is Status.PASS and f.title == "torch 2.5.1+cu124 see(s) all 8 GPU(s)"
    env = fb.torch_cu124()
    fb.imported(env, "torch", 4, version="2.5.1+cu124")
    f = the(fb.on(builders.h100_node(8), env, deep=True), "frameworks.device-count")
    assert f.status is Status.WARN
    assert "torch 2.5.1+cu124 see(s) fewer GPUs than the 8" in f.title


def test_device_count_under_mig_is_not_compared_and_without_deep_says_nothing() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1)
    f = the(
        fb.on(builders.node([builders.a100_mig(0), builders.a100_mig(1)]), env, deep=True),
        "frameworks.device-count",
    )
    assert f.status is Status.PASS and "MIG" in f.title
    assert (
        finding(fb.on(builders.h100_node(8), fb.torch_cu124()), "frameworks.device-count") is None
    )


# --- frameworks.smoke-test ------------------------------------------------------------------------------


def test_smoke_test_without_deep_is_skipped_pointing_at_deep() -> None:
    f = the(fb.on(builders.h100_node(1), fb.torch_cu124()), "frameworks.smoke-test")
    assert f.status is Status.SKIP and "--deep" in f.title


def test_smoke_test_passing_on_every_gpu_passes() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 8, version="2.5.1+cu124")
    f = the(fb.on(builders.h100_node(8), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.PASS
    assert f.title == "torch 2.5.1+cu124: the smoke test passed on 8 device(s)"


def test_a_missing_library_at_import_is_installed_at_the_framework_s_own_pin() -> None:
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        0,
        status="import_error",
        version="2.5.1+cu124",
        error="ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert f.title == "import torch fails: libcudnn.so.9 is missing"
    assert f.fix and f.fix.commands == ["pip install 'nvidia-cudnn-cu12==9.1.0.70'"]
    assert "what torch 2.5.1+cu124 requires" in f.fix.text


def test_out_of_memory_names_the_processes_holding_the_gpu() -> None:
    snap = builders.h100_node(2)
    builders.with_process(snap.nvml.gpus[0], 4242, "python3", 80000)
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        2,
        failures={0: "OutOfMemoryError: CUDA out of memory. Tried to allocate 16.00 KiB"},
    )
    f = the(fb.on(snap, env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert "PID 4242 python3" in f.title
    assert f.fix and "kill 4242" in f.fix.text


def test_busy_or_unavailable_names_the_exclusive_compute_mode() -> None:
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].compute_mode = "exclusive_process"
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        1,
        failures={0: "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"},
    )
    f = the(fb.on(snap, env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and "exclusive_process" in f.title
    assert f.fix and "sudo nvidia-smi -i 0 -c DEFAULT" in f.fix.text


def test_no_kernel_image_points_to_the_same_version_built_with_the_gpu() -> None:
    env = fb.with_torch(fb.environment(), "2.7.1+cu128", "12.8")
    fb.imported(
        env,
        "torch",
        1,
        failures={
            0: "RuntimeError: CUDA error: no kernel image is available for execution on the device"
        },
    )
    f = the(fb.on(fb.pascal_workstation(), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and "no kernel image for compute capability 6.1" in f.title
    # torch.toml, release 2.7: the cu126 variant still carries sm_61
    assert f.fix and (
        "pip install 'torch==2.7.1+cu126' --index-url https://download.pytorch.org/whl/cu126"
        in f.fix.text
    )


@pytest.mark.parametrize(
    ("error", "fix_part"),
    [
        ("RuntimeError: CUDA error: system not yet initialized", "nvidia-fabricmanager"),
        (
            "RuntimeError: CUDA error: forward compatibility was attempted on non supported HW",
            "cuda-compat",
        ),
    ],
)
def test_cuda_errors_with_a_known_cause_get_its_fix(error: str, fix_part: str) -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, failures={0: error})
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and fix_part in (f.fix.text if f.fix else "")


def test_a_crash_names_the_step_it_died_in() -> None:
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        1,
        status="crashed",
        error="crashed with SIGSEGV in torch.backends.cudnn.version: Segmentation fault",
        failure=ChildFailure(
            "crashed", "torch.backends.cudnn.version", signal="SIGSEGV", stderr_tail="Segfault"
        ),
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert f.title == "torch crashed in torch.backends.cudnn.version"
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        1,
        status="timeout",
        error="timed out after 60 s in smoke cuda:0",
        failure=ChildFailure("timeout", "smoke cuda:0"),
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and f.title == "torch timed out in smoke cuda:0"
    assert f.fix and "persistence mode" in f.fix.text


def test_no_gpu_for_torch_while_the_driver_has_some_fails_unless_another_check_names_why() -> None:
    env = fb.torch_cu124()
    fb.imported(
        env,
        "torch",
        0,
        available=False,
        warnings=["UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount()"],
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and "sees no GPU" in f.title
    assert any("cudaGetDeviceCount" in e for e in f.evidence)
    env = fb.torch_cpu()
    fb.imported(env, "torch", 0, available=False)
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.SKIP and "torch.cpu-build" in f.title


def test_no_gpu_machine_deep_pass_is_info() -> None:
    env = fb.torch_cpu()
    fb.imported(env, "torch", 0, available=False)
    f = the(fb.on(builders.no_gpu_machine(), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.INFO


def test_an_import_error_without_a_missing_library_reinstalls_from_the_right_index() -> None:
    snap = fb.on(builders.h100_node(1), fb.torch_cu124(), deep=True)
    snap.system.env["LD_LIBRARY_PATH"] = "/usr/local/cuda-12.1/lib64"
    env = snap.environments[0]
    fb.imported(
        env,
        "torch",
        0,
        status="import_error",
        error="ImportError: libtorch_cuda.so: undefined symbol: ncclCommRegister",
    )
    f = the(snap, "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert any("LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64" in e for e in f.evidence)
    assert f.fix and f.fix.text == (
        "Reinstall it: `pip install --force-reinstall 'torch==2.5.1' "
        "--index-url https://download.pytorch.org/whl/cu124`"
    )


def test_jax_falling_back_to_the_cpu_names_jax_s_own_warning() -> None:
    env = fb.with_jax(fb.environment())
    fb.imported(
        env,
        "jax",
        1,
        version="0.4.30",
        backend="cpu",
        warnings=[
            "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu."
        ],
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and "sees no GPU" in f.title
    assert any("Falling back to cpu" in e for e in f.evidence)
    assert finding(fb.on(builders.h100_node(1), env, deep=True), "frameworks.device-count") is None


def test_cupy_runtime_too_new_for_the_driver_is_reported_once_by_cupy_cuda_driver() -> None:
    env = fb.add(fb.environment(), "cupy-cuda12x", "13.6.0")
    fb.imported(
        env,
        "cupy",
        0,
        status="error",
        cuda="12.8",
        available=False,
        error="cupy.cuda.runtime.getDeviceCount: CUDARuntimeError: cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version",
    )
    snap = fb.on(mb.t4_vm(), env, deep=True)
    f = the(snap, "cupy.cuda-driver")
    assert f.status is Status.FAIL and "cupy-cuda12x 13.6.0 (CUDA 12.8)" in f.title
    assert f"Upgrade the NVIDIA driver to {min_driver('12.8')} or newer" in (
        f.fix.text if f.fix else ""
    )
    smoke = the(snap, "frameworks.smoke-test")
    assert smoke.status is Status.SKIP and "cupy.cuda-driver" in smoke.title


def test_tensorflow_skipping_a_gpu_it_has_no_code_for_is_named_as_the_cause() -> None:
    snap = builders.node(
        [builders.rtx_3060(0), builders.rtx_3060(1)], driver="570.124.04", cuda=12080
    )
    snap.nvml.gpus[1].compute_capability = "5.2"
    env = fb.with_tensorflow(fb.environment(), "2.17.0", cuda="12.3", archs=fb.TF_217_ARCHS)
    fb.imported(env, "tensorflow", 1, version="2.17.0")
    f = the(fb.on(snap, env, deep=True), "frameworks.device-count")
    assert f.status is Status.WARN
    assert any(
        e.startswith("TensorFlow ignores GPUs it has no code for: GPU 1") for e in f.evidence
    )
    assert f.fix and "tensorflow.arch-support" in f.fix.text


# --- several frameworks in one environment (issue 23: FAIL only when the job cannot run) -------


def test_an_incidental_cpu_jaxlib_beside_a_cuda_torch_warns_on_jax_only() -> None:
    # A CUDA torch (the framework the user runs) and a CPU-only jaxlib another package pulled in.
    env = fb.with_jax(fb.with_torch(fb.environment()), plugin=None)
    snap = fb.on(builders.h100_node(1), env)
    f = the(snap, "jax.cpu-build")
    assert f.status is Status.WARN
    assert f.title.endswith("(code using torch 2.5.1+cu124 here can)")
    assert f.fix is not None and "jax[cuda" in f.fix.text
    assert all(x.status is not Status.FAIL for x in run_checks(snap))


def test_a_cpu_jaxlib_alone_still_fails() -> None:
    snap = fb.on(builders.h100_node(1), fb.with_jax(fb.environment(), plugin=None))
    assert the(snap, "jax.cpu-build").status is Status.FAIL


def test_a_cpu_torch_beside_a_cuda_torch_that_saw_no_gpu_still_fails() -> None:
    # --deep imported the CUDA TensorFlow and it saw no GPU: it does not count as working.
    env = fb.with_tensorflow(fb.with_torch(fb.environment(), version="2.5.1+cpu", cuda=None))
    fb.imported(env, "tensorflow", 0)
    snap = fb.on(builders.h100_node(1), env, deep=True)
    assert the(snap, "torch.cpu-build").status is Status.FAIL


# --- forward compatibility: judge against the libcuda that is loaded (issue 23) ------------------


def _forward_compat_node() -> Snapshot:
    """An H100 on an R570 driver (CUDA 12.8) whose loaded libcuda is the cuda-compat package's
    CUDA 13.0 one, as NGC images set it up: cuInit succeeds with it."""
    snap = builders.node([builders.h100(0)], driver="570.172.08", cuda=12080)
    snap.system.nvidia_module_version = "570.172.08"
    snap.cuda.driver.driver_version = 13000
    snap.cuda.driver.library_path = "/usr/local/cuda-13.0/compat/libcuda.so.1"
    return snap


def test_a_cuda_13_torch_runs_on_r570_through_a_forward_compatible_libcuda() -> None:
    env = fb.with_torch(fb.environment(), version="2.9.0+cu130", cuda="13.0")
    f = the(fb.on(_forward_compat_node(), env), "torch.cuda-driver")
    assert f.status is Status.PASS
    assert "/usr/local/cuda-13.0/compat/libcuda.so.1" in " ".join([f.title, *f.evidence])


def test_without_the_compat_libcuda_the_same_torch_fails_on_r570() -> None:
    snap = _forward_compat_node()
    snap.cuda.driver.driver_version = 12080  # the driver's own libcuda
    env = fb.with_torch(fb.environment(), version="2.9.0+cu130", cuda="13.0")
    assert the(fb.on(snap, env), "torch.cuda-driver").status is Status.FAIL


# --- old jaxlib local versions (issue 23) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "cuda"),
    [
        ("0.1.65+cuda112", "11.2"),  # the 0.1.x wheels: major and minor run together
        ("0.1.57+cuda102", "10.2"),
        ("0.1.55+cuda92", "9.2"),
        ("0.1.74+cuda11.cudnn82", "11"),  # later: the major alone, then cuDNN 8.2
        ("0.4.14+cuda12.cudnn89", "12"),
        ("0.4.30", None),
    ],
)
def test_jaxlib_local_tags_name_their_cuda(version: str, cuda: str | None) -> None:
    assert jaxlib_cuda(version) == cuda


def test_a_cuda112_jaxlib_is_judged_as_cuda_11_2_not_112() -> None:
    env = fb.environment()
    fb.add(env, "jax", "0.2.10")
    fb.add(env, "jaxlib", "0.1.65+cuda112")
    # Driver 450.80.02: CUDA 11.0's; CUDA 11.2 runs there through minor version compatibility.
    snap = builders.node([builders.h100(0)], driver="450.80.02", cuda=11000)
    f = the(fb.on(snap, env), "jax.cuda-driver")
    text = " ".join([f.title, *f.evidence])
    assert "CUDA 11.2" in text and "112" not in text.replace("0.1.65+cuda112", "")
