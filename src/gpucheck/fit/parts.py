"""Memory per GPU of a training step or of serving, from published formulas. Pure.

The parts are computed in training.py (weights, gradients, optimizer states, LoRA),
activations.py (what a training step keeps for backward) and serving.py (weights, KV cache and
buffers across tensor- or pipeline-parallel GPUs); quant.py sizes quantised weights. Sources are
cited where each formula is; docs/commands/fit.md has the full list.
- CUDA context: 287,047,680 bytes measured with lazy module loading (pytorch/pytorch#86509).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpucheck.fit.units import DTYPE_BYTES

OPTIMIZERS = ("adam", "adamw", "sgd", "adafactor", "8bit")
LAYOUTS = ("zero", "trainer")
CONTEXT_BYTES = 512 * 1024**2  # CUDA context (~274 MiB, #86509) + cuBLAS/cuDNN workspaces
FRAGMENTATION = 0.10  # of the tensors: caching-allocator rounding and fragmentation
TIGHT = 0.90  # above this share of a GPU's memory the verdict is "tight"


@dataclass(frozen=True)
class Setup:
    mode: str  # "train" | "infer"
    dtype: str  # weights (and compute) dtype
    batch: int = 1  # per GPU (serving: concurrent sequences)
    seq: int | None = None
    optimizer: str = "adamw"
    master_weights: bool = True  # fp32 master copy when training in 16-bit or lower
    checkpointing: bool = False  # full activation recomputation
    gpus: int = 1
    zero: int = 0  # 0: plain data parallel; 1, 2, 3: ZeRO stages (FSDP: 2 or 3)
    flash_attention: bool = True  # fused attention (SDPA/FlashAttention): no s*s scores kept
    kv_dtype: str | None = None  # None: the compute dtype (16-bit for quantised weights)
    parallel: str = "data"  # serving across GPUs: "tensor" or "pipeline"
    layout: str = "zero"  # "zero": 16 B/param (ZeRO, Megatron); "trainer": HF Trainer's 18
    optimizer_states: str = "fp32"  # or "bf16": Adam's moments in bf16
    lora_rank: int | None = None  # LoRA/QLoRA: base frozen, adapters of this rank trained
    lora_targets: tuple[str, ...] = ("q", "v")
    fused_loss: bool = False  # a fused/chunked cross-entropy keeps no logits
    stored_bytes: int | None = None  # serving: the weights' bytes as the checkpoint stores them


@dataclass
class Part:
    name: str
    bytes: float
    how: str  # the formula with the numbers filled in


@dataclass
class Estimate:
    parts: list[Part]
    per_sample: float | None  # bytes that grow with each sample of the batch (None: unknown)
    fixed: float  # bytes of tensors that do not depend on the batch
    assumptions: list[str] = field(default_factory=list)
    lower_bound: bool = False  # KV cache or activations could not be counted

    @property
    def tensors(self) -> float:
        return sum(p.bytes for p in self.parts if p.name not in ("context", "fragmentation"))

    @property
    def total(self) -> float:
        return sum(p.bytes for p in self.parts)


def compute_dtype(dtype: str) -> str:
    """Activations and KV cache: weight-only quantised models compute in 16-bit."""
    return "bf16" if dtype in ("int8", "int4", "nf4", "fp8", "fp4") else dtype


def activation_bytes(dtype: str) -> float:
    return DTYPE_BYTES[compute_dtype(dtype)]


def finish(
    parts: list[Part], per_sample: float | None, assumptions: list[str], lower_bound: bool = False
) -> Estimate:
    tensors = sum(p.bytes for p in parts)
    growing = {"activations", "kv_cache", "cross_kv_cache", "ssm_state"}
    fixed = sum(p.bytes for p in parts if p.name not in growing)
    parts.append(
        Part("fragmentation", tensors * FRAGMENTATION, f"{FRAGMENTATION:.0%} of the tensors")
    )
    parts.append(
        Part(
            "context",
            CONTEXT_BYTES,
            "CUDA context, cuBLAS/cuDNN workspaces (measured ~274 MiB + margin)",
        )
    )
    assumptions.append(
        f"framework overhead {CONTEXT_BYTES / 1024**2:.0f} MiB per GPU and a "
        f"{FRAGMENTATION:.0%} fragmentation margin: assumptions, not measurements of this model"
    )
    return Estimate(parts, per_sample, fixed, assumptions, lower_bound)


def largest_batch(estimate: Estimate, memory: int) -> int | None:
    """The largest batch whose estimate fits in `memory` bytes (0: not even one; None: the
    activations are unknown, so the batch does not change the estimate)."""
    if not estimate.per_sample:
        return None
    room = (memory - CONTEXT_BYTES) / (1 + FRAGMENTATION) - estimate.fixed
    return max(0, math.floor(room / estimate.per_sample))


def verdict(total: float, memory: int, lower_bound: bool = False) -> str:
    if total > memory:
        return "does not fit"
    if lower_bound:
        return "may fit"  # only a lower bound was counted: never a "fits"
    if total > TIGHT * memory:
        return "tight"
    return "fits"
