"""Framework checks (section "frameworks"), per Python environment (see frameworks_common):

- checks/torch.py: PyTorch's build, CUDA against the driver, GPU architectures, Python,
  building extensions;
- checks/tensorflow.py: TensorFlow's build and package names, native Windows, CUDA against
  the driver, GPU architectures, the CUDA libraries it loads, Python, Keras;
- checks/jax_cupy.py: JAX's CUDA plugin, JAX's and CuPy's CUDA against the driver;
- checks/frameworks_env.py: libraries shadowed through LD_LIBRARY_PATH, NVIDIA pip packages
  two frameworks want in different versions;
- checks/frameworks_deep.py: what importing them showed (doctor --deep): the devices they see
  and a smoke test on each GPU.

Importing this module registers them all, and the report lists them in this order.
"""

from __future__ import annotations

# isort: off
from gpucheck.checks import torch  # noqa: F401
from gpucheck.checks import tensorflow  # noqa: F401
from gpucheck.checks import jax_cupy  # noqa: F401
from gpucheck.checks import frameworks_env  # noqa: F401
from gpucheck.checks import frameworks_deep  # noqa: F401

# isort: on
