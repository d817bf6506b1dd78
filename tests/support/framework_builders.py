"""Python environments with frameworks, for the framework check tests, on top of the machines
of builders.py and more_builders.py (which stay untouched).

Versions, local tags, build facts and pins are real ones, each named beside its builder:
torch's version.py and Requires-Dist of real wheels, TensorFlow's build_info and its
tensorflow[and-cuda] pins from the compat data (compat/tensorflow.toml), the package names
PyPI really has. Each builder returns a fresh environment; a test changes the one fact it is
about.
"""

from __future__ import annotations

import sys

from packaging.version import Version

from gpucheck import compat
from gpucheck.model.environments import (
    Distribution,
    FrameworkRuntime,
    PythonEnvironment,
    SmokeTest,
    TensorflowBuild,
    TorchBuild,
)
from gpucheck.model.snapshot import GpuFacts, LibraryCopy, Snapshot
from gpucheck.model.types import ImportStatus
from support import builders
from support.builders import MIB

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

VENV = "/home/user/.venv"
LINUX_X86 = 'platform_system == "Linux" and platform_machine == "x86_64"'

# torch 2.5.1+cu124 (also PyPI's plain torch==2.5.1 on Linux x86_64): its Requires-Dist lines
# for the NVIDIA libraries, as pip resolves them ("Collecting nvidia-cudnn-cu12==9.1.0.70 (from
# torch)"), with the wheel's marker.
TORCH_251_CU124_PINS = (
    "nvidia-cuda-nvrtc-cu12==12.4.127",
    "nvidia-cuda-runtime-cu12==12.4.127",
    "nvidia-cuda-cupti-cu12==12.4.127",
    "nvidia-cudnn-cu12==9.1.0.70",
    "nvidia-cublas-cu12==12.4.5.8",
    "nvidia-cufft-cu12==11.2.1.3",
    "nvidia-curand-cu12==10.3.5.147",
    "nvidia-cusolver-cu12==11.6.1.9",
    "nvidia-cusparse-cu12==12.3.1.170",
    "nvidia-nccl-cu12==2.21.5",
    "nvidia-nvtx-cu12==12.4.127",
    "nvidia-nvjitlink-cu12==12.4.127",
)
# torch 2.7.1+cu128: the NVIDIA wheels a `pip install torch==2.7.1 --index-url .../cu128`
# installs (pip freeze of such an environment).
TORCH_271_CU128_PINS = (
    "nvidia-cublas-cu12==12.8.3.14",
    "nvidia-cuda-cupti-cu12==12.8.57",
    "nvidia-cuda-nvrtc-cu12==12.8.61",
    "nvidia-cuda-runtime-cu12==12.8.57",
    "nvidia-cudnn-cu12==9.7.1.26",
    "nvidia-cufft-cu12==11.3.3.41",
    "nvidia-cufile-cu12==1.13.0.11",
    "nvidia-curand-cu12==10.3.9.55",
    "nvidia-cusolver-cu12==11.7.2.55",
    "nvidia-cusparse-cu12==12.5.7.53",
    "nvidia-cusparselt-cu12==0.6.3",
    "nvidia-nccl-cu12==2.26.2",
    "nvidia-nvjitlink-cu12==12.8.61",
    "nvidia-nvtx-cu12==12.8.55",
)
# TensorFlow's build_info cuda_compute_capabilities of the 2.15/2.16 wheels (the
# TF_CUDA_COMPUTE_CAPABILITIES of their .bazelrc; tf.sysconfig.get_build_info() of 2.16.1
# prints ['sm_50', 'sm_60', 'sm_70', 'sm_80', 'compute_90']).
TF_215_ARCHS = ["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"]
# TensorFlow 2.17: Maxwell (5.x) removed, 8.9 added (release notes, compat/tensorflow.toml).
TF_217_ARCHS = ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]


def site(prefix: str = VENV, python: str = "3.11") -> str:
    return f"{prefix}/lib/python{python}/site-packages"


