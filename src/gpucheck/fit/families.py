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
}
# Older names the Hub still serves (Falcon's first configs).
FAMILIES["refinedweb"] = FAMILIES["falcon"]
FAMILIES["refinedwebmodel"] = FAMILIES["falcon"]
FAMILIES["mbart"] = FAMILIES["bart"]

# Activations that make an MLP gated when the family is unknown.
GATED_ACTIVATIONS = ("silu", "swiglu", "geglu", "swish")
