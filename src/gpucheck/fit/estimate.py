"""Memory per GPU of a training step or of serving, from published formulas. Pure.

Sources (the README has the full list):
- Weights, gradients, optimizer state: Rajbhandari et al., "ZeRO: Memory Optimizations Toward
  Training Trillion Parameter Models" (arXiv:1910.02054) section 3.1: mixed-precision Adam
  holds 2 (fp16 weights) + 2 (fp16 gradients) + 12 (fp32 master weights, momentum, variance)
  = 16 bytes per parameter; ZeRO stages 1/2/3 shard the 12, then the gradients, then the
  weights over the data-parallel GPUs (section 5). FSDP FULL_SHARD is stage 3,
  SHARD_GRAD_OP stage 2.
- Optimizer state per parameter: Hugging Face "Model training anatomy" / "GPU memory usage":
  AdamW 8 bytes (two fp32 moments), 8-bit AdamW (bitsandbytes) 2 bytes, SGD with momentum
  4 bytes. Adafactor (Shazeer & Stern, arXiv:1804.04235) keeps factored second moments:
  4 * (rows + columns) bytes per matrix, no first moment.
- Activations of a transformer layer: Korthikanti et al., "Reducing Activation Recomputation
  in Large Transformer Models" (arXiv:2205.05198) eq. 2: s*b*h*(34 + 5*a*s/h) bytes with
  16-bit activations, written out term by term below so that a gated MLP, another MLP width,
  no dropout and fused (flash) attention change only their own terms; full recomputation
  keeps 2*s*b*h per layer (section 4.1).
- KV cache: 2 (K and V) * layers * kv_heads * head_dim * tokens * bytes (Kwon et al., "Efficient
  Memory Management for Large Language Model Serving with PagedAttention", arXiv:2309.06180,
  section 3: 800 KB a token for OPT-13B).
- CUDA context: 287,047,680 bytes measured with lazy module loading (pytorch/pytorch#86509).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpucheck.fit.shape import ModelShape
from gpucheck.fit.units import DTYPE_BYTES

OPTIMIZERS = ("adam", "adamw", "sgd", "adafactor", "8bit")
# Bytes of optimizer state per parameter, master weights not included.
OPTIMIZER_BYTES = {"adam": 8.0, "adamw": 8.0, "sgd": 4.0, "8bit": 2.0}
CONTEXT_BYTES = 512 * 1024**2  # CUDA context (~274 MiB, #86509) + cuBLAS/cuDNN workspaces
FRAGMENTATION = 0.10  # of the tensors: caching-allocator rounding and fragmentation
TIGHT = 0.90  # above this share of a GPU's memory the verdict is "tight"
MASTER_BYTES = 4  # fp32 master copy of each weight in mixed precision (ZeRO's 12 = 4 + 8)


@dataclass(frozen=True)
class Setup:
    mode: str  # "train" | "infer"
    dtype: str  # weights (and compute) dtype
    batch: int = 1  # per GPU
    seq: int | None = None
    optimizer: str = "adamw"
    master_weights: bool = True  # fp32 master copy when training in 16-bit or lower
    checkpointing: bool = False  # full activation recomputation
    gpus: int = 1
    zero: int = 0  # 0: plain data parallel; 1, 2, 3: ZeRO stages (FSDP: 2 or 3)
    flash_attention: bool = True  # fused attention (SDPA/FlashAttention): no s*s scores kept
    kv_dtype: str | None = None  # None: the compute dtype (16-bit for int8/int4 weights)


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

    @property
    def tensors(self) -> float:
        return sum(p.bytes for p in self.parts if p.name not in ("context", "fragmentation"))

    @property
    def total(self) -> float:
        return sum(p.bytes for p in self.parts)


def compute_dtype(dtype: str) -> str:
    """Activations and KV cache: weight-only quantised models compute in 16-bit."""
    return "bf16" if dtype in ("int8", "int4", "fp8") else dtype


def activation_bytes(dtype: str) -> float:
    return DTYPE_BYTES[compute_dtype(dtype)]


def layer_activations(shape: ModelShape, setup: Setup, seq: int) -> float:
    """Bytes one transformer layer saves for backward, per sample (b = 1).

    Korthikanti et al. eq. 2, term by term, for 16-bit values (2 bytes) and 1-byte dropout masks:
      attention: QKV input 2sh, Q and K 4sh, V 2sh, output-projection input 2sh,
                 scores softmax 2as^2, dropout mask as^2 and output 2as^2, output dropout mask sh
      MLP:       input 2sh, activation input 2sI, second-linear input 2sI, dropout mask sh
                 (with I = 4h: 19sh); a gated MLP saves its gate input too (another 2sI)
      2 LayerNorm inputs 4sh.  Sum with I = 4h: 34sh + 5as^2.
    """
    assert shape.hidden and shape.heads
    h, a = shape.hidden, shape.heads
    inter = shape.intermediate or 4 * h
    scale = activation_bytes(setup.dtype) / 2  # the paper's figures are for 2-byte values
    mask = 1 if shape.dropout else 0
    attention = (2 + 4 + 2 + 2) * seq * h * scale + mask * seq * h
    if setup.flash_attention:
        attention += a * seq * 4  # fp32 log-sum-exp per row; no s x s matrix is kept
    else:
        attention += (2 * scale + mask + (2 * scale if mask else 0)) * a * seq * seq
    mlp_inputs = 3 if shape.gated_mlp else 2
    mlp = 2 * seq * h * scale + mlp_inputs * 2 * seq * inter * scale + mask * seq * h
    norms = 4 * seq * h * scale
    return attention + shape.experts * mlp + norms


def estimate(shape: ModelShape, setup: Setup) -> Estimate:
    if setup.mode == "train":
        return _train(shape, setup)
    return _infer(shape, setup)


def _weights(shape: ModelShape, setup: Setup) -> tuple[float, str]:
    per = DTYPE_BYTES[setup.dtype]
    return shape.params * per, f"{shape.params:,} params x {per:g} B ({setup.dtype})"


def _train(shape: ModelShape, setup: Setup) -> Estimate:
    n = max(1, setup.gpus)
    stage = setup.zero if n > 1 else 0
    p = shape.params
    # Training stores weights in 16-bit (or fp32); fp8 training keeps 16-bit weights and casts
    # per matmul (Transformer Engine), so it is counted as bf16 here.
    wdtype = "bf16" if setup.dtype == "fp8" else setup.dtype
    wbytes = DTYPE_BYTES[wdtype]
    assumptions: list[str] = []
    weights = p * wbytes / (n if stage >= 3 else 1)
    grads = p * wbytes / (n if stage >= 2 else 1)
    master = MASTER_BYTES if (setup.master_weights and wdtype != "fp32") else 0
    if setup.optimizer == "adafactor":
        h = shape.hidden or 1024
        if shape.hidden is None:
            assumptions.append("Adafactor state sized for matrices of width 1024 (no config)")
        opt_per = 4 * 2 / h  # 4 bytes * (rows + cols) per rows*cols matrix, rows ~ cols ~ h
    else:
        opt_per = OPTIMIZER_BYTES[setup.optimizer]
    optimizer = p * (opt_per + master) / (n if stage >= 1 else 1)
    shard = f" / {n} GPUs (ZeRO stage {stage})" if stage else ""
    parts = [
        Part(
            "weights", weights, f"{p:,} x {wbytes:g} B ({wdtype})" + (shard if stage >= 3 else "")
        ),
        Part("gradients", grads, f"{p:,} x {wbytes:g} B" + (shard if stage >= 2 else "")),
        Part(
            "optimizer",
            optimizer,
            f"{p:,} x ({opt_per:g} B {setup.optimizer}"
            + (f" + {master} B fp32 master weights" if master else "")
            + ")"
            + (shard if stage >= 1 else ""),
        ),
    ]
    if stage >= 3:
        assumptions.append("ZeRO stage 3 gathers one layer's full weights at a time: not counted")
    if n > 1:
        assumptions.append(
            "communication buckets of DDP/ZeRO (tens to hundreds of MiB): not counted"
        )
    per_sample, how = _train_activations(shape, setup, assumptions)
    if per_sample is not None:
        parts.append(Part("activations", per_sample * setup.batch, f"{how} x batch {setup.batch}"))
    else:
        assumptions.append(
            "activations NOT included (no architecture or trace): a lower bound; pass a "
            "config.json with --seq, or --torch-module with --input"
        )
    return _finish(parts, per_sample, assumptions)


def _train_activations(
    shape: ModelShape, setup: Setup, assumptions: list[str]
) -> tuple[float | None, str]:
    if shape.traced_activation_bytes is not None:
        scale = activation_bytes(setup.dtype) / 4  # traced in fp32 on the meta device
        per = shape.traced_activation_bytes * scale
        if setup.checkpointing:
            assumptions.append("--checkpointing is not applied to a traced module")
        return per, f"traced {shape.traced_input} ({per:,.0f} B a sample)"
    if not shape.is_transformer or setup.seq is None:
        return None, ""
    assert shape.layers and shape.hidden
    s, h, layers = setup.seq, shape.hidden, shape.layers
    act = activation_bytes(setup.dtype)
    one_layer = layer_activations(shape, setup, s)
    if setup.checkpointing:
        # Only each layer's input is kept; one layer's activations are rebuilt at a time.
        stack = layers * s * h * act + one_layer
        how = f"{layers} layers x {s}x{h}x{act:g} B kept + one layer recomputed"
    else:
        stack = layers * one_layer
        how = f"{layers} layers x {one_layer:,.0f} B (Korthikanti eq. 2, seq {s})"
    # Logits for the loss: the 16-bit output, its fp32 copy, and log-softmax saved for backward.
    logits = s * (shape.vocab or 0) * (act + 8)
    assumptions.append(f"loss over all {s} positions: logits kept as {act:g} + 4 + 4 B each")
    return stack + logits, how + " + logits"


def _infer(shape: ModelShape, setup: Setup) -> Estimate:
    weights, how = _weights(shape, setup)
    parts = [Part("weights", weights, how)]
    assumptions: list[str] = []
    if setup.dtype in ("int8", "int4"):
        assumptions.append(
            f"{setup.dtype} weights: quantisation scales and zero points not counted (a few %)"
        )
    kv_dtype = setup.kv_dtype or compute_dtype(setup.dtype)
    elements = shape.kv_bytes_per_token_element
    per_sample: float | None = None
    if shape.is_transformer and setup.seq is not None:
        assert shape.hidden is not None and shape.heads is not None
        s, h, act = setup.seq, shape.hidden, activation_bytes(setup.dtype)
        kv = 0.0
        if shape.decoder and elements is not None:
            kv = elements * s * DTYPE_BYTES[kv_dtype]
            parts.append(
                Part(
                    "kv_cache",
                    kv * setup.batch,
                    f"2 x {shape.layers} layers x {shape.kv_heads} kv heads x {shape.head_dim} "
                    f"x {s} tokens x {DTYPE_BYTES[kv_dtype]:g} B ({kv_dtype}) x batch "
                    f"{setup.batch}",
                )
            )
        inter = (shape.intermediate or 4 * h) * (2 if shape.gated_mlp else 1)
        # One layer's transient buffers: its input, the MLP's intermediate(s); an encoder also
        # holds its Q, K and V (a decoder's K and V are the cache); eager attention its scores
        # and their softmax. A decoder's logits: the last position only, fp32.
        work = s * (h + inter) * act
        if not shape.decoder:
            work += 3 * s * h * act
            assumptions.append("encoder: hidden states out, no task head's output counted")
        if not setup.flash_attention:
            work += 2 * shape.heads * s * s * act
        if shape.decoder:
            work += (shape.vocab or 0) * 4
        parts.append(
            Part(
                "activations",
                work * setup.batch,
                f"one layer's buffers at {s} tokens"
                + (" + s x s scores" if not setup.flash_attention else "")
                + (" + last logits" if shape.decoder else "")
                + f", x batch {setup.batch}",
            )
        )
        per_sample = kv + work
    elif shape.traced_activation_bytes is not None:
        per = shape.traced_activation_bytes * activation_bytes(setup.dtype) / 4
        parts.append(Part("activations", per * setup.batch, f"traced, x batch {setup.batch}"))
        per_sample = per
        assumptions.append("inference of a traced module: counted as its saved activations")
    else:
        assumptions.append(
            "KV cache and activations NOT included (no architecture or --seq): a lower bound"
        )
    return _finish(parts, per_sample, assumptions)


def _finish(parts: list[Part], per_sample: float | None, assumptions: list[str]) -> Estimate:
    tensors = sum(p.bytes for p in parts)
    growing = {"activations", "kv_cache"}
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
    return Estimate(parts, per_sample, fixed, assumptions)


def largest_batch(estimate: Estimate, memory: int) -> int | None:
    """The largest batch whose estimate fits in `memory` bytes (0: not even one; None: the
    activations are unknown, so the batch does not change the estimate)."""
    if not estimate.per_sample:
        return None
    room = (memory - CONTEXT_BYTES) / (1 + FRAGMENTATION) - estimate.fixed
    return max(0, math.floor(room / estimate.per_sample))


def verdict(total: float, memory: int) -> str:
    if total > memory:
        return "does not fit"
    if total > TIGHT * memory:
        return "tight"
    return "fits"
