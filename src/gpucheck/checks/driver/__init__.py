"""The driver layer: the kernel module, NVML (the user-space driver) and the device nodes
(loading.py), the driver's services (services.py: nvidia-uvm, persistence mode;
fabric_manager.py: NVSwitch systems' fabric manager), and the steps that install, load or
repair a driver (fixes.py)."""

from __future__ import annotations

from gpucheck.checks.declarations import LayerChecks
from gpucheck.model.layers import Layer

DECLARED = LayerChecks(
    Layer.DRIVER,
    __name__,
    checks=(
        ("driver.kernel-module", "loading"),
        ("driver.nvml", "loading"),
        ("driver.device-nodes", "loading"),
        ("driver.uvm", "services"),
        ("driver.persistence-mode", "services"),
        ("driver.fabric-manager", "fabric_manager"),
    ),
    reads=("system", "nvml"),
    prerequisites=("system.gpu-present",),
)
