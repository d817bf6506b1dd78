"""A training step's model states per GPU: weights, gradients, optimizer states, full or LoRA.

- Rajbhandari et al., "ZeRO" (arXiv:1910.02054) section 3.1: mixed-precision Adam holds
  2 (16-bit weights) + 2 (16-bit gradients) + 12 (fp32 master weights, momentum, variance) =
  16 bytes per parameter; stages 1/2/3 shard the 12, then the gradients, then the weights over
  the data-parallel GPUs (section 5). Megatron-LM keeps the same layout. FSDP FULL_SHARD is
  stage 3, SHARD_GRAD_OP stage 2.
- Hugging Face "Model training anatomy": mixed precision in the Trainer keeps fp32 weights and
  a 16-bit copy (6 bytes), fp32 gradients (4) and AdamW's two fp32 moments (8): 18 bytes per
  parameter; 8-bit AdamW 2 bytes of state, SGD with momentum 4. Adafactor (Shazeer & Stern,
  arXiv:1804.04235) keeps factored second moments: 4 * (rows + columns) bytes per matrix.
- LoRA (Hu et al., arXiv:2106.09685): a frozen base and r * (inputs + outputs) trainable
  parameters per adapted matrix; QLoRA (Dettmers et al., arXiv:2305.14314) keeps the base in
  NF4. peft keeps adapters in fp32: 4 (weights) + 4 (gradients) + 8 (AdamW) bytes each.
"""

from __future__ import annotations

from gpucheck.fit.activations import train_activations
from gpucheck.fit.parts import Estimate, Part, Setup, finish
from gpucheck.fit.quant import weight_bytes
from gpucheck.fit.shape import ModelShape
from gpucheck.fit.units import DTYPE_BYTES

# Bytes of optimizer state per parameter with fp32 states, master weights not included.
OPTIMIZER_BYTES = {"adam": 8.0, "adamw": 8.0, "sgd": 4.0, "8bit": 2.0}


def optimizer_bytes(shape: ModelShape, setup: Setup, assumptions: list[str]) -> float:
    if setup.optimizer == "adafactor":
        h = shape.hidden or 1024
        if shape.hidden is None:
            assumptions.append("Adafactor state sized for matrices of width 1024 (no config)")
        return 4 * 2 / h  # 4 bytes * (rows + cols) per rows*cols matrix, rows ~ cols ~ h
    per = OPTIMIZER_BYTES[setup.optimizer]
    if setup.optimizer_states == "bf16" and setup.optimizer in ("adam", "adamw", "sgd"):
        per /= 2
    return per


def lora_params(shape: ModelShape, rank: int, targets: tuple[str, ...]) -> int:
    """Trainable parameters of LoRA adapters of `rank` on the named linear layers."""
    every = "all-linear" in targets
    return sum(
        rank * (x.inputs + x.outputs) * x.count
        for x in shape.linears
        if every or x.name.split("_")[-1] in targets or x.name in targets
    )


def train(shape: ModelShape, setup: Setup) -> Estimate:
    if setup.lora_rank:
        return _lora(shape, setup)
    n = max(1, setup.gpus)
    stage = setup.zero if n > 1 else 0
    p = shape.params
    # fp8 training keeps 16-bit weights and casts per matmul (Transformer Engine): bf16 here.
    wdtype = "bf16" if setup.dtype == "fp8" else setup.dtype
    wbytes = DTYPE_BYTES[wdtype]
    assumptions: list[str] = []
    trainer = setup.layout == "trainer" and wdtype != "fp32"
    if trainer:
        # HF Trainer: fp32 weights + 16-bit copy, fp32 gradients, fp32 optimizer states.
        w_per, g_per, master = 4 + wbytes, 4.0, 0.0
        assumptions.append(
            "layout: Hugging Face Trainer mixed precision (fp32 weights + a 16-bit copy, fp32 "
            "gradients: 18 B/param with AdamW, per its 'Model training anatomy')"
        )
    else:
        w_per, g_per = wbytes, wbytes
        master = 4.0 if (setup.master_weights and wdtype != "fp32") else 0.0
        assumptions.append(
            "layout: ZeRO/Megatron mixed precision (16-bit weights and gradients, fp32 master "
            "weights and states: 16 B/param with AdamW); --layout trainer for HF Trainer's 18"
            if master
            else f"layout: weights, gradients in {wdtype}, no fp32 master copy"
        )
    opt_per = optimizer_bytes(shape, setup, assumptions)
    shard = f" / {n} GPUs (ZeRO stage {stage})" if stage else ""
    parts = [
        Part("weights", p * w_per / (n if stage >= 3 else 1),
             f"{p:,} x {w_per:g} B" + (shard if stage >= 3 else "")),
        Part("gradients", p * g_per / (n if stage >= 2 else 1),
             f"{p:,} x {g_per:g} B" + (shard if stage >= 2 else "")),
        Part("optimizer", p * (opt_per + master) / (n if stage >= 1 else 1),
             f"{p:,} x ({opt_per:g} B {setup.optimizer} {setup.optimizer_states} states"
             + (f" + {master:g} B fp32 master weights" if master else "") + ")"
             + (shard if stage >= 1 else "")),
    ]  # fmt: skip
    if stage >= 3:
        assumptions.append("ZeRO stage 3 gathers one layer's full weights at a time: not counted")
    if n > 1:
        assumptions.append(
            "communication buckets of DDP/ZeRO (tens to hundreds of MiB): not counted"
        )
    return _with_activations(shape, setup, parts, assumptions)


def _lora(shape: ModelShape, setup: Setup) -> Estimate:
    assumptions: list[str] = []
    trainable = lora_params(shape, setup.lora_rank or 0, setup.lora_targets)
    base, how = weight_bytes(shape, setup.dtype)
    q = "QLoRA" if setup.dtype in ("nf4", "int4", "int8", "fp4") else "LoRA"
    opt_per = optimizer_bytes(shape, setup, assumptions)
    parts = [
        Part("weights", base, f"frozen base: {how}"),
        Part("adapters", trainable * 4.0,
             f"{trainable:,} {q} params (rank {setup.lora_rank} on "
             f"{','.join(setup.lora_targets)}) x 4 B fp32"),
        Part("gradients", trainable * 4.0, f"{trainable:,} x 4 B (adapters only)"),
        Part("optimizer", trainable * opt_per,
             f"{trainable:,} x {opt_per:g} B {setup.optimizer}"),
    ]  # fmt: skip
    assumptions.append(
        f"{q}: base weights frozen (no gradients, no optimizer states); adapters in fp32 as "
        "peft keeps them; activations as in full training (backward still runs through "
        "every layer)"
    )
    if setup.gpus > 1:
        assumptions.append("several GPUs: each holds the whole base and the adapters (DDP)")
    return _with_activations(shape, setup, parts, assumptions)


def _with_activations(
    shape: ModelShape, setup: Setup, parts: list[Part], assumptions: list[str]
) -> Estimate:
    per_sample, how = train_activations(shape, setup, assumptions)
    if per_sample is not None:
        parts.append(Part("activations", per_sample * setup.batch, f"{how} x batch {setup.batch}"))
        return finish(parts, per_sample, assumptions)
    assumptions.append(
        "activations NOT included (no architecture or trace): a LOWER BOUND; pass a "
        "config.json with --seq, or --torch-module with --input"
    )
    return finish(parts, per_sample, assumptions, lower_bound=True)
