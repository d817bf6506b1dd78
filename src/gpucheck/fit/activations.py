"""What a training step keeps for backward, per sample.

Two layer models, chosen by the family:
- LayerNorm families with dropout (GPT-2, BERT, OPT, Falcon): Korthikanti et al., "Reducing
  Activation Recomputation in Large Transformer Models" (arXiv:2205.05198) eq. 2,
  s*b*h*(34 + 5*a*s/h) bytes with 16-bit activations, written out term by term so that another
  MLP width, no dropout and fused attention change only their own terms.
- RMSNorm families (Llama, Mistral, Qwen, Gemma, DeepSeek), as Hugging Face's modelling code
  computes them: each RMSNorm keeps an fp32 copy of its input, its fp32 reciprocal root and its
  normalised output before and after the weight; SwiGLU keeps gate, act(gate), up and their
  product; fused attention (SDPA/flash) keeps Q, K, V, its output and an fp32 log-sum-exp per
  row; eager attention keeps K and V repeated to every head, the fp32 softmax and its 16-bit
  copy; an MoE layer keeps, per token and chosen expert, the gathered input and output rows
  and the routing bookkeeping. Checked against torch's saved tensors of real LlamaForCausalLM
  and Qwen3MoeForCausalLM (tests/fit/test_fit_measured.py).
Full recomputation keeps each layer's input only (Korthikanti section 4.1: 2*s*b*h*L), plus one
layer rebuilt at a time.
"""

from __future__ import annotations

from gpucheck.fit.parts import Setup, activation_bytes
from gpucheck.fit.shape import ModelShape


def mlp_width(shape: ModelShape, moe: bool) -> tuple[int, int]:
    """(width, MLP copies a token goes through) of a dense or an MoE layer."""
    h = shape.hidden or 0
    if moe and shape.moe_intermediate:
        return shape.moe_intermediate, shape.experts_per_token + (
            1 if shape.shared_intermediate else 0
        )
    return shape.intermediate or 4 * h, 1


def layer_activations(shape: ModelShape, setup: Setup, seq: int, moe: bool = False) -> float:
    """Bytes one transformer layer saves for backward, per sample (b = 1)."""
    if shape.rms_norm:
        return _hf_rms_layer(shape, setup, seq, moe)
    return _korthikanti_layer(shape, setup, seq, moe)


