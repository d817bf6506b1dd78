"""What a measured figure is compared with: the GPU's datasheet (compat/gpus.toml) and its PCIe
link's theoretical rate, and the documented fraction below which bench warns."""

from __future__ import annotations

from dataclasses import dataclass

from gpucheck.compat.gpus import GpuSpec
from gpucheck.model.snapshot import GpuFacts

# Usable bytes per second per lane and direction, 10^9 B/s: the transfer rate times the line
# code (8b/10b to 2.0, 128b/130b for 3.0 to 5.0, 242/256 FLIT for 6.0), as Wikipedia's
# "PCI Express" table gives them (0.25, 0.5, 0.985, 1.969, 3.938, 7.563 GB/s).
PCIE_LANE_GBS = {1: 0.25, 2: 0.5, 3: 8 * 128 / 130 / 8, 4: 16 * 128 / 130 / 8}
PCIE_LANE_GBS |= {5: 32 * 128 / 130 / 8, 6: 64 * 242 / 256 / 8}

# Below these shares of the reference, bench warns (the README says why these values):
MATMUL_FRACTION = 0.5  # of the datasheet's dense peak for the dtype
MEMORY_FRACTION = 0.6  # device-to-device copy (read + write) of the datasheet's bandwidth
PCIE_FRACTION = 0.6  # pinned host<->device copy of the link's theoretical rate, one direction


def pcie_gbs(generation: int | None, width: int | None) -> float | None:
    if generation is None or width is None or generation not in PCIE_LANE_GBS:
        return None
    return PCIE_LANE_GBS[generation] * width


@dataclass(frozen=True)
class Link:
    generation: int
    width: int
    source: str  # "NVML (GPU and slot maximum)" | "datasheet"

    @property
    def gbs(self) -> float:
        value = pcie_gbs(self.generation, self.width)
        assert value is not None
        return value

    @property
    def text(self) -> str:
        return f"PCIe {self.generation}.0 x{self.width}"


def best_link(gpu: GpuFacts, spec: GpuSpec | None) -> Link | None:
    """The link the GPU could run at in this slot: NVML's maximum (GPU and slot together),
    else the datasheet's. A slot narrower than the card is the slot's limit, not a fault."""
    if gpu.pcie_gen_max and gpu.pcie_width_max and gpu.pcie_gen_max in PCIE_LANE_GBS:
        return Link(gpu.pcie_gen_max, gpu.pcie_width_max, "NVML maximum of GPU and slot")
    if spec is not None and spec.pcie_generation and spec.pcie_width:
        return Link(spec.pcie_generation, spec.pcie_width, "datasheet")
    return None


@dataclass(frozen=True)
class Comparison:
    measured: float
    reference: float | None
    threshold: float

    @property
    def fraction(self) -> float | None:
        return self.measured / self.reference if self.reference else None

    @property
    def low(self) -> bool:
        f = self.fraction
        return f is not None and f < self.threshold
