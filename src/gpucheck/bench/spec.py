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

# Below these shares of the reference, bench warns
# (docs/commands/bench.md, 'Against what', says why):
MATMUL_FRACTION = 0.5  # of the datasheet's dense peak for the dtype (full-power boards)
MEMORY_FRACTION = 0.6  # device-to-device copy (read + write) of the datasheet's bandwidth
PCIE_FRACTION = 0.6  # pinned host<->device copy of the link's theoretical rate, one direction


# GPU classes whose datasheet peak a sustained matmul cannot approach, and the share expected of
# them instead (a flat 50% would warn on every healthy one):
# - Boards capped at 75 W or less (T4 70 W, L4 72 W, A2 60 W: slot-powered): the driver lowers
#   the clocks to the power limit within a second of a continuous matmul. NVIDIA's answer on
#   its forum (forums.developer.nvidia.com/t/about-gpu-peak-performance/264462): a cuBLAS FP16
#   4096^3 loop on a T4 runs at ~24 of its 65 TFLOPS (37%), "expected behavior" of power
#   capping. Warn below 25% of any dtype's peak on such a board.
LOW_POWER_W = 75.0
LOW_POWER_FRACTION = 0.25
# - FP32 on GPUs with two FP32 datapaths per SM partition, one of them shared with INT32
#   (compute capability 8.6, 8.7, 8.9 and 12.x: Ampere GA10x, Ada, Blackwell GeForce/RTX PRO;
#   NVIDIA's GA102 whitepaper: "datapath ... can execute either FP32 or INT32"). The datasheet
#   counts both at full rate; an SGEMM also issues its address arithmetic on them, so the
#   sustained share is lower than on GPUs whose FP32 peak is one datapath (7.0, 8.0, 9.0).
DUAL_FP32_PREFIXES = ("8.6", "8.7", "8.9", "12.")
DUAL_FP32_FRACTION = 0.3


@dataclass(frozen=True)
class Expectation:
    fraction: float  # below this share of the datasheet's peak, bench warns
    why: str | None = None  # the GPU class that lowers it from MATMUL_FRACTION, for the report


def matmul_expectation(dtype: str, gpu: GpuFacts) -> Expectation:
    """The share of the datasheet's dense peak a healthy GPU of this class sustains in a large
    matmul of `dtype` (see the classes above)."""
    low_power = gpu.power_limit_w is not None and gpu.power_limit_w <= LOW_POWER_W
    if low_power:
        return Expectation(
            LOW_POWER_FRACTION,
            f"a {gpu.power_limit_w:g} W board holds its clocks down to its power limit under a "
            "continuous matmul",
        )
    cc = gpu.compute_capability or ""
    if dtype == "fp32" and cc.startswith(DUAL_FP32_PREFIXES):
        return Expectation(
            DUAL_FP32_FRACTION,
            f"compute capability {cc} counts two FP32 datapaths (one shared with INT32) in its "
            "FP32 peak",
        )
    return Expectation(MATMUL_FRACTION)


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
