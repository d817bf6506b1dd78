"""What each Hugging Face model family builds that its config.json does not spell out: gated
or plain MLP, biases, LayerNorm or RMSNorm, learned positions, tied embeddings by default.

Each entry follows the family's modelling code in transformers (modeling_<type>.py) and its
configuration class's defaults. A model_type not listed is counted from the generic fields
with the assumptions stated in the report (config.py says which).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Family:
    gated: bool  # gate, up and down projections (SwiGLU/GeGLU)
    tied: bool  # tie_word_embeddings' default in the configuration class
    qkv_bias: bool = False  # biases on Q, K and V
    o_bias: bool = False
    mlp_bias: bool = False
    norm_bias: bool = False  # LayerNorm with a bias (RMSNorm has none)
    rms: bool = True  # RMSNorm computed in fp32 (Llama-style)
    norms_per_layer: int = 2
    qk_norm: bool = False  # RMSNorm over each head's Q and K (Qwen3, Gemma 3)
    positions: int = 0  # learned position embeddings: 1 when present; offset in position_offset
    position_offset: int = 0  # OPT and BART keep 2 extra rows
    multi_query_default: bool = False  # gpt_bigcode: one KV head unless multi_query is false
    encoder_only: bool = False
    encoder_decoder: bool = False
    mla: bool = False
    router_bias: bool = False
    sinks: bool = False


_LLAMA = Family(gated=True, tied=False)
# GPT-2's layer: biases everywhere, LayerNorm, learned positions; most older families vary it.
_GPT2 = Family(
    gated=False, tied=True, qkv_bias=True, o_bias=True, mlp_bias=True, norm_bias=True,
    rms=False, positions=1,
)  # fmt: skip
_BERT = replace(_GPT2, encoder_only=True)

FAMILIES: dict[str, Family] = {
    "llama": _LLAMA,
    "mistral": _LLAMA,
    "mixtral": _LLAMA,
    "phi3": _LLAMA,
    "deepseek_v2": Family(gated=True, tied=False, mla=True),
    "deepseek_v3": Family(gated=True, tied=False, mla=True),
    "qwen2": Family(gated=True, tied=False, qkv_bias=True),
    "qwen2_moe": Family(gated=True, tied=False, qkv_bias=True),
    "qwen3": Family(gated=True, tied=False, qk_norm=True),
    "qwen3_moe": Family(gated=True, tied=False, qk_norm=True),
    "gemma": Family(gated=True, tied=True),
    "gemma2": Family(gated=True, tied=True, norms_per_layer=4),
    "gemma3_text": Family(gated=True, tied=True, norms_per_layer=4, qk_norm=True),
    "falcon": Family(gated=False, tied=True, norm_bias=True, rms=False),
    "gpt_bigcode": replace(_GPT2, multi_query_default=True),
    "gpt2": _GPT2,
    "opt": replace(_GPT2, position_offset=2),
    "gpt_neox": replace(_GPT2, tied=False, positions=0),
    "bert": _BERT,
    "roberta": _BERT,
    "t5": Family(gated=False, tied=True, encoder_decoder=True),
    "mt5": Family(gated=True, tied=False, encoder_decoder=True),
    "bart": replace(_GPT2, position_offset=2, encoder_decoder=True),
    "whisper": replace(_GPT2, encoder_decoder=True),
    # gpt-oss: biased attention (attention_bias), experts with biases, a biased router, one
    # attention-sink logit per head (transformers modeling_gpt_oss.py).
    "gpt_oss": Family(gated=True, tied=False, mlp_bias=True, router_bias=True, sinks=True),
    # State-space and hybrid models (hybrid.py): one RMSNorm before each block where a layer is
    # a single block (Mamba, Mamba-2, Nemotron-H), two where a block is followed by an MLP.
    "mamba": Family(gated=False, tied=True, norms_per_layer=1),
    "mamba2": Family(gated=False, tied=False, norms_per_layer=1),
    "jamba": Family(gated=True, tied=False),
    "nemotron_h": Family(gated=False, tied=False, norms_per_layer=1),
    "falcon_h1": Family(gated=True, tied=False),
    # Llama 4's text model: Llama layers, routed experts beside one always-on shared expert.
    "llama4_text": Family(gated=True, tied=False),
}
# Older names the Hub still serves (Falcon's first configs).
FAMILIES["refinedweb"] = FAMILIES["falcon"]
FAMILIES["refinedwebmodel"] = FAMILIES["falcon"]
FAMILIES["mbart"] = FAMILIES["bart"]

# Activations that make an MLP gated when the family is unknown.
GATED_ACTIVATIONS = ("silu", "swiglu", "geglu", "swish")

# model_types that are a known family under another name: (family, why), said in the report.
ALIASES: dict[str, tuple[str, str]] = {
    "llama4": ("llama4_text", "Llama 4's wrapper: its text_config"),
    "qwen2_5_vl": ("qwen2", "Qwen2.5-VL's language model is Qwen2's"),
    "qwen2_5_vl_text": ("qwen2", "Qwen2.5-VL's language model is Qwen2's"),
    "qwen2_vl": ("qwen2", "Qwen2-VL's language model is Qwen2's"),
    "gemma3": ("gemma3_text", "Gemma 3's wrapper: its text_config"),
    "mistral3": ("mistral", "Mistral 3's language model is Mistral's"),
}

# Config fields that change memory and that fit does not read: each present one is a note in
# the report (and the JSON's assumptions), never silence. {value} is the field's value.
NOT_READ: dict[str, str] = {
    "attention_chunk_size": "attention_chunk_size {value} not read: KV counted as full attention",
    "num_nextn_predict_layers": "num_nextn_predict_layers {value}: the multi-token-prediction "
    "module(s) are stored in the checkpoint but not counted in the weights (an engine that "
    "loads them for speculative decoding needs more; the JSON's mtp_params)",
    "cross_attention_layers": "cross-attention layers {value} not counted",
    "num_mem_blocks": "Zamba's {value} shared attention blocks not modelled as shared: their "
    "parameters are counted in every hybrid layer (an overestimate)",
    "use_shared_attention_adapter": "Zamba's shared attention adapters not counted",
}
