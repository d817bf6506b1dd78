"""The frameworks layer: one finding per check over every Python environment (see
per_environment.py: `framework_check`).

Checks, one module per framework or concern:
- torch.py: the build (CUDA, CPU-only, ROCm), CUDA against the driver, GPU architectures,
  Python, building extensions; extensions.py: extensions built against torch (torchvision,
  flash-attn, vllm, ...) vs the torch installed;
- tensorflow.py: the build and package names, native Windows, CUDA against the driver, GPU
  architectures, Python, Keras; tensorflow_libraries.py: the CUDA libraries it loads;
- jax_cupy.py: JAX's CUDA plugin, JAX's and CuPy's CUDA against the driver;
- conflicts.py: libraries shadowed through LD_LIBRARY_PATH, NVIDIA pip packages two
  frameworks want in different versions; loader_cache.py: older copies in ld.so.cache;
- numpy_abi.py: builds for NumPy 1 under NumPy 2; nvml_bindings.py: competing or old NVML
  Python bindings;
- tensorrt.py: TensorRT wheels and system libnvinfer vs the driver and GPUs, TF-TRT;
  xla.py: XLA's flags, the ptxas it compiles with, XLA devices under --deep;
- runtime.py: what importing them showed (doctor --deep): devices seen, a smoke test per GPU
  (runtime_causes.py: what a failure means; runtime_fixes.py: its steps).

Shared: per_environment.py (per-environment verdicts), builds.py and jax_builds.py (each
framework's build as facts, and the build a fix installs), driver_fit.py (the GPUs a build must
run on, its CUDA against the driver), arch.py (compiled architectures), packages.py (pip
metadata), tensorflow_fixes.py (TensorFlow's install steps).

This package imports none of its modules itself: a doctor of a saved snapshot imports only
those its snapshot can use (DECLARED.module_needs).
"""

from __future__ import annotations

from gpucheck.checks.declarations import ANY_ENVIRONMENT, SYSTEM_TENSORRT, declare

DECLARED = declare(
    __name__,
    checks=(
        (
            "torch",
            "torch.cpu-build",
            "torch.cuda-driver",
            "torch.arch-support",
            "torch.python",
            "torch.extension-toolkit",
        ),
        ("extensions", "torch.extensions"),
        (
            "tensorflow",
            "tensorflow.cpu-build",
            "tensorflow.legacy-gpu-package",
            "tensorflow.windows-native",
            "tensorflow.cuda-driver",
            "tensorflow.arch-support",
            "tensorflow.python",
            "tensorflow.keras",
        ),
        ("tensorflow_libraries", "tensorflow.cuda-libraries"),
        ("jax_cupy", "jax.cpu-build", "jax.cuda-driver", "cupy.cuda-driver"),
        ("conflicts", "library-shadowing"),
        ("loader_cache", "loader-cache"),
        ("conflicts", "nvidia-conflicts"),
        ("tensorrt", "tensorrt.support", "tensorrt.libraries"),
        ("xla", "xla.compiler"),
        ("numpy_abi", "numpy-abi"),
        ("nvml_bindings", "nvml-bindings"),
        ("runtime", "device-count", "smoke-test"),
    ),
    reads=("environments",),
    prerequisites=("system.gpu-present",),
    # Each is a framework_check, silent for an environment without its framework, but
    # frameworks.tensorrt.libraries (system copies) and the checks of any environment.
    module_needs={
        "torch": ("torch",),
        "extensions": ("torch",),
        "tensorflow": ("tensorflow",),
        "tensorflow_libraries": ("tensorflow",),
        "jax_cupy": ("jax", "cupy"),
        "conflicts": (ANY_ENVIRONMENT,),
        "loader_cache": (ANY_ENVIRONMENT,),
        "tensorrt": ("tensorrt", SYSTEM_TENSORRT),
        "xla": (ANY_ENVIRONMENT,),
        "numpy_abi": (ANY_ENVIRONMENT,),
        "nvml_bindings": (ANY_ENVIRONMENT,),
        "runtime": (ANY_ENVIRONMENT,),
    },
)