def environment(
    prefix: str = VENV,
    version: str = "3.11.9",
    origin: str = "virtualenv",
    platform: str = "linux",
) -> PythonEnvironment:
    """An empty virtual environment (the active VIRTUAL_ENV) on Linux."""
    windows = platform == "win32"
    mm = ".".join(version.split(".")[:2])
    return PythonEnvironment(
        python=f"{prefix}\\Scripts\\python.exe" if windows else f"{prefix}/bin/python",
        origin=origin,
        version=version,
        prefix=prefix,
        platform=platform,
        site_packages=[f"{prefix}\\Lib\\site-packages" if windows else site(prefix, mm)],
    )


def add(env: PythonEnvironment, name: str, version: str, requires: list[str] | None = None):  # type: ignore[no-untyped-def]
    """Install one distribution (replacing one of the same name)."""
    env.distributions = [d for d in env.distributions if d.name != name]
    location = env.site_packages[0] if env.site_packages else None
    env.distributions.append(Distribution(name, version, location, requires or []))
    return env


def install_pins(env: PythonEnvironment, pins: tuple[str, ...] | list[str]) -> PythonEnvironment:
    """The NVIDIA wheels a framework's pins bring, as pip installs them (== pins only)."""
    for pin in pins:
        name, _, version = pin.partition("==")
        if version:
            add(env, name, version)
    return env


# --- PyTorch ----------------------------------------------------------------------------------


def with_torch(
    env: PythonEnvironment,
    version: str = "2.5.1+cu124",
    cuda: str | None = "12.4",
    hip: str | None = None,
    pins: tuple[str, ...] = (),
) -> PythonEnvironment:
    """torch with its version.py (read as text by the probe) and, given pins, their wheels."""
    add(env, "torch", version, [f"{p}; {LINUX_X86}" for p in pins])
    env.torch = TorchBuild(
        version=version,
        cuda=cuda,
        hip=hip,
        git_version="a8d6afb511a69687bbb2b7e88a3cf67917e1697e",
        path=f"{env.site_packages[0]}/torch/version.py",
    )
    return install_pins(env, pins)


def torch_cu124(env: PythonEnvironment | None = None) -> PythonEnvironment:
    """torch 2.5.1+cu124 with the NVIDIA wheels it pins."""
    return with_torch(env or environment(), pins=TORCH_251_CU124_PINS)


def torch_cpu(
    env: PythonEnvironment | None = None, version: str = "2.9.1+cpu"
) -> PythonEnvironment:
    """PyTorch's CPU wheel (download.pytorch.org/whl/cpu): version.py says cuda = None."""
    return with_torch(env or environment(), version=version, cuda=None)


# --- TensorFlow --------------------------------------------------------------------------------


def _read_and_cuda_pins() -> dict[str, list[str]]:
    """tensorflow[and-cuda]'s Requires-Dist pins by exact release, read straight off
    compat/tensorflow.toml's [[and_cuda]] rows (not through the compat code under test)."""
    text = (compat.data_dir() / "tensorflow.toml").read_text(encoding="utf-8")
    return {row["version"]: list(row["requires"]) for row in tomllib.loads(text)["and_cuda"]}


AND_CUDA_PINS = _read_and_cuda_pins()


def and_cuda_requires(version: str) -> list[str]:
    """tensorflow's Requires-Dist for its and-cuda extra, from the compat data's pins."""
    assert version in AND_CUDA_PINS, f"compat/tensorflow.toml has no [[and_cuda]] {version}"
    return [f'{r}; extra == "and-cuda"' for r in AND_CUDA_PINS[version]]


