"""From what the user asked (`gpucheck fit`'s options, or an API call) to a validated Setup:
every option that does not apply to the mode, every absurd value, refused with one line."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpucheck.fit.parts import LAYOUTS, OPTIMIZERS, Setup
from gpucheck.fit.quant import QUANTISED
from gpucheck.fit.shape import ModelError, ModelShape
from gpucheck.fit.units import DTYPE_BYTES, UnitError, parse_dtype

MAX_BATCH = 1 << 20
MAX_SEQ = 100_000_000  # tokens: beyond any context window shipped
MAX_GPUS = 100_000
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down", "q_a", "q_b", "kv_a", "kv_b",
                "all-linear")  # fmt: skip
KV_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8")  # what vLLM/TGI/TensorRT-LLM keep


@dataclass
class Request:
    """The options as given; None: not given (so that one that does not apply is caught)."""

    train: bool = True
    dtype: str | None = None
    batch: int = 1
    seq: int | None = None
    gpus: int = 1
    zero: int | None = None
    parallel: str | None = None
    optimizer: str | None = None
    optimizer_states: str | None = None
    layout: str | None = None
    master_weights: bool | None = None
    checkpointing: bool | None = None
    attention: str = "flash"
    kv_dtype: str | None = None
    lora: int | None = None
    lora_targets: str | None = None
    loss: str | None = None
    timeout: float = 120.0
    text_only: bool = False  # leave a multimodal model's vision/audio towers out


def _refuse_for_mode(req: Request) -> None:
    training_only = {
        "--optimizer": req.optimizer, "--optimizer-states": req.optimizer_states,
        "--layout": req.layout, "--master-weights": req.master_weights,
        "--checkpointing": req.checkpointing, "--zero": req.zero, "--lora": req.lora,
        "--lora-targets": req.lora_targets, "--loss": req.loss,
    }  # fmt: skip
    if not req.train:
        for name, value in training_only.items():
            if value is not None:
                raise UnitError(f"{name} applies to --train, not to --infer (serving)")
    else:
        for name, value in (("--kv-dtype", req.kv_dtype), ("--parallel", req.parallel)):
            if value is not None:
                what = ("training across GPUs is data parallel (--zero); tensor and pipeline "
                        "parallel training is not modelled") if name == "--parallel" else (
                        "the KV cache is kept when serving")  # fmt: skip
                raise UnitError(f"{name} applies to --infer: {what}")


def setup_from(req: Request, shape: ModelShape, default_seq: int | None = None) -> Setup:
    """The validated Setup (UnitError or ModelError: one line for the user)."""
    if not math.isfinite(req.timeout):
        raise UnitError(f"--timeout: {req.timeout} is not a number of seconds")
    for name, value, cap in (("--batch", req.batch, MAX_BATCH), ("--gpus", req.gpus, MAX_GPUS),
                             ("--seq", req.seq, MAX_SEQ)):  # fmt: skip
        if value is not None and not 1 <= value <= cap:
            raise UnitError(f"--{name.lstrip('-')}: {value} is outside 1 to {cap:,}")
    _refuse_for_mode(req)
    dtype = parse_dtype(req.dtype) if req.dtype else (shape.quantization or "bf16")
    optimizer = (req.optimizer or "adamw").lower()
    if optimizer in ("adamw8bit", "adam8bit", "8bit-adam"):
        optimizer = "8bit"
    if optimizer not in OPTIMIZERS:
        raise UnitError(f"--optimizer: {req.optimizer!r} is not one of {', '.join(OPTIMIZERS)}")
    if req.attention not in ("flash", "sdpa", "eager"):
        raise UnitError(f"--attention: {req.attention!r} is not flash, sdpa or eager")
    layout = req.layout or "zero"
    if layout not in LAYOUTS:
        raise UnitError(f"--layout: {layout!r} is not zero or trainer")
    states = req.optimizer_states or "fp32"
    if states not in ("fp32", "bf16"):
        raise UnitError(f"--optimizer-states: {states!r} is not fp32 or bf16")
    if req.loss not in (None, "fused", "unfused"):
        raise UnitError(f"--loss: {req.loss!r} is not fused or unfused")
    kv = None
    if req.kv_dtype:
        kv = parse_dtype(req.kv_dtype, "--kv-dtype")
        if kv not in KV_DTYPES:
            raise UnitError(
                f"--kv-dtype {kv}: serving engines keep the KV cache in fp16, bf16, fp8 or "
                "int8; not modelled"
            )
    zero = req.zero or 0
    if not 0 <= zero <= 3:
        raise UnitError(f"--zero: {zero} is not a ZeRO stage (0 to 3)")
    if zero and req.gpus == 1:
        raise UnitError("--zero shards over several GPUs: pass --gpus N as well")
    parallel = req.parallel
    if parallel is not None and parallel not in ("tensor", "pipeline"):
        raise UnitError(f"--parallel: {parallel!r} is not tensor or pipeline")
    if parallel is not None and req.gpus == 1:
        raise UnitError("--parallel splits a model over several GPUs: pass --gpus N as well")
    if not req.train and req.gpus > 1:
        parallel = parallel or "tensor"
    targets: tuple[str, ...] = ("q", "v")
    if req.lora_targets is not None:
        if req.lora is None:
            raise UnitError("--lora-targets needs --lora RANK")
        targets = tuple(t.strip().removesuffix("_proj") for t in req.lora_targets.split(","))
        bad = [t for t in targets if t not in LORA_TARGETS]
        if bad or not targets:
            raise UnitError(f"--lora-targets: {', '.join(bad) or 'nothing'} not among "
                            f"{', '.join(LORA_TARGETS)}")  # fmt: skip
    if req.lora is not None:
        if not 1 <= req.lora <= 65536:
            raise UnitError(f"--lora: rank {req.lora} is outside 1 to 65536")
        if not shape.linears:
            raise ModelError("--lora needs the model's config.json (the adapted layers' shapes)")
        if zero:
            raise UnitError("--lora with --zero is not modelled (adapters are small: use DDP)")
    if req.train and dtype in QUANTISED and dtype != "fp8" and req.lora is None:
        raise UnitError(
            f"--train with --dtype {dtype}: quantised weights are not trained directly "
            "(QLoRA trains adapters: add --lora 16); estimate --infer, or train in bf16"
        )
    return Setup(
        mode="train" if req.train else "infer",
        dtype=dtype,
        batch=req.batch,
        seq=req.seq or default_seq,
        optimizer=optimizer,
        master_weights=req.master_weights is not False,
        checkpointing=bool(req.checkpointing),
        gpus=req.gpus,
        zero=zero,
        flash_attention=req.attention != "eager",
        kv_dtype=kv,
        parallel=parallel or "data",
        layout=layout,
        optimizer_states=states,
        lora_rank=req.lora,
        lora_targets=targets,
        fused_loss=req.loss == "fused",
        stored_bytes=_stored(shape, req, dtype),
    )


def _stored(shape: ModelShape, req: Request, dtype: str) -> int | None:
    """Serving a checkpoint whose files give their bytes, with no --dtype: those bytes."""
    if req.train or req.dtype is not None or not shape.param_bytes:
        return None
    return shape.param_bytes


assert set(KV_DTYPES) <= set(DTYPE_BYTES)
