"""gpucheck: is this machine ready to run deep learning on its NVIDIA GPUs, and if not, why."""

__version__ = "0.1.0"
