"""The frameworks gpucheck knows, as one table: what each is called where (its key in findings
and facts, its import name, the distributions that install it, its CUDA-variant wheels), and
the extensions built against torch. Probes, checks, compat, fit and the reports read these
names from here; no module keeps its own list.

The probe scripts cannot import gpucheck (they run under the user's interpreter): the default
pass hands `static_probe_options()` to probes/scripts/framework_static.py as its argument, and
a test holds framework_deep.py's probes to the frameworks marked `deep="probe"` here.

Adding a framework: one `Framework` entry below (and in FRAMEWORKS), plus its checks module in
checks/frameworks/.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from msgspec import Struct

from gpucheck.model.environments import Distribution, PythonEnvironment

# How the deep pass (doctor --deep) imports it: "probe", framework_deep.py's probe (devices,
# a matmul per GPU); "import", extension_deep.py alone (an import, and for TensorRT an engine).
DeepPass = Literal["probe", "import"]


class Framework(Struct, frozen=True):
    key: str  # in check ids, FrameworkRuntime.framework, `bench`'s and `fit`'s choice
    title: str  # as people write it
    module: str  # what `import` names
    dists: tuple[str, ...]  # the distributions that install `module`, the usual one first
    variants: str = ""  # regex: CUDA-variant wheels that install `module` too (cupy-cuda12x)
    plugins: str = ""  # regex: wheels read with it that do not install it (jax-cuda12-plugin)
    cpu_dists: tuple[str, ...] = ()  # of `dists`, the builds without CUDA
    rocm_dists: tuple[str, ...] = ()  # of `dists`, the ROCm builds
    # Extras whose NVIDIA wheels the GPU install brings: tensorflow[and-cuda].
    gpu_extras: tuple[tuple[str, str], ...] = ()  # (distribution, extra)
    numpy_abi_dists: tuple[str, ...] = ()  # named by compat's [[numpy_abi]] rows
    xla: bool = False  # compiles with XLA (its flags, ptxas, devices matter)
    deep: DeepPass | None = None
    smoke: str = ""  # the one line a user runs to see it use the GPU

    @property
    def dist(self) -> str:
        """The usual distribution: what `pip install` names."""
        return self.dists[0]

    def owns(self, name: str) -> bool:
        """Whether the distribution `name` installs this framework's module."""
        return name in self.dists or bool(self.variants and re.fullmatch(self.variants, name))

    def related(self, name: str) -> bool:
        """Whether `name` is one of its distributions, variants or plugins."""
        return self.owns(name) or bool(self.plugins and re.fullmatch(self.plugins, name))

    def installed(self, env: PythonEnvironment) -> list[Distribution]:
        """Its distributions here: the exact names in table order, then variants and plugins."""
        exact = [d for n in self.dists if (d := env.dist(n)) is not None]
        rest = [d for d in env.distributions if d.name not in self.dists and self.related(d.name)]
        return exact + rest


class Extension(Struct, frozen=True):
    dist: str
    module: str | None  # what the deep pass imports to load its compiled part; None: not imported
    build_facts: bool = True  # the default pass reads the torch and CUDA its build names
    requires: bool = True  # its Requires-Dist (the torch it pins) is kept
    paired: bool = False  # released in step with torch: compat's pairing table says which
    pinned_by_torch: bool = False  # torch's Requires-Dist names its version (triton)
    from_source: bool = False  # usually built here, against the torch installed


TORCH = Framework(
    key="torch",
    title="PyTorch",
    module="torch",
    dists=("torch",),
    numpy_abi_dists=("torch",),
    deep="probe",
    smoke="python -c 'import torch; print(torch.ones(2, device=\"cuda\") * 2)'",
)
TENSORFLOW = Framework(
    key="tensorflow",
    title="TensorFlow",
    module="tensorflow",
    dists=(
        "tensorflow",
        "tensorflow-gpu",
        "tensorflow-cpu",
        "tensorflow-intel",
        "tensorflow-macos",
        "tensorflow-cpu-aws",
        "tensorflow-rocm",
        "tf-nightly",
        "tf-nightly-cpu",
    ),
    cpu_dists=(
        "tensorflow-cpu",
        "tensorflow-intel",
        "tensorflow-macos",
        "tensorflow-cpu-aws",
        "tf-nightly-cpu",
    ),
    rocm_dists=("tensorflow-rocm",),
    gpu_extras=(
        ("tensorflow", "and-cuda"),
        ("tensorflow-cpu", "and-cuda"),
        ("tf-nightly", "and-cuda"),
    ),
    numpy_abi_dists=("tensorflow", "tensorflow-cpu"),
    xla=True,
    deep="probe",
    smoke="python -c 'import tensorflow as tf; print(tf.config.list_physical_devices(\"GPU\"))'",
)
JAX = Framework(
    key="jax",
    title="JAX",
    module="jax",
    dists=("jax", "jaxlib"),  # jax without jaxlib fails to import: that is a finding too
    plugins=r"jax-cuda\d+-(plugin|pjrt)",
    gpu_extras=(("jax-cuda12-plugin", "with-cuda"), ("jax-cuda13-plugin", "with-cuda")),
    xla=True,
    deep="probe",
    smoke="python -c 'import jax; print(jax.devices())'",
)
CUPY = Framework(
    key="cupy",
    title="CuPy",
    module="cupy",
    dists=("cupy",),
    variants=r"cupy-(cuda|rocm).*",  # cupy-cuda12x, cupy-cuda102, cupy-rocm-5-0
    deep="probe",
    smoke="python -c 'import cupy; print(cupy.arange(3) * 2)'",
)
TENSORRT = Framework(
    key="tensorrt",
    title="TensorRT",
    module="tensorrt",
    dists=("tensorrt",),
    variants=r"tensorrt-cu\d+",  # tensorrt-cu12 alone installs the `tensorrt` module
    plugins=r"tensorrt-.+",  # tensorrt-libs, tensorrt-cu12-bindings, ...
    deep="import",
)
FRAMEWORKS = (TORCH, TENSORFLOW, JAX, CUPY, TENSORRT)
PROBED = tuple(fw for fw in FRAMEWORKS if fw.deep == "probe")  # also what reports list
BY_KEY = {fw.key: fw for fw in FRAMEWORKS}