def _korthikanti_layer(shape: ModelShape, setup: Setup, seq: int, moe: bool) -> float:
    """Korthikanti eq. 2 term by term, 16-bit values (2 bytes) and 1-byte dropout masks:
    attention: QKV input 2sh, Q and K 4sh, V 2sh, output-projection input 2sh, scores softmax
    2as^2, dropout mask as^2 and output 2as^2, output dropout mask sh; MLP: input 2sh,
    activation input 2sI, second-linear input 2sI, dropout mask sh (I = 4h: 19sh), a gated MLP
    its gate input too; 2 LayerNorm inputs 4sh. Sum with I = 4h: 34sh + 5as^2."""
    assert shape.hidden and shape.heads
    h, a = shape.hidden, shape.heads
    inter, copies = mlp_width(shape, moe)
    scale = activation_bytes(setup.dtype) / 2  # the paper's figures are for 2-byte values
    mask = 1 if shape.dropout else 0
    # Q and the output-projection input are h wide; K and V kv_heads x head_dim (MQA/GQA).
    kv = (shape.kv_heads or a) * (shape.head_dim or h // a) / h
    attention = (2 + 2 + 2 * kv + 2 * kv + 2) * seq * h * scale + mask * seq * h
    if setup.flash_attention:
        attention += a * seq * 4  # fp32 log-sum-exp per row; no s x s matrix is kept
    else:
        attention += (2 * scale + mask + (2 * scale if mask else 0)) * a * seq * seq
    mlp_inputs = 3 if shape.gated_mlp else 2
    mlp = 2 * seq * h * scale + copies * mlp_inputs * 2 * seq * inter * scale + mask * seq * h
    norms = 4 * seq * h * scale
    return attention + mlp + norms


def _hf_rms_layer(shape: ModelShape, setup: Setup, seq: int, moe: bool) -> float:
    assert shape.hidden and shape.heads
    s, h, a = seq, shape.hidden, shape.heads
    act = activation_bytes(setup.dtype)
    d = shape.head_dim or h // a
    q_dim = a * d
    kv_dim = (shape.kv_heads or a) * d
    if shape.mla:  # K and V expanded per head from the latent (values: v_head_dim)
        kv_dim = a * (d + (shape.value_dim or d)) // 2
    # RMSNorm: fp32 input (the same tensor when already fp32), normalised, weighted, 1/rms.
    norm = 4 * s * h + 2 * act * s * h + 4 * s
    if setup.flash_attention:
        attention = act * s * (2 * q_dim + 2 * kv_dim) + 4 * a * s
    else:
        softmax = 4 * a * s * s + (act * a * s * s if act < 4 else 0)
        attention = act * s * 4 * q_dim + softmax
    if shape.qk_norm:  # per-head RMSNorm of Q and K: fp32 copy, 1/rms, normalised
        attention += (4 + act) * s * (q_dim + kv_dim) + 4 * s * (a + (shape.kv_heads or a))
    inter, copies = mlp_width(shape, moe)
    per_copy = (4 if shape.gated_mlp else 2) * act * s * inter
    routing = 0.0
    if moe:
        k = shape.experts_per_token
        # fp32 router logits; per (token, expert): its gathered input and output rows, the
        # routing weight and the indices that scatter it back (int64).
        routing = 4 * s * shape.experts + s * k * (2 * h * act + act + 4 + 3 * 8)
    return 2 * norm + attention + copies * per_copy + routing


def train_activations(
    shape: ModelShape, setup: Setup, assumptions: list[str]
) -> tuple[float | None, str]:
    """Per-sample bytes of a training step's saved activations, and how."""
    if shape.traced_activation_bytes is not None:
        scale = activation_bytes(setup.dtype) / 4  # traced in fp32 on the meta device
        per = shape.traced_activation_bytes * scale
        if setup.checkpointing:
            assumptions.append("--checkpointing is not applied to a traced module")
        return per, f"traced {shape.traced_input} ({per:,.0f} B a sample)"
    if not shape.is_transformer or setup.seq is None:
        return None, ""
    if shape.mamba_layers:
        assumptions.append(
            f"{shape.mamba_layers} Mamba layers: what their scan saves for backward is not "
            "modelled, so activations are left out"
        )
        return None, ""
    assert shape.layers and shape.hidden
    s, h = setup.seq, shape.hidden
    act = activation_bytes(setup.dtype)
    layers = shape.layers + (shape.encoder_layers or 0)
    dense = layer_activations(shape, setup, s)
    moe = layer_activations(shape, setup, s, moe=True) if shape.moe_layers else dense
    stack = (layers - shape.moe_layers) * dense + shape.moe_layers * moe
    model = "Hugging Face RMSNorm/SwiGLU terms" if shape.rms_norm else "Korthikanti eq. 2"
    if shape.encoder_layers:
        assumptions.append(
            "encoder-decoder: encoder and decoder layers counted alike, cross-attention's own "
            "buffers not counted; encoder and decoder both at --seq tokens"
        )
    if setup.checkpointing:
        stack = layers * s * h * act + max(dense, moe)
        how = f"{layers} layers x {s}x{h}x{act:g} B kept + one layer recomputed"
    else:
        how = f"{layers} layers ({model}, seq {s})"
    if setup.fused_loss:
        logits = 0.0
        assumptions.append("fused cross-entropy (--loss fused): no logits kept")
    else:
        # The logits upcast to fp32; cross-entropy keeps its fp32 log-softmax for backward.
        logits = 4.0 * s * (shape.vocab or 0)
        assumptions.append(
            f"loss over all {s} positions, unfused: fp32 log-softmax of the logits kept "
            "(4 B each; --loss fused for Liger/chunked cross-entropy)"
        )
    final_norm = 4 * s * h + 2 * act * s * h if shape.rms_norm else 2 * s * h * act / 2
    return stack + logits + final_norm, how + " + final norm + logits"
