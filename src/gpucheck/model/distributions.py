"""Which installed distributions mean which framework: one table for the probe (what --deep
imports) and the checks (what they judge). The probe script that runs inside the target
interpreter keeps its own list of names to read (it cannot import gpucheck); a test keeps
that list a superset of this one."""

from __future__ import annotations

from gpucheck.model.environments import PythonEnvironment

# Distributions that install the `tensorflow` package.
TF_DISTS = (
    "tensorflow",
    "tensorflow-gpu",
    "tensorflow-cpu",
    "tensorflow-intel",
    "tensorflow-macos",
    "tensorflow-cpu-aws",
    "tensorflow-rocm",
    "tf-nightly",
    "tf-nightly-cpu",
)
FRAMEWORK_DISTS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "tensorflow": TF_DISTS,
    "jax": ("jax", "jaxlib"),  # jax without jaxlib fails to import: that is a finding too
    "cupy": ("cupy",),  # and every cupy-cuda* / cupy-rocm* wheel, which install `cupy`
}


def installed_frameworks(env: PythonEnvironment) -> list[str]:
    names = {d.name for d in env.distributions}
    if any(n.startswith("cupy-") for n in names):
        names.add("cupy")
    return [fw for fw, dists in FRAMEWORK_DISTS.items() if any(n in names for n in dists)]


# Extensions (and TensorRT) the deep pass imports, each in its own child: distribution -> the
# module whose import loads its compiled part.
EXTENSION_MODULES: dict[str, str] = {
    "torchvision": "torchvision",
    "torchaudio": "torchaudio",
    "xformers": "xformers.ops",
    "flash-attn": "flash_attn",
    "flash-attn-3": "flash_attn_interface",
    "bitsandbytes": "bitsandbytes",
    "apex": "apex",
    "deepspeed": "deepspeed",
    "vllm": "vllm._C",
    "sglang": "sglang",
    "torch-tensorrt": "torch_tensorrt",
    "tensorrt": "tensorrt",
}


def installed_extensions(env: PythonEnvironment) -> list[tuple[str, str]]:
    """(distribution, module) pairs of the extensions installed here, for the deep pass."""
    names = {d.name for d in env.distributions}
    if "tensorrt" not in names and any(n.startswith("tensorrt-cu") for n in names):
        names.add("tensorrt")  # tensorrt-cu12 alone installs the `tensorrt` module
    return [(dist, module) for dist, module in EXTENSION_MODULES.items() if dist in names]
