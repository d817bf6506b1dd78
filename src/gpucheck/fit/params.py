"""Parameter counts of a transformer, matrix by matrix as the families' modelling code builds
them: total (every weight resident), active (what one token touches: its embedding row, the
attention, the shared and the top-k routed experts), and the linear layers LoRA can adapt."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpucheck.fit.hybrid import Mixer
from gpucheck.fit.shape import Linear


@dataclass(frozen=True)
class Arch:
    """The architecture as config.py read it (validated, defaults resolved)."""

    hidden: int
    layers: int  # decoder layers (an encoder-only model's layers)
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    gated: bool
    tied: bool
    qkv_bias: bool = False
    k_bias: bool = True  # Whisper: Q, V and O have biases, K none
    o_bias: bool = False
    mlp_bias: bool = False
    norm_bias: bool = False
    norms_per_layer: int = 2
    qk_norm: bool = False
    positions: int = 0  # learned position rows (decoder, or the only stack)
    parallel_single_norm: bool = False  # Falcon-7B: one LayerNorm for attention and MLP
    # MoE
    experts: int = 1
    experts_per_token: int = 1
    moe_intermediate: int = 0
    shared_intermediate: int = 0
    shared_gate: bool = False  # Qwen2-MoE's sigmoid gate on the shared expert
    moe_layers: int = 0
    router_bias: bool = False  # gpt-oss: a bias per expert on the router
    sinks: bool = False  # gpt-oss: one learned attention-sink logit per head and layer
    # Hybrid and state-space models (hybrid.py): None is every layer.
    attention_layers: int | None = None
    mlp_layers: int | None = None
    mamba_layers: int = 0
    mixer: Mixer | None = None
    mtp_layers: int = 0  # DeepSeek-V3's multi-token-prediction modules (num_nextn_predict_layers)
    # MLA (DeepSeek-V2/V3)
    mla: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int = 0
    rope_dim: int = 0
    nope_dim: int = 0
    v_dim: int = 0
    # Encoder-decoder and encoders
    encoder_layers: int = 0
    encoder_heads: int = 0
    encoder_intermediate: int = 0
    encoder_positions: int = 0  # learned (or stored sinusoidal) encoder position rows
    relative_buckets: int = 0  # T5: relative attention bias table per stack
    embedding_norms: int = 0  # BART (one a stack), BERT: a LayerNorm right after the embeddings
    final_norm_per_stack: bool = True
    token_types: int = 0  # BERT
    pooler: bool = False  # BERT
    conv_frontend: int = 0  # Whisper: mel bins of the two-conv audio front end
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Counts:
    total: int
    active: int
    embedding: int
    head: int
    linears: tuple[Linear, ...]
    mtp: int = 0  # the multi-token-prediction modules as the checkpoint stores them


def _norm(arch: Arch, width: int) -> int:
    return width * (2 if arch.norm_bias else 1)


def attention(
    arch: Arch, heads: int, kv_heads: int, cross: bool = False
) -> tuple[int, list[Linear]]:
    """One attention block's parameters and its linear layers (per layer)."""
    h, d = arch.hidden, arch.head_dim
    if arch.mla and not cross:
        qk = arch.nope_dim + arch.rope_dim
        lin = []
        if arch.q_lora_rank:
            lin += [Linear("q_a", h, arch.q_lora_rank, 1),
                    Linear("q_b", arch.q_lora_rank, heads * qk, 1)]  # fmt: skip
        else:
            lin.append(Linear("q", h, heads * qk, 1))
        lin += [
            Linear("kv_a", h, arch.kv_lora_rank + arch.rope_dim, 1),
            Linear("kv_b", arch.kv_lora_rank, heads * (arch.nope_dim + arch.v_dim), 1),
            Linear("o", heads * arch.v_dim, h, 1),
        ]
        norms = arch.kv_lora_rank + (arch.q_lora_rank or 0)  # the latents' RMSNorms
        return sum(x.inputs * x.outputs for x in lin) + norms, lin
    q, kv = heads * d, kv_heads * d
    lin = [Linear("q", h, q, 1), Linear("k", h, kv, 1), Linear("v", h, kv, 1),
           Linear("o", q, h, 1)]  # fmt: skip
    n = sum(x.inputs * x.outputs for x in lin)
    if arch.qkv_bias:
        n += q + kv * (2 if arch.k_bias else 1)
    if arch.o_bias:
        n += h
    if arch.qk_norm:
        n += 2 * d
    if arch.sinks:
        n += heads
    return n, lin


