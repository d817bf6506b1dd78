"""A Hugging Face config.json -> ModelShape: the architecture read from the config's fields in
every spelling in use, validated (a field that cannot be right is refused by name), and counted
by params.py. The family rules the config does not spell out live in families.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from gpucheck.fit.families import ALIASES, FAMILIES, GATED_ACTIVATIONS, NOT_READ, Family
from gpucheck.fit.hybrid import Plan, plan
from gpucheck.fit.params import Arch, count
from gpucheck.fit.quantization_config import read_format
from gpucheck.fit.shape import ModelError, ModelShape, read_json
from gpucheck.fit.towers import towers

# Field names across families, first present wins.
_HIDDEN = ("hidden_size", "n_embd", "d_model", "dim")
_LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers")
_DEC_LAYERS = ("decoder_layers", "num_decoder_layers")
_HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "decoder_attention_heads")
_KV_HEADS = ("num_key_value_heads", "n_kv_heads", "num_kv_heads", "n_head_kv",
             "multi_query_group_num")  # fmt: skip
_INTERMEDIATE = ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size", "d_ff",
                 "decoder_ffn_dim")  # fmt: skip
_POSITIONS = ("max_position_embeddings", "n_positions", "max_target_positions", "max_seq_len",
              "seq_length")  # fmt: skip
_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts")
_TOP_K = ("num_experts_per_tok", "num_experts_per_token", "moe_topk", "top_k")
_DROPOUT = ("hidden_dropout_prob", "attention_probs_dropout_prob", "resid_pdrop", "attn_pdrop",
            "embd_pdrop", "dropout", "attention_dropout", "hidden_dropout")  # fmt: skip
_ENCODER_DECODER = ("t5", "mt5", "bart", "mbart", "whisper", "marian", "pegasus")

# Above these a config is not a model anyone runs: refused as a typo or a hostile file.
LIMITS = {"hidden": 1 << 20, "layers": 10_000, "heads": 1 << 16, "vocab": 1 << 24,
          "intermediate": 1 << 24, "experts": 1 << 16, "head_dim": 1 << 16}  # fmt: skip


class _Reader:
    def __init__(self, path: Path, cfg: dict[str, Any]) -> None:
        self.path, self.cfg = path, cfg

    def number(
        self, names: tuple[str, ...], minimum: int = 1, limit: str | None = None
    ) -> int | None:
        """The first of `names` present (null is absent); a value that is not a whole number
        >= minimum, or is absurdly large, is an error naming the field."""
        for name in names:
            value = self.cfg.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ModelError(f"{self.path}: {name} is {value!r}, not a whole number")
            if value < minimum:
                raise ModelError(f"{self.path}: {name} is {value}; it must be at least {minimum}")
            cap = LIMITS.get(limit or "", 1 << 40)
            if value > cap:
                raise ModelError(f"{self.path}: {name} is {value}, above any real model's ({cap})")
            return value
        return None

    def need(self, names: tuple[str, ...], limit: str) -> int:
        value = self.number(names, limit=limit)
        if value is None:
            raise ModelError(
                f"{self.path}: not a transformer config fit can read (no {names[0]}); "
                "pass --params instead"
            )
        return value

    def flag(self, name: str) -> bool | None:
        value = self.cfg.get(name)
        return value if isinstance(value, bool) else None


def from_config(path: Path) -> ModelShape:
    """A Hugging Face config.json -> the architecture and the parameter counts derived from it."""
    raw = cfg = read_json(path, "model config")
    # Multimodal and some wrapper configs keep the language model's fields in a sub-config.
    if not any(n in cfg for n in _HIDDEN) and isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg["text_config"], "model_type": cfg["text_config"].get("model_type", "")}
    r = _Reader(path, cfg)
    model_type = str(cfg.get("model_type") or "").lower()
    notes: list[str] = []
    if model_type not in FAMILIES and model_type in ALIASES:
        alias, why = ALIASES[model_type]
        notes.append(f"model_type {model_type!r} estimated as the {alias} family ({why})")
        model_type = alias
    family = FAMILIES.get(model_type)
    if family is None:
        family = _unknown_family(r, model_type, notes)
    weight_format, not_understood = read_format(raw)
    notes += [not_understood] if not_understood else []
    notes += _not_read(raw, cfg)
    archs = cfg.get("architectures")
    arch_name = (
        archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    )
    arch, extra = _arch(r, model_type, family, notes)
    counts = count(arch)
    linears = counts.linears
    attention = arch.attention_layers != 0  # a pure state-space model has no attention
    found, uncounted = towers(raw, arch.hidden)
    tower_params = sum(t.params for t in found)
    notes += uncounted + [
        f"{t.name} tower in the weights: {t.params:,} params ({t.how}); --text-only leaves it out"
        for t in found
    ]
    return ModelShape(
        source=str(path),
        params=counts.total + tower_params,
        tower_params=tower_params,
        mtp_params=counts.mtp,
        architecture=arch_name or model_type or None,
        family=model_type or None,
        layers=arch.layers,
        hidden=arch.hidden,
        heads=arch.heads if attention else None,
        kv_heads=arch.kv_heads if attention else None,
        head_dim=((arch.nope_dim + arch.rope_dim) if arch.mla else arch.head_dim)
        if attention
        else None,
        value_dim=arch.v_dim if arch.mla else None,
        intermediate=arch.intermediate,
        vocab=arch.vocab,
        gated_mlp=arch.gated,
        rms_norm=family.rms,
        qk_norm=family.qk_norm,
        dropout=_dropout(cfg),
        max_positions=extra["positions"],
        decoder=not family.encoder_only,
        experts=arch.experts,
        experts_per_token=arch.experts_per_token,
        moe_layers=arch.moe_layers,
        moe_intermediate=arch.moe_intermediate or None,
        shared_intermediate=arch.shared_intermediate,
        active_params=counts.active if arch.moe_layers else None,
        embedding_params=counts.embedding,
        head_params=counts.head,
        kv_per_layer=None if family.encoder_only or not attention else extra["kv_per_layer"],
        attention_layers=arch.attention_layers,
        mamba_layers=arch.mamba_layers,
        recurrent_per_layer=arch.mixer.state_elements if arch.mixer else 0,
        mla=arch.mla,
        sliding_window=extra["window"],
        windowed_layers=extra["windowed"],
        encoder_layers=arch.encoder_layers or None,
        cross_kv_per_token=(2 * arch.layers * arch.heads * arch.head_dim)
        if arch.encoder_layers
        else None,
        encoder_positions=extra["encoder_positions"],
        linears=linears,
        quantization=weight_format.dtype if weight_format else None,
        weight_format=weight_format,
        notes=tuple(notes),
    )


def _unknown_family(r: _Reader, model_type: str, notes: list[str]) -> Family:
    act = str(r.cfg.get("hidden_act") or r.cfg.get("hidden_activation") or
              r.cfg.get("activation_function") or "").lower()  # fmt: skip
    gated = act in GATED_ACTIVATIONS
    tied = r.flag("tie_word_embeddings")
    notes.append(
        f"model_type {model_type or '(none)'!r} is not one fit knows: counted from the generic "
        f"fields as a decoder with RMSNorm, no biases, a {'gated' if gated else 'plain'} MLP "
        f"(hidden_act {act or 'not given'}) and "
        + ("tied" if tied else "untied")
        + " embeddings"
        + ("" if tied is not None else " (tie_word_embeddings not given)")
    )
    return Family(gated=gated, tied=bool(tied),
                  encoder_decoder=bool(r.flag("is_encoder_decoder")))  # fmt: skip


def _arch(
    r: _Reader, model_type: str, family: Family, notes: list[str]
) -> tuple[Arch, dict[str, Any]]:
    cfg = r.cfg
    hidden = r.need(_HIDDEN, "hidden")
    enc_dec = family.encoder_decoder or model_type in _ENCODER_DECODER
    layers = r.number(_DEC_LAYERS, limit="layers") if enc_dec else None
    layers = layers or r.need(_LAYERS, "layers")
    hybrid = plan(cfg, model_type, hidden, layers, lambda names: r.number(names, limit="hidden"))
    if hybrid is not None and hybrid.attention_layers == 0:  # Mamba: no attention heads
        heads = r.number(_HEADS, limit="heads") or 1
    else:
        heads = r.need(_HEADS, "heads")
    vocab = r.number(("vocab_size", "padded_vocab_size"), limit="vocab")
    if vocab is None:
        raise ModelError(f"{r.path}: not a transformer config fit can read (no vocab_size)")
    head_dim = r.number(("head_dim", "kv_channels", "d_kv"), limit="head_dim")
    if head_dim is None:
        if hidden % heads:
            raise ModelError(
                f"{r.path}: num_attention_heads ({heads}) does not divide hidden_size "
                f"({hidden}) and no head_dim is given"
            )
        head_dim = hidden // heads
    kv_heads = _kv_heads(r, model_type, family, heads)
    intermediate = r.number(_INTERMEDIATE, limit="intermediate") or 4 * hidden
    gated = family.gated
    ff = str(cfg.get("feed_forward_proj") or "")
    if model_type in ("t5", "mt5") and ff:
        gated = ff.startswith("gated-")
    tied = r.flag("tie_word_embeddings")
    tied = family.tied if tied is None else tied
    biased = r.flag("bias")  # Falcon: every linear layer
    attn_bias = r.flag("attention_bias")
    mlp_bias = r.flag("mlp_bias")
    qkv_bias = family.qkv_bias or bool(biased) or bool(attn_bias)
    positions = r.number(_POSITIONS)
    learned = (positions or 0) + family.position_offset if family.positions else 0
    if family.positions and not positions:
        raise ModelError(f"{r.path}: learned position embeddings but no max_position_embeddings")
    mla = r.cfg.get("kv_lora_rank") is not None
    arch = Arch(
        hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        intermediate=intermediate, vocab=vocab, gated=gated, tied=tied,
        qkv_bias=qkv_bias, k_bias=model_type != "whisper",
        o_bias=family.o_bias or bool(biased) or bool(attn_bias),
        mlp_bias=family.mlp_bias or bool(biased) or bool(mlp_bias),
        norm_bias=family.norm_bias, norms_per_layer=family.norms_per_layer,
        qk_norm=family.qk_norm, positions=learned, router_bias=family.router_bias,
        sinks=family.sinks, mtp_layers=r.number(("num_nextn_predict_layers",), minimum=0,
                                                limit="layers") or 0,
        parallel_single_norm=model_type in ("falcon", "refinedwebmodel")
        and r.flag("parallel_attn") is not False
        and not r.flag("new_decoder_architecture"),
        notes=notes,
    )  # fmt: skip
    if mla:
        arch = replace(
            arch, mla=True, q_lora_rank=r.number(("q_lora_rank",)),
            kv_lora_rank=r.number(("kv_lora_rank",), limit="head_dim") or 0,
            rope_dim=r.number(("qk_rope_head_dim",), limit="head_dim") or 0,
            nope_dim=r.number(("qk_nope_head_dim",), limit="head_dim") or head_dim,
            v_dim=r.number(("v_head_dim",), limit="head_dim") or head_dim,
        )  # fmt: skip
    if family.encoder_only:  # BERT: token types, a LayerNorm on the embeddings, a pooler
        arch = replace(
            arch, token_types=r.number(("type_vocab_size",), minimum=0) or 0,
            embedding_norms=1, final_norm_per_stack=False, pooler=True,
        )  # fmt: skip
    arch = _moe(r, model_type, arch)
    if hybrid is not None:
        arch = _hybrid(arch, hybrid, notes)
    if enc_dec:
        arch = _encoder_decoder(r, model_type, arch, intermediate)
    window, windowed = _window(r, model_type, layers)
    # MLA keeps the latent and the shared rope key; others K and V per KV head.
    kv_per_layer = arch.kv_lora_rank + arch.rope_dim if arch.mla else 2 * kv_heads * head_dim
    encoder_positions = r.number(("max_source_positions",)) if model_type == "whisper" else None
    return arch, {
        "positions": positions, "kv_per_layer": kv_per_layer, "window": window,
        "windowed": windowed, "encoder_positions": encoder_positions,
    }  # fmt: skip


def _kv_heads(r: _Reader, model_type: str, family: Family, heads: int) -> int:
    multi_query = r.flag("multi_query")
    if model_type in ("falcon", "refinedweb", "refinedwebmodel"):
        if r.flag("new_decoder_architecture") or model_type == "refinedweb":
            kv = r.number(_KV_HEADS, limit="heads")
            return kv or heads
        return 1 if multi_query is not False else heads
    if family.multi_query_default and multi_query is not False:
        return 1
    kv = r.number(_KV_HEADS, limit="heads")
    if kv is None:
        return 1 if multi_query else heads
    if kv > heads:
        raise ModelError(
            f"{r.path}: num_key_value_heads ({kv}) is more than num_attention_heads ({heads})"
        )
    if heads % kv:
        raise ModelError(
            f"{r.path}: num_key_value_heads ({kv}) does not divide num_attention_heads ({heads})"
        )
    return kv


def _hybrid(arch: Arch, hybrid: Plan, notes: list[str]) -> Arch:
    moe = arch.moe_layers if hybrid.moe_layers is None or arch.experts <= 1 else hybrid.moe_layers
    kv = (
        f"beside the KV of its {hybrid.attention_layers} attention layers"
        if (hybrid.attention_layers)
        else "and no KV cache"
    )
    notes.append(f"{hybrid.how}: a recurrent state per sequence {kv}")
    return replace(
        arch,
        attention_layers=hybrid.attention_layers,
        mlp_layers=hybrid.mlp_layers,
        mamba_layers=hybrid.mamba_layers,
        mixer=hybrid.mixer,
        moe_layers=min(moe, hybrid.mlp_layers),
    )


def _not_read(raw: dict[str, Any], cfg: dict[str, Any]) -> list[str]:
    """A note for each field that changes memory and that fit does not read (families.py)."""
    notes = []
    for name, text in NOT_READ.items():
        value = cfg.get(name, raw.get(name))
        if value not in (None, 0, False, [], {}):
            shown = value if isinstance(value, (int, str)) else "given"
            notes.append(text.format(value=shown))
    return notes


def _moe(r: _Reader, model_type: str, arch: Arch) -> Arch:
    experts = r.number(_EXPERTS, minimum=0, limit="experts") or 0
    if experts <= 1:
        return arch
    top_k = r.number(_TOP_K, limit="experts") or 2
    if top_k > experts:
        raise ModelError(f"{r.path}: num_experts_per_tok ({top_k}) is more than the experts "
                         f"({experts})")  # fmt: skip
    width = r.number(("moe_intermediate_size",), limit="intermediate") or arch.intermediate
    shared = r.number(("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"),
                      minimum=0, limit="intermediate") or 0  # fmt: skip
    n_shared = r.number(("n_shared_experts",), minimum=0, limit="experts") or 0
    shared += n_shared * width
    if model_type == "llama4_text":  # one shared expert of the experts' width; dense layers wider
        shared += width
        arch = replace(
            arch,
            intermediate=r.number(("intermediate_size_mlp",), limit="intermediate")
            or arch.intermediate,
        )
    first_dense = r.number(("first_k_dense_replace",), minimum=0, limit="layers") or 0
    step = r.number(("decoder_sparse_step", "moe_layer_freq", "interleave_moe_layer_step"),
                    limit="layers") or 1  # fmt: skip
    only_dense = r.cfg.get("mlp_only_layers")
    dense_set = {
        i for i in (only_dense if isinstance(only_dense, list) else [])
        if isinstance(i, int) and not isinstance(i, bool)
    }  # fmt: skip
    moe_layers = sum(
        1 for i in range(arch.layers)
        if i >= first_dense and i not in dense_set and (i + 1 - first_dense) % step == 0
    )  # fmt: skip
    return replace(
        arch, experts=experts, experts_per_token=top_k, moe_intermediate=width,
        shared_intermediate=shared, moe_layers=moe_layers,
        shared_gate="shared_expert_intermediate_size" in r.cfg,
    )  # fmt: skip


def _encoder_decoder(r: _Reader, model_type: str, arch: Arch, intermediate: int) -> Arch:
    enc_layers = r.number(("encoder_layers", "num_layers"), limit="layers") or arch.layers
    enc_heads = r.number(("encoder_attention_heads", "num_heads"), limit="heads") or arch.heads
    enc_ffn = r.number(("encoder_ffn_dim", "d_ff"), limit="intermediate") or intermediate
    arch = replace(
        arch, encoder_layers=enc_layers, encoder_heads=enc_heads, encoder_intermediate=enc_ffn
    )
    if model_type in ("t5", "mt5"):
        buckets = r.number(("relative_attention_num_buckets",)) or 32
        return replace(arch, relative_buckets=buckets, norms_per_layer=2)
    if model_type == "whisper":
        return replace(
            arch, encoder_positions=r.number(("max_source_positions",)) or 1500,
            conv_frontend=r.number(("num_mel_bins",)) or 80,
        )  # fmt: skip
    # BART-style: learned positions on both stacks, a LayerNorm after each embedding, and
    # (mBART only) a final LayerNorm on each stack.
    return replace(
        arch, encoder_positions=arch.positions, embedding_norms=2,
        final_norm_per_stack=model_type == "mbart",
    )  # fmt: skip


def _window(r: _Reader, model_type: str, layers: int) -> tuple[int | None, int]:
    """(window, layers using it): KV of those layers is capped at the window."""
    if r.cfg.get("sliding_window") is False:  # some configs switch it off this way
        return None, 0
    window = r.number(("sliding_window",), limit=None)
    if window is None or r.flag("use_sliding_window") is False:
        return None, 0
    types = r.cfg.get("layer_types")
    if isinstance(types, list) and types:
        return window, sum(1 for t in types if t == "sliding_attention")
    if model_type == "gemma2":
        return window, (layers + 1) // 2  # even-numbered layers are local
    pattern = r.number(("sliding_window_pattern",))
    if pattern:
        return window, layers - layers // pattern  # every pattern-th layer is global
    if model_type in ("qwen2", "qwen2_moe"):
        first = r.number(("max_window_layers",), minimum=0) or 0
        return window, max(0, layers - first)
    return window, layers


def _dropout(cfg: dict[str, Any]) -> bool:
    return any(
        isinstance(cfg.get(n), (int, float)) and not isinstance(cfg.get(n), bool) and cfg[n] > 0
        for n in _DROPOUT
    )
