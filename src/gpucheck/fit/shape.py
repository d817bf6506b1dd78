"""What `fit` knows about a model: its parameter count (and dtypes where a file says them) and,
when a config gives them, the architecture fields the activation and KV-cache formulas need.

Three local sources, no network: `--params 7B`, a Hugging Face `config.json` (parameters
derived from its fields), and a PyTorch module traced on the meta device (trace.py). The
safetensors header reader is in safetensors.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

CONFIG_LIMIT = 4 * 1024 * 1024  # bytes: configs are a few KB; anything larger is not one


class ModelError(ValueError):
    """A model source that cannot be read: one line for the user."""


@dataclass(frozen=True)
class ModelShape:
    source: str  # where the facts came from, for the report
    params: int
    param_bytes: int | None = None  # exact bytes where a file says them (safetensors)
    param_dtypes: dict[str, int] = field(default_factory=dict)  # dtype -> count (safetensors)
    architecture: str | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    intermediate: int | None = None
    vocab: int | None = None
    gated_mlp: bool = False  # SwiGLU/GeGLU: three MLP matrices, not two
    experts: int = 1  # mixture-of-experts: MLP copies per layer (all resident in memory)
    dropout: bool = False  # dropout masks are saved for backward
    max_positions: int | None = None
    decoder: bool = True  # False: an encoder (BERT): no KV cache, no generation
    # From a traced module (trace.py): bytes autograd saves per sample, and the input shape.
    traced_activation_bytes: int | None = None
    traced_input: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def is_transformer(self) -> bool:
        return None not in (self.layers, self.hidden, self.heads)

    @property
    def kv_bytes_per_token_element(self) -> int | None:
        """Elements of K and V per token over all layers: 2 * layers * kv_heads * head_dim."""
        if self.layers is None or self.kv_heads is None or self.head_dim is None:
            return None
        return 2 * self.layers * self.kv_heads * self.head_dim

    def with_params(self, params: int, source: str) -> ModelShape:
        return replace(self, params=params, source=source)


# Field names across Hugging Face model families, first match wins.
_HIDDEN = ("hidden_size", "n_embd", "d_model", "dim")
_LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
_HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
_KV_HEADS = ("num_key_value_heads", "n_kv_heads", "num_kv_heads", "multi_query_group_num")
_INTERMEDIATE = ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size", "d_ff")
_POSITIONS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")
_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts")
_DROPOUT = (
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "resid_pdrop",
    "attn_pdrop",
    "embd_pdrop",
    "dropout",
    "attention_dropout",
    "hidden_dropout",
)
# Families with learned absolute position embeddings, biases in every linear layer and
# LayerNorm with a bias (BERT, GPT-2, OPT): counted as their modelling code builds them.
_BIASED = ("bert", "roberta", "gpt2", "opt", "gpt_neox", "gptj", "bloom", "falcon", "phi")
_LEARNED_POSITIONS = ("bert", "roberta", "gpt2", "opt")
_GATED_ACT = ("silu", "swiglu", "geglu", "gelu_pytorch_tanh")
_ENCODERS = ("bert", "roberta", "xlm-roberta", "distilbert", "albert", "electra", "deberta")


def _first(cfg: dict[str, Any], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = cfg.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            raw = fh.read(CONFIG_LIMIT + 1)
    except FileNotFoundError:
        raise ModelError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ModelError(f"{path} is a folder (pass its config.json)") from None
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > CONFIG_LIMIT:
        raise ModelError(f"{path} is too large to be a {what} (over 4 MiB)")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ModelError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ModelError(f"{path} is not a {what} (expected a JSON object)")
    return data


def from_config(path: Path) -> ModelShape:
    """A Hugging Face config.json -> the architecture and a parameter count derived from it."""
    cfg = read_json(path, "model config")
    # Multimodal and some wrapper configs keep the language model's fields in a sub-config.
    if _first(cfg, _HIDDEN) is None and isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg["text_config"], "model_type": cfg["text_config"].get("model_type", "")}
    hidden, layers, heads = _first(cfg, _HIDDEN), _first(cfg, _LAYERS), _first(cfg, _HEADS)
    missing = [
        n for n, v in (("hidden_size", hidden), ("num_hidden_layers", layers),
                       ("num_attention_heads", heads)) if v is None
    ]  # fmt: skip
    vocab = _first(cfg, ("vocab_size", "padded_vocab_size"))
    if missing or vocab is None or hidden is None or layers is None or heads is None:
        fields = ", ".join([*missing, *([] if vocab else ["vocab_size"])])
        raise ModelError(
            f"{path}: not a transformer config fit can read (missing {fields}); "
            "pass --params instead"
        )
    model_type = str(cfg.get("model_type") or "").lower()
    archs = cfg.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    kv_heads = _first(cfg, _KV_HEADS) or heads
    head_dim = _first(cfg, ("head_dim", "kv_channels")) or hidden // heads
    intermediate = _first(cfg, _INTERMEDIATE) or 4 * hidden
    act = str(cfg.get("hidden_act") or cfg.get("activation_function") or "").lower()
    gated = model_type not in _BIASED and act in _GATED_ACT
    experts = _first(cfg, _EXPERTS) or 1
    dropout = any(
        isinstance(cfg.get(n), (int, float)) and not isinstance(cfg.get(n), bool) and cfg[n] > 0
        for n in _DROPOUT
    )
    positions = _first(cfg, _POSITIONS)
    tied = cfg.get("tie_word_embeddings")
    if not isinstance(tied, bool):
        tied = model_type in _BIASED  # transformers' default for those families
    biased = model_type in _BIASED
    params = transformer_params(
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=intermediate,
        vocab=vocab,
        gated=gated,
        experts=experts,
        biased=biased,
        tied=tied,
        positions=positions if model_type in _LEARNED_POSITIONS else None,
        type_vocab=_first(cfg, ("type_vocab_size",)) if model_type in ("bert", "roberta") else None,
        pooler=model_type in ("bert", "roberta"),
    )
    notes = [] if model_type else ["no model_type: counted as a decoder without biases"]
    return ModelShape(
        source=str(path),
        params=params,
        architecture=arch or model_type or None,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=intermediate,
        vocab=vocab,
        gated_mlp=gated,
        experts=experts,
        dropout=dropout,
        max_positions=positions,
        decoder=model_type not in _ENCODERS,
        notes=tuple(notes),
    )


def transformer_params(
    *,
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    intermediate: int,
    vocab: int,
    gated: bool,
    experts: int = 1,
    biased: bool = False,
    tied: bool = False,
    positions: int | None = None,
    type_vocab: int | None = None,
    pooler: bool = False,
) -> int:
    """Parameters of a standard decoder/encoder stack, counted matrix by matrix."""
    q = heads * head_dim
    kv = kv_heads * head_dim
    attention = hidden * q + 2 * hidden * kv + q * hidden
    mlp = (3 if gated else 2) * hidden * intermediate
    norms = 2 * hidden
    if biased:
        attention += q + 2 * kv + hidden
        mlp += intermediate + hidden
        norms *= 2  # LayerNorm: weight and bias
    router = hidden * experts if experts > 1 else 0
    per_layer = attention + experts * mlp + norms + router
    embeddings = vocab * hidden + (positions or 0) * hidden + (type_vocab or 0) * hidden
    final_norm = (2 if biased else 1) * hidden
    if type_vocab:  # BERT: the embeddings' own LayerNorm, and no final norm after the stack
        final_norm = 2 * hidden
    head = 0 if tied else vocab * hidden
    extra = hidden * hidden + hidden if pooler else 0
    return embeddings + layers * per_layer + final_norm + head + extra
