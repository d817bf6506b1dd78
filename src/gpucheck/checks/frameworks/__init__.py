"""Framework checks (section "frameworks"), one finding per check over every Python
environment (see environments.py: `framework_check`).

One module per framework, each holding its checks:
- torch.py: the build (CUDA, CPU-only, ROCm), CUDA against the driver, GPU architectures,
  Python, building extensions;
- tensorflow.py: the build and package names, native Windows, CUDA against the driver, GPU
  architectures, Python, Keras; tensorflow_libraries.py: the CUDA libraries it loads;
- jax_cupy.py: JAX's CUDA plugin, JAX's and CuPy's CUDA against the driver;
- environment.py: libraries shadowed through LD_LIBRARY_PATH, NVIDIA pip packages two
  frameworks want in different versions; loader_cache.py: older copies in ld.so.cache;
- extensions.py: extensions built against torch (torchvision, flash-attn, vllm, ...) vs the
  torch installed; numpy_abi.py: builds for NumPy 1 under NumPy 2; nvml_bindings.py: competing
  or old NVML Python bindings;
- tensorrt.py: TensorRT wheels and system libnvinfer vs the driver and GPUs, TF-TRT;
  xla.py: XLA's flags, the ptxas it compiles with, XLA devices under --deep;
- runtime.py: what importing them showed (doctor --deep): devices seen, a smoke test per GPU.

Shared helpers: environments.py (per-environment verdicts), builds.py (each framework's
build as facts, and the build a fix installs), driver.py (the GPUs a build must run on, its
CUDA against the driver), arch.py (compiled architectures), packages.py (pip metadata).

Importing a module registers its checks: registry.FRAMEWORK_MODULES lists them, with what a
snapshot must hold for each to have something to judge; registry.ORDER sets their order in the
report. This package imports none of them itself (a doctor of a saved snapshot imports only
those its snapshot can use).
"""
