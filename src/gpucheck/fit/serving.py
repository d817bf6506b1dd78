"""Serving memory per GPU: weights, KV cache and one step's buffers, on one GPU or split over
several by tensor or pipeline parallelism.

- KV cache: 2 (K and V) * layers * kv_heads * head_dim * tokens * bytes (Kwon et al.,
  "Efficient Memory Management for Large Language Model Serving with PagedAttention",
  arXiv:2309.06180, section 3: 800 KB a token for OPT-13B). Multi-query attention keeps one KV
  head (Shazeer, arXiv:1911.02150), grouped-query attention kv_heads (Ainslie et al.,
  arXiv:2305.13245). Multi-head latent attention keeps one latent of kv_lora_rank plus the
  shared rope key, qk_rope_head_dim, per layer and token: (d_c + d_h^R) * l elements
  (DeepSeek-V2, arXiv:2405.04434, Table 1). Sliding-window layers keep at most the window
  (Mistral 7B, arXiv:2310.06825, section 2: rolling buffer cache).
- Tensor parallelism (Megatron-LM, Shoeybi et al., arXiv:1909.08053): every matrix split over
  the GPUs, the KV heads too; with fewer KV heads than GPUs each GPU keeps one (vLLM replicates
  them); MLA's latent is not split by head, so each GPU keeps all of it.
- Pipeline parallelism: each GPU holds a contiguous stage of layers, and its share of the KV.
"""

from __future__ import annotations

import math

from gpucheck.fit.parts import Estimate, Part, Setup, activation_bytes, compute_dtype, finish
from gpucheck.fit.quant import QUANTISED, weight_bytes
from gpucheck.fit.shape import ModelShape
from gpucheck.fit.units import DTYPE_BYTES


def infer(shape: ModelShape, setup: Setup) -> Estimate:
    n = max(1, setup.gpus)
    tp = n if setup.parallel == "tensor" else 1
    pp = n if setup.parallel == "pipeline" else 1
    assumptions: list[str] = []
    parts = [_weights(shape, setup, tp, pp, assumptions)]
    kv_dtype = setup.kv_dtype or compute_dtype(setup.dtype)
    kv_b = DTYPE_BYTES[kv_dtype]
    per_sample: float | None = None
    if shape.is_transformer and setup.seq is not None:
        assert shape.hidden is not None and shape.layers
        s, h, act = setup.seq, shape.hidden, activation_bytes(setup.dtype)
        stage = math.ceil(shape.layers / pp) / shape.layers
        kv = 0.0
        if shape.decoder and shape.kv_per_layer is not None:
            kv = shape.kv_elements(s, tp) * stage * kv_b
            parts.append(
                Part("kv_cache", kv * setup.batch, _kv_how(shape, setup, kv_dtype, tp, pp))
            )
            if shape.sliding_window and shape.windowed_layers and s > shape.sliding_window:
                assumptions.append(
                    f"sliding window: {shape.windowed_layers} of {shape.layers} layers keep "
                    f"only the last {shape.sliding_window} tokens' K and V"
                )
        if shape.recurrent_elements:
            state = shape.recurrent_elements / tp * stage * act
            kv += state
            parts.append(Part(
                "ssm_state", state * setup.batch,
                f"{shape.mamba_layers} Mamba layers x {shape.recurrent_per_layer:,} (conv + SSM "
                f"state) x {act:g} B" + (f" / {tp} GPUs" if tp > 1 else "")
                + f", the same at any length, x batch {setup.batch}",
            ))  # fmt: skip
            assumptions.append(
                "Mamba layers keep a recurrent state per sequence in the compute dtype (vLLM's "
                "mamba_ssm_cache_dtype auto); an fp32 SSM state doubles it"
            )
        if shape.cross_kv_per_token:
            enc = shape.encoder_positions or s
            cross = shape.cross_kv_per_token / tp * stage * enc * kv_b
            kv += cross
            parts.append(Part(
                "cross_kv_cache", cross * setup.batch,
                f"2 x {shape.layers} decoder layers x {shape.heads} heads x {shape.head_dim} x "
                f"{enc} encoder positions x {kv_b:g} B" + (f" / {tp} GPUs" if tp > 1 else "")
                + f" x batch {setup.batch}",
            ))  # fmt: skip
            if not shape.encoder_positions:
                assumptions.append(f"encoder input of {s} tokens (--seq) for the cross-attention")
        work = _buffers(shape, setup, s, h, act, tp, assumptions)
        parts.append(Part(
            "activations", work * setup.batch,
            f"one layer's buffers at {s} tokens" + (f", MLP split over {tp}" if tp > 1 else "")
            + (" + s x s scores" if not setup.flash_attention else "")
            + (" + last logits" if shape.decoder else "") + f", x batch {setup.batch}",
        ))  # fmt: skip
        per_sample = kv + work
    elif shape.traced_activation_bytes is not None:
        per = shape.traced_activation_bytes * activation_bytes(setup.dtype) / 4
        parts.append(Part("activations", per * setup.batch, f"traced, x batch {setup.batch}"))
        per_sample = per
        assumptions.append("inference of a traced module: counted as its saved activations")
    else:
        assumptions.append(
            "KV cache and activations NOT included (no architecture): a LOWER BOUND; pass the "
            "model's config.json for them"
        )
        return finish(parts, None, assumptions, lower_bound=True)
    if n > 1:
        assumptions.append(
            f"{'tensor' if tp > 1 else 'pipeline'} parallel over {n} GPUs: each GPU also keeps "
            "the engine's CUDA context and NCCL buffers (counted in context); vLLM reserves "
            "--gpu-memory-utilization (0.9) of each GPU and fills the rest with KV blocks"
        )
    return finish(parts, per_sample, assumptions)


