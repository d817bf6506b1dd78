"""A simulated NVIDIA GPU machine for the tests: fake libnvidia-ml and libcuda built from C,
a scenario file they read, and a fake root for the system probe (see README.md)."""