def with_tensorflow(
    env: PythonEnvironment,
    version: str = "2.15.0",
    package: str = "tensorflow",
    is_cuda_build: bool | None = True,
    cuda: str | None = "12.2",
    cudnn: str | None = "8",
    archs: list[str] | None = None,
    and_cuda: bool = True,
) -> PythonEnvironment:
    """TensorFlow with its build_info.py and, with and_cuda, the tensorflow[and-cuda] wheels
    (pins from compat/tensorflow.toml)."""
    requires = and_cuda_requires(version) if package == "tensorflow" and and_cuda else []
    add(env, package, version, requires)
    env.tensorflow = TensorflowBuild(
        is_cuda_build=is_cuda_build,
        is_rocm_build=False,
        cuda_version=cuda if is_cuda_build else None,
        cudnn_version=cudnn if is_cuda_build else None,
        cuda_compute_capabilities=(TF_215_ARCHS if archs is None else archs)
        if is_cuda_build
        else [],
        path=f"{env.site_packages[0]}/tensorflow/python/platform/build_info.py",
    )
    if and_cuda and requires:
        install_pins(env, [p for p in AND_CUDA_PINS[version] if p.startswith("nvidia-")])
    return env


def tensorflow_cpu(
    env: PythonEnvironment | None = None, version: str = "2.15.0"
) -> PythonEnvironment:
    """The tensorflow-cpu package: build_info says is_cuda_build = False."""
    return with_tensorflow(
        env or environment(), version, package="tensorflow-cpu", is_cuda_build=False
    )


def tensorflow_windows(version: str = "2.15.0") -> PythonEnvironment:
    """Native Windows: tensorflow (which up to 2.18.0 pulls tensorflow-intel, compat data) and
    a CPU build_info; TF 2.10 and older were GPU builds there (build_info cuda '64_112', which
    the static probe writes as 11.2)."""
    env = environment(prefix="C:\\Users\\me\\venv", version="3.10.11", platform="win32")
    # compat/tensorflow.toml: windows_native_gpu_last = "2.10"
    gpu = Version(version) < Version("2.11")
    with_tensorflow(
        env,
        version,
        is_cuda_build=gpu,
        cuda="11.2" if gpu else None,
        cudnn="8" if gpu else None,
        archs=["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"] if gpu else [],
        and_cuda=False,
    )
    return add(env, "tensorflow-intel", version) if not gpu else env


# --- JAX and CuPy -----------------------------------------------------------------------------------


def with_jax(
    env: PythonEnvironment, version: str = "0.4.30", plugin: int | None = 12
) -> PythonEnvironment:
    """jax + jaxlib (CPU) and, given a CUDA major, the PJRT plugin pair `jax[cudaNN]` installs."""
    add(env, "jax", version)
    add(env, "jaxlib", version)
    if plugin is not None:
        add(env, f"jax-cuda{plugin}-plugin", version)
        add(env, f"jax-cuda{plugin}-pjrt", version)
    return env


# --- machines --------------------------------------------------------------------------------------


def gtx_1080(index: int = 0) -> GpuFacts:
    """A GeForce GTX 1080 (Pascal, GP104): the field layout of the GP104 capture
    telegraf/gtx-1070-ti.xml (no ECC, no MIG, idle at PCIe gen 1), the 1080's name and 8 GiB;
    compute capability 6.1 per compat/gpus.toml."""
    gpu = builders.rtx_3060(index)
    gpu.name = "NVIDIA GeForce GTX 1080"
    gpu.uuid = "GPU-f9ba66fc-a7f5-94c5-da19-019ef2f9c665"
    gpu.memory_total, gpu.memory_used = 8192 * MIB, 42 * MIB
    gpu.memory_free = gpu.memory_total - gpu.memory_used
    gpu.compute_capability, gpu.architecture = "6.1", "Pascal"
    gpu.pcie_gen_max = 3
    gpu.temperature_c = 39
    return gpu


def pascal_workstation() -> Snapshot:
    """A GTX 1080 on the 580 driver branch, the last for Pascal (580.95.05: CUDA 13.0)."""
    snap = builders.node([gtx_1080()], driver="580.95.05", cuda=13000)
    snap.system.nvidia_module_version = "580.95.05"
    return snap