def _weights(shape: ModelShape, setup: Setup, tp: int, pp: int, assumptions: list[str]) -> Part:
    if setup.stored_bytes:
        total, how = float(setup.stored_bytes), f"{setup.stored_bytes:,} B as the files store them"
    else:
        total, how = weight_bytes(shape, setup.dtype)
    if setup.dtype in QUANTISED and not shape.linears:
        assumptions.append(
            f"{setup.dtype}: no architecture, so every parameter is counted as quantised; "
            "embeddings and head are usually kept in 16-bit (more memory)"
        )
    if tp > 1:
        return Part("weights", total / tp, f"({how}) / {tp} GPUs (tensor parallel)")
    if pp > 1 and shape.layers:
        ends = max(shape.embedding_params, shape.head_params)
        share = total * (1 - (shape.embedding_params + shape.head_params) / shape.params)
        stage = share * math.ceil(shape.layers / pp) / shape.layers + ends * 2
        assumptions.append("pipeline stages of whole layers; the heaviest stage holds the "
                           "embeddings or the output head")  # fmt: skip
        return Part(
            "weights", stage,
            f"({how}): {math.ceil(shape.layers / pp)} of {shape.layers} layers + embeddings",
        )  # fmt: skip
    if pp > 1:
        return Part("weights", total / pp, f"({how}) / {pp} stages")
    return Part("weights", total, how)


def _kv_how(shape: ModelShape, setup: Setup, kv_dtype: str, tp: int, pp: int) -> str:
    kv_b = DTYPE_BYTES[kv_dtype]
    s = setup.seq or 0
    if shape.mla:
        latent = "latent (kv_lora_rank + qk_rope_head_dim)"
        each = f"{shape.kv_layers} layers x {shape.kv_per_layer} {latent}"
    else:
        heads = shape.kv_heads or 0
        per_gpu = max(1, -(-heads // tp)) if tp > 1 else heads
        each = f"2 x {shape.kv_layers} layers x {per_gpu} kv heads x {shape.head_dim}"
    window = ""
    if shape.sliding_window and shape.windowed_layers and s > shape.sliding_window:
        window = f" ({shape.windowed_layers} layers capped at the {shape.sliding_window} window)"
    stage = f" x {math.ceil((shape.layers or 1) / pp)}/{shape.layers} layers" if pp > 1 else ""
    return f"{each} x {s} tokens{window} x {kv_b:g} B ({kv_dtype}){stage} x batch {setup.batch}"


def _buffers(
    shape: ModelShape, setup: Setup, s: int, h: int, act: float, tp: int, assumptions: list[str]
) -> float:
    """One layer's transient buffers: its input, the MLP's intermediate(s) (split over tensor
    parallel GPUs); an encoder also holds its Q, K and V (a decoder's K and V are the cache);
    eager attention its scores and their softmax. A decoder's logits: the last position, fp32."""
    if shape.moe_layers and shape.moe_intermediate:
        inter = shape.moe_intermediate * shape.experts_per_token + shape.shared_intermediate
    else:
        inter = shape.intermediate or 4 * h
    inter *= 2 if shape.gated_mlp else 1
    work = s * (h + inter / tp) * act
    if not shape.decoder:
        work += 3 * s * h * act
        assumptions.append("encoder: hidden states out, no task head's output counted")
    if not setup.flash_attention:
        work += 2 * shape.heads_or_one * s * s * act / tp
    if shape.decoder:
        work += (shape.vocab or 0) * 4
    return work