def mamba(arch: Arch, m: Mixer) -> tuple[int, list[Linear]]:
    """One Mamba or Mamba-2 block's parameters and its linear layers (hybrid.py's layout)."""
    h = arch.hidden
    if m.version == 1:
        lin = [
            Linear("in_proj", h, 2 * m.d_inner, 1),
            Linear("x_proj", m.d_inner, m.dt_rank + 2 * m.d_state, 1),
            Linear("dt_proj", m.dt_rank, m.d_inner, 1),
            Linear("out_proj", m.d_inner, h, 1),
        ]
        per_channel = m.d_state + 2  # A_log row, D, dt_proj's bias
    else:
        projected = 2 * m.d_inner + 2 * m.groups * m.d_state + m.heads
        lin = [Linear("in_proj", h, projected, 1), Linear("out_proj", m.d_inner, h, 1)]
        per_channel = 0
    n = sum(x.inputs * x.outputs for x in lin) + m.d_inner * per_channel + m.inner_norms
    n += m.conv_channels * m.d_conv + (m.conv_channels if m.conv_bias else 0)
    if m.version == 2:
        n += 3 * m.heads  # dt_bias, A_log, D
    if m.proj_bias:
        n += lin[0].outputs + h
    return n, lin


def mlp(arch: Arch, width: int, name: str = "") -> tuple[int, list[Linear]]:
    h = arch.hidden
    lin = [Linear(f"{name}up", h, width, 1), Linear(f"{name}down", width, h, 1)]
    if arch.gated:
        lin.insert(0, Linear(f"{name}gate", h, width, 1))
    n = sum(x.inputs * x.outputs for x in lin)
    if arch.mlp_bias:
        n += width * (2 if arch.gated else 1) + h
    return n, lin


def count(arch: Arch) -> Counts:
    h, L = arch.hidden, arch.layers
    attn_layers = L if arch.attention_layers is None else arch.attention_layers
    mlp_layers = L if arch.mlp_layers is None else arch.mlp_layers
    attn, attn_lin = attention(arch, arch.heads, arch.kv_heads)
    dense, dense_lin = mlp(arch, arch.intermediate)
    norms = (1 if arch.parallel_single_norm else arch.norms_per_layer) * _norm(arch, h)
    dense_layers = mlp_layers - arch.moe_layers
    linears = [Linear(x.name, x.inputs, x.outputs, attn_layers) for x in attn_lin]
    total = attn_layers * attn + L * norms + dense_layers * dense
    if arch.mixer is not None and arch.mamba_layers:
        block, block_lin = mamba(arch, arch.mixer)
        total += arch.mamba_layers * block
        linears += [Linear(x.name, x.inputs, x.outputs, arch.mamba_layers) for x in block_lin]
    active = total
    linears += [Linear(x.name, x.inputs, x.outputs, dense_layers) for x in dense_lin]
    ffn = dense  # the MLP of an MTP module's layer: the MoE block where there are experts
    if arch.moe_layers:
        expert, expert_lin = mlp(arch, arch.moe_intermediate)
        shared, shared_lin = (
            mlp(arch, arch.shared_intermediate) if arch.shared_intermediate else (0, [])
        )
        router = h * arch.experts + (h if arch.shared_gate else 0)
        router += arch.experts if arch.router_bias else 0
        per_layer = arch.experts * expert + shared + router
        ffn = per_layer
        total += arch.moe_layers * per_layer
        active += arch.moe_layers * (arch.experts_per_token * expert + shared + router)
        linears += [
            Linear("expert_" + x.name, x.inputs, x.outputs, arch.moe_layers * arch.experts)
            for x in expert_lin
        ]
        linears += [Linear("shared_" + x.name, x.inputs, x.outputs, arch.moe_layers)
                    for x in shared_lin]  # fmt: skip
    embedding = arch.vocab * h + arch.positions * h + arch.token_types * h
    head = 0 if arch.tied else arch.vocab * h
    final = _norm(arch, h) if arch.final_norm_per_stack else 0
    extra = arch.embedding_norms * _norm(arch, h)
    extra += (h * h + h) if arch.pooler else 0
    extra += arch.relative_buckets * arch.heads
    if arch.encoder_layers:
        enc = _encoder(arch)
        cross, cross_lin = attention(arch, arch.heads, arch.heads, cross=True)
        total += enc + L * (cross + _norm(arch, h))
        active += enc + L * (cross + _norm(arch, h))
        linears += [Linear("cross_" + x.name, x.inputs, x.outputs, L) for x in cross_lin]
        embedding += arch.encoder_positions * h
    rest = embedding + head + final + extra
    # An MTP module (DeepSeek-V3 section 2.2): one more layer, a projection of [h; embedding]
    # (2h -> h), three RMSNorms, and its own copies of the embedding and the output head.
    mtp = arch.mtp_layers * (attn + norms + ffn + 2 * h * h + 3 * h + 2 * arch.vocab * h)
    return Counts(total + rest, active + rest, embedding, head, tuple(linears), mtp)


def _encoder(arch: Arch) -> int:
    """An encoder stack of an encoder-decoder model (its own heads and MLP width)."""
    h = arch.hidden
    attn, _ = attention(arch, arch.encoder_heads, arch.encoder_heads, cross=True)
    ffn, _ = mlp(arch, arch.encoder_intermediate)
    n = arch.encoder_layers * (attn + ffn + 2 * _norm(arch, h))
    n += _norm(arch, h) if arch.final_norm_per_stack else 0
    n += arch.relative_buckets * arch.encoder_heads
    if arch.conv_frontend:  # two Conv1d(k=3) with biases: mels -> h, h -> h
        n += arch.conv_frontend * h * 3 + h + h * h * 3 + h
    return n
