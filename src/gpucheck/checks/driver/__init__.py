"""The driver layer: the kernel module, NVML (the user-space driver) and the device nodes
(loading.py), the driver's services (services.py: nvidia-uvm, persistence mode;
fabric_manager.py: NVSwitch systems' fabric manager), and the steps that install, load or
repair a driver (fixes.py)."""

from __future__ import annotations

from gpucheck.checks.declarations import declare

DECLARED = declare(
    __name__,
    checks=(
        ("loading", "kernel-module", "nvml", "device-nodes"),
        ("services", "uvm", "persistence-mode"),
        ("fabric_manager", "fabric-manager"),
    ),
    reads=("system", "nvml"),
    prerequisites=("system.gpu-present",),
)
