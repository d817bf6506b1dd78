"""The facts of each Python environment gpucheck looked at: the distributions that matter, the
frameworks' build files (read, never executed), and with --deep what importing them showed.
Part of the snapshot (model/snapshot.py), kept apart to keep each file readable."""

# No `from __future__ import annotations`: msgspec would compile and evaluate every string
# annotation when it first decodes these records, on every `doctor --from`.
from msgspec import Struct, field

from gpucheck.model.library_code import LibraryCode
from gpucheck.model.types import ChildFailure, Count, ImportStatus

# --- frameworks, per Python environment ---------------------------------------------------------


class Distribution(Struct):
    """An installed distribution that matters here (a framework, keras, nvidia-*, cupy-*)."""

    name: str  # normalised: lower case, "-" for "_" and "." ("nvidia-cudnn-cu12")
    version: str
    location: str | None = None  # the site folder it is installed in
    requires: list[str] = field(default_factory=list)  # its Requires-Dist lines (frameworks only)
    # Where conda installed it (conda-meta): its build string, which names the CUDA variant
    # ("cuda120py312h4008524_201"), and its depends on cudnn, cudatoolkit, cuda-version, nccl.
    build: str | None = None
    conda_depends: list[str] = field(default_factory=list)


class TorchBuild(Struct):
    """torch/version.py, read as text (never executed)."""

    version: str | None = None  # "2.5.1+cu124"
    cuda: str | None = None  # "12.4"; None: a CPU (or ROCm) build
    hip: str | None = None  # ROCm builds
    git_version: str | None = None
    path: str | None = None  # the file read


class TensorflowBuild(Struct):
    """tensorflow/python/platform/build_info.py, read as text (never executed)."""

    is_cuda_build: bool | None = None
    is_rocm_build: bool | None = None
    cuda_version: str | None = None  # "12.2"
    cudnn_version: str | None = None  # "8"
    cuda_compute_capabilities: list[str] = field(default_factory=list)  # ["sm_60", "compute_90"]
    path: str | None = None


class ExtensionBuild(Struct):
    """What an extension built against torch (or a TensorRT wheel) says about its own build,
    read from files (version.py, cpp_lib.json, the wheel's name in direct_url.json)."""

    name: str  # its distribution: torchvision, xformers, flash-attn, ...
    version: str | None = None
    cuda: str | None = None  # the CUDA it was built for: "12.4"
    torch: str | None = None  # the torch it was built against: "2.5.1+cu124", "2.4"
    cxx11_abi: bool | None = None  # flash-attn wheels: built with the C++11 ABI
    source: str | None = None  # the file or wheel name these came from


class ExtensionImport(Struct):
    """Importing one extension in its own child process (doctor --deep)."""

    name: str  # the distribution
    module: str  # what was imported: flash_attn, xformers.ops, ...
    status: ImportStatus
    error: str | None = None
    failure: ChildFailure | None = None  # the child timed out, crashed or exited badly
    seconds: float | None = None
    detail: str | None = None  # what a working import reported (tensorrt: an engine was built)


class SmokeTest(Struct):
    """A tiny real operation on one device: allocate, matmul, copy back, compare with CPU."""

    device: str  # "cuda:0", "/GPU:0", "cuda(id=0)"
    ok: bool
    error: str | None = None
    seconds: float | None = None


class FrameworkRuntime(Struct):
    """What importing a framework in a child process showed (`doctor --deep`)."""

    framework: str  # torch | tensorflow | jax | cupy
    status: ImportStatus
    error: str | None = None
    failure: ChildFailure | None = None  # the child timed out, crashed or exited badly
    import_seconds: float | None = None
    version: str | None = None
    cuda_available: bool | None = None
    device_count: Count | None = None
    devices: list[str] = field(default_factory=list)
    backend: str | None = None  # jax: default backend
    arch_list: list[str] = field(default_factory=list)  # compiled: "sm_80", "compute_90"
    cuda_version: str | None = None  # the CUDA the framework was built with / reports
    driver_version: str | None = None  # cupy: the driver's CUDA
    cudnn_version: str | None = None
    nccl_version: str | None = None
    loaded_libraries: list[str] = field(default_factory=list)  # /proc/self/maps: cudart, ...
    warnings: list[str] = field(default_factory=list)  # what it printed (loader warnings)
    smoke_tests: list[SmokeTest] = field(default_factory=list)
    # XLA's GPU devices: TensorFlow's XLA_GPU / logical devices, JAX's gpu/cuda devices; None:
    # not asked (an older gpucheck, or a framework without XLA).
    xla_devices: list[str] | None = None
    xla_error: str | None = None


class PythonEnvironment(Struct):
    """One interpreter whose frameworks were looked at."""

    python: str  # the interpreter's path
    origin: str  # gpucheck | virtualenv | conda | --python
    version: str | None = None  # "3.11.7"
    prefix: str | None = None
    platform: str | None = None  # sys.platform: linux, win32
    error: str | None = None  # this interpreter could not be probed
    errors: list[str] = field(default_factory=list)  # parts that could not be read
    site_packages: list[str] = field(default_factory=list)
    distributions: list[Distribution] = field(default_factory=list)
    torch: TorchBuild | None = None
    tensorflow: TensorflowBuild | None = None
    # The CUDA libraries conda installed into this prefix, name -> version (cudnn: "9.3.0.75")
    conda_libraries: dict[str, str] = field(default_factory=dict)
    runtimes: list[FrameworkRuntime] = field(default_factory=list)  # --deep only
    extensions: list[ExtensionBuild] = field(default_factory=list)
    extension_imports: list[ExtensionImport] = field(default_factory=list)  # --deep only
    # The deciding libraries of kernel packages (compat [[kernel_library]]), read from the
    # install; empty where none is installed, or in a snapshot older than this field.
    compiled: list[LibraryCode] = field(default_factory=list)

    def dist(self, name: str) -> Distribution | None:
        return next((d for d in self.distributions if d.name == name), None)