def rtx_5090(index: int = 0) -> GpuFacts:
    """A GeForce RTX 5090 (Blackwell, GB202), from the GB202 capture
    telegraf/pro-6000-maxq-blackwell-v13.xml (driver 590.44.01, CUDA 13.1) with the 5090's name
    and 32 GiB; compute capability 12.0 per compat/gpus.toml."""
    gpu = builders.rtx_3060(index)
    gpu.name = "NVIDIA GeForce RTX 5090"
    gpu.uuid = "GPU-12345678-aaaa-bbbb-cccc-0123456789ab"
    gpu.memory_total, gpu.memory_used = 32607 * MIB, 2 * MIB
    gpu.memory_free = gpu.memory_total - gpu.memory_used
    gpu.compute_capability, gpu.architecture = "12.0", "Blackwell"
    gpu.temperature_c = 24
    return gpu


def blackwell_workstation() -> Snapshot:
    snap = builders.node([rtx_5090()], driver="590.44.01", cuda=13010)
    snap.system.nvidia_module_version = "590.44.01"
    return snap


def windows_workstation() -> Snapshot:
    """nvidia_gpu_exporter/windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.txt: an RTX
    2080 SUPER (Turing, 7.5) on Windows, driver 591.86, CUDA 13.1."""
    gpu = builders.rtx_3060(0)
    gpu.name, gpu.compute_capability, gpu.architecture = (
        "NVIDIA GeForce RTX 2080 SUPER",
        "7.5",
        "Turing",
    )
    gpu.pci_bus_id = "00000000:0C:00.0"
    gpu.memory_total = 8192 * MIB
    snap = builders.node([gpu], driver="591.86", cuda=13010)
    snap.system.os, snap.system.kernel = "Windows", "10.0.22631"
    snap.system.nvidia_module_version = None
    return snap


def on(snap: Snapshot, *envs: PythonEnvironment, deep: bool = False) -> Snapshot:
    """`snap` with these environments probed (and imported, with deep)."""
    snap.environments = list(envs)
    snap.deep = deep
    return snap


# --- the deep pass -----------------------------------------------------------------------------------


def imported(
    env: PythonEnvironment,
    framework: str,
    devices: int,
    *,
    version: str | None = None,
    cuda: str | None = None,
    status: ImportStatus = "ok",
    error: str | None = None,
    available: bool | None = None,
    failures: dict[int, str] | None = None,
    **facts: object,
) -> FrameworkRuntime:
    """What the deep probe records for `framework` seeing `devices` GPUs, each passing the
    smoke test unless `failures` gives its error."""
    names = {
        "torch": "cuda:{}",
        "tensorflow": "/GPU:{}",
        "jax": "cuda:{}",
        "cupy": "cuda:{}",
    }
    failures = failures or {}
    rt = FrameworkRuntime(
        framework=framework,
        status=status,
        error=error,
        import_seconds=1.8,
        version=version,
        cuda_available=devices > 0 if available is None else available,
        device_count=devices,
        cuda_version=cuda,
        smoke_tests=[
            SmokeTest(names[framework].format(i), i not in failures, failures.get(i), 0.05)
            for i in range(devices)
        ],
    )
    for key, value in facts.items():
        setattr(rt, key, value)
    env.runtimes.append(rt)
    return rt


def ld_library_path_copy(name: str, folder: str, version: str) -> LibraryCopy:
    """A library copy found through LD_LIBRARY_PATH (system toolkit, not a wheel)."""
    stem = "libcudnn" if name == "cudnn" else "libcudart"
    filename = f"{stem}.so.{version.split('.')[0]}"
    return builders.library(name, f"{folder}/{filename}", version, origin="ld_library_path")


def tensorrt(env: PythonEnvironment, version: str, major: int = 12) -> PythonEnvironment:
    """pip install tensorrt: the meta package, tensorrt-cuNN and its -libs / -bindings."""
    add(env, "tensorrt", version, [f"tensorrt-cu{major}=={version}"])
    add(env, f"tensorrt-cu{major}", version)
    add(env, f"tensorrt-cu{major}-libs", version, [f"nvidia-cuda-runtime-cu{major}"])
    add(env, f"tensorrt-cu{major}-bindings", version)
    return env