# Built against torch, in the order findings name them.
TORCH_EXTENSIONS = (
    Extension("torchvision", "torchvision", paired=True),
    Extension("torchaudio", "torchaudio", paired=True),
    Extension("xformers", "xformers.ops"),
    Extension("flash-attn", "flash_attn", from_source=True),
    Extension("flash-attn-3", "flash_attn_interface", from_source=True),
    Extension("bitsandbytes", "bitsandbytes"),
    Extension("apex", "apex", requires=False, from_source=True),
    Extension("deepspeed", "deepspeed"),
    # torch pins its triton (`triton==3.1.0` in torch's Requires-Dist): no build facts of its own.
    Extension("triton", None, build_facts=False, requires=False, pinned_by_torch=True),
    Extension("pytorch-triton", None, build_facts=False, requires=False, pinned_by_torch=True),
    Extension("vllm", "vllm._C"),
    Extension("sglang", "sglang"),
    Extension("sgl-kernel", "sgl_kernel"),  # sglang's compiled kernels, a wheel of their own
    Extension("sglang-kernel", "sgl_kernel"),  # the same module, renamed on PyPI from 0.4.0
    Extension("torch-tensorrt", "torch_tensorrt"),
)

# Read beside the frameworks: numpy for its ABI, Keras for TensorFlow's, the NVML bindings
# that install a `pynvml` module (nvidia-ml-py is one of the NVIDIA wheels below).
COMPANIONS = ("numpy", "keras", "tf-keras", "pynvml", "py3nvml")
COMPANION_REQUIRES = ("pynvml",)  # pynvml 11.5+ is a shim that requires nvidia-ml-py
NVIDIA_WHEELS = r"nvidia-.+"  # the CUDA libraries as pip wheels (nvidia-cudnn-cu12, ...)


def installed_frameworks(env: PythonEnvironment) -> list[str]:
    """The keys of the frameworks the deep pass probes (deep="probe") that are installed here."""
    names = [d.name for d in env.distributions]
    return [fw.key for fw in FRAMEWORKS if fw.deep == "probe" and any(map(fw.owns, names))]


def installed_extensions(env: PythonEnvironment) -> list[tuple[str, str]]:
    """(distribution, module) pairs the deep pass imports alone, each in its own child: the
    extensions, then the frameworks with deep="import" (under their module's own name)."""
    names = {d.name for d in env.distributions}
    found = [(e.dist, e.module) for e in TORCH_EXTENSIONS if e.module and e.dist in names]
    for fw in FRAMEWORKS:
        if fw.deep == "import" and any(fw.owns(n) for n in names):
            found.append((fw.module, fw.module))
    return found


def _any_of(patterns: Iterable[str]) -> str:
    return "|".join(f"(?:{p})" for p in patterns if p)


# What download.pytorch.org/whl/cuXYZ carries beside torch and its companions (xformers
# publishes its CUDA wheels there); vLLM, flash-attn and bitsandbytes are on PyPI only.
ON_TORCH_INDEX = ("xformers", "triton", "pytorch-triton")
# The CUDA libraries conda installs as packages of their own (conda-forge and nvidia channels).
CONDA_LIBRARIES = ("cudnn", "cudatoolkit", "cuda-version", "cuda-cudart", "nccl")


def static_probe_options() -> dict[str, object]:
    """What framework_static.py reads (its argument, as JSON): the distributions to keep, whose
    Requires-Dist lines to keep, which own the tensorflow package, whose build facts to read."""
    extension_names = [e.dist for e in TORCH_EXTENSIONS]
    names = [n for fw in FRAMEWORKS for n in fw.dists] + extension_names + list(COMPANIONS)
    patterns = [fw.variants for fw in FRAMEWORKS] + [fw.plugins for fw in FRAMEWORKS]
    requires = [n for fw in FRAMEWORKS for n in fw.dists]
    requires += [e.dist for e in TORCH_EXTENSIONS if e.requires] + list(COMPANION_REQUIRES)
    return {
        "names": sorted(set(names)),
        "pattern": _any_of([*patterns, NVIDIA_WHEELS]),
        "requires": sorted(set(requires)),
        "requires_pattern": _any_of(patterns),
        "tensorflow": list(TENSORFLOW.dists),
        "torch": list(TORCH.dists),
        "extensions": [e.dist for e in TORCH_EXTENSIONS if e.build_facts],
        "conda_libraries": list(CONDA_LIBRARIES),
    }
