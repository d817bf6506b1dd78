"""Check ids renamed in report schema 4.0, where every id begins with its layer's own name
(model/layers.Layer's value): `gpu.ecc-errors` became `gpus.ecc-errors`, `require.min-gpus`
`requirements.min-gpus`, `torch.arch-support` `frameworks.torch.arch-support`.

The one table of the rename. Reports of schema 2.x and 3.x are read with their ids mapped
(fleet; fix --from takes 3.x findings so, and diagnoses a 2.x report's snapshot anew, its
fixes being sentences, not steps), and --only/--skip accept a 3.x id or prefix, with a notice
naming the 4.0 one. docs/check-ids-4.0.md shows the same table for people.
"""

from __future__ import annotations

# Every 3.x check id, in report order, and its 4.0 id (the same where it already began with
# its layer's name).
RENAMED: dict[str, str] = {
    "system.gpu-present": "system.gpu-present",
    "system.container-gpu-access": "system.container-gpu-access",
    "system.nouveau": "system.nouveau",
    "system.cuda-visible-devices": "system.cuda-visible-devices",
    "system.cuda-launch-blocking": "system.cuda-launch-blocking",
    "system.probes": "system.probes",
    "driver.kernel-module": "driver.kernel-module",
    "driver.nvml": "driver.nvml",
    "driver.device-nodes": "driver.device-nodes",
    "driver.uvm": "driver.uvm",
    "driver.persistence-mode": "driver.persistence-mode",
    "driver.fabric-manager": "driver.fabric-manager",
    "gpu.lost": "gpus.lost",
    "gpu.ecc-errors": "gpus.ecc-errors",
    "gpu.memory-remapping": "gpus.memory-remapping",
    "gpu.throttling": "gpus.throttling",
    "gpu.pcie-link": "gpus.pcie-link",
    "gpu.nvlink": "gpus.nvlink",
    "gpu.p2p": "gpus.p2p",
    "gpu.compute-mode": "gpus.compute-mode",
    "gpu.mig": "gpus.mig",
    "gpu.memory-in-use": "gpus.memory-in-use",
    "cuda.driver-api": "cuda.driver-api",
    "cuda.toolkit": "cuda.toolkit",
    "cuda.runtime-libraries": "cuda.runtime-libraries",
    "cudnn.libraries": "cudnn.libraries",
    "torch.cpu-build": "frameworks.torch.cpu-build",
    "torch.cuda-driver": "frameworks.torch.cuda-driver",
    "torch.arch-support": "frameworks.torch.arch-support",
    "torch.python": "frameworks.torch.python",
    "torch.extension-toolkit": "frameworks.torch.extension-toolkit",
    "torch.extensions": "frameworks.torch.extensions",
    "tensorflow.cpu-build": "frameworks.tensorflow.cpu-build",
    "tensorflow.legacy-gpu-package": "frameworks.tensorflow.legacy-gpu-package",
    "tensorflow.windows-native": "frameworks.tensorflow.windows-native",
    "tensorflow.cuda-driver": "frameworks.tensorflow.cuda-driver",
    "tensorflow.arch-support": "frameworks.tensorflow.arch-support",
    "tensorflow.python": "frameworks.tensorflow.python",
    "tensorflow.keras": "frameworks.tensorflow.keras",
    "tensorflow.cuda-libraries": "frameworks.tensorflow.cuda-libraries",
    "jax.cpu-build": "frameworks.jax.cpu-build",
    "jax.cuda-driver": "frameworks.jax.cuda-driver",
    "cupy.cuda-driver": "frameworks.cupy.cuda-driver",
    "frameworks.library-shadowing": "frameworks.library-shadowing",
    "frameworks.loader-cache": "frameworks.loader-cache",
    "frameworks.nvidia-conflicts": "frameworks.nvidia-conflicts",
    "tensorrt.support": "frameworks.tensorrt.support",
    "tensorrt.libraries": "frameworks.tensorrt.libraries",
    "xla.compiler": "frameworks.xla.compiler",
    "frameworks.numpy-abi": "frameworks.numpy-abi",
    "frameworks.nvml-bindings": "frameworks.nvml-bindings",
    "frameworks.device-count": "frameworks.device-count",
    "frameworks.smoke-test": "frameworks.smoke-test",
    "require.min-gpus": "requirements.min-gpus",
    "require.min-memory": "requirements.min-memory",
    "require.min-compute-capability": "requirements.min-compute-capability",
}

# The first words of 3.x ids that 4.0 changed, and what an --only/--skip prefix of theirs
# ("gpu", "gpu.", "gpu.*", "torch") now is.
RENAMED_PREFIXES: dict[str, str] = {
    "gpu": "gpus",
    "require": "requirements",
    "torch": "frameworks.torch",
    "tensorflow": "frameworks.tensorflow",
    "jax": "frameworks.jax",
    "cupy": "frameworks.cupy",
    "tensorrt": "frameworks.tensorrt",
    "xla": "frameworks.xla",
}


def current_id(check_id: str) -> str:
    """A check id as report schema 4.0 names it (a 4.0 id, or an unknown one, as it is)."""
    return RENAMED.get(check_id, check_id)


def current_pattern(pattern: str) -> str:
    """An --only/--skip pattern (an id, an id prefix, a layer's name) in 4.0's ids: a 3.x id
    or a prefix of 3.x ids becomes the 4.0 one; anything else stays as it is."""
    if pattern in RENAMED:
        return RENAMED[pattern]
    first, dot, rest = pattern.partition(".")
    if first in RENAMED_PREFIXES:
        return RENAMED_PREFIXES[first] + dot + rest
    return pattern


def renamed_notices(patterns: list[str]) -> list[str]:
    """One line for each pattern that names a 3.x id or prefix: what it stands for now."""
    return [
        f"{p!r} is a check id from before report schema 4.0; it now reads {new!r}"
        for p in dict.fromkeys(patterns)
        if (new := current_pattern(p)) != p
    ]
