"""State-space (Mamba) and hybrid models: which layers mix with a Mamba block, which with
attention, which have an MLP or experts, and the Mamba block's dimensions, in each family's
spelling of its config.json.

- Mamba (Gu and Dao, arXiv:2312.00752; transformers MambaMixer): in_proj h -> 2 d_inner,
  a depthwise conv1d of d_conv taps, x_proj d_inner -> dt_rank + 2 d_state, dt_proj dt_rank ->
  d_inner (biased), A_log d_inner x d_state, D d_inner, out_proj d_inner -> h.
- Mamba-2 (Dao and Gu, arXiv:2405.21060; transformers Mamba2Mixer): in_proj h -> 2 d_inner +
  2 groups d_state + heads, conv1d over d_inner + 2 groups d_state channels, dt_bias, A_log
  and D per head, a gated RMSNorm of d_inner, out_proj d_inner -> h.
- Recurrent state per sequence and Mamba layer, independent of its length (what vLLM keeps per
  request): the conv state, (d_conv - 1) x conv channels, and the SSM state, d_inner x d_state
  (Mamba-2: heads x head_dim x d_state, the same product).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpucheck.fit.shape import ModelError


@dataclass(frozen=True)
class Mixer:
    """One Mamba block's dimensions."""

    version: int  # 1: Mamba, 2: Mamba-2
    d_inner: int
    d_state: int
    d_conv: int
    dt_rank: int = 0  # Mamba-1
    heads: int = 0  # Mamba-2
    groups: int = 1  # Mamba-2: B and C shared by groups of heads
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: int = 0  # RMSNorm weights inside the block (Jamba dt/B/C; Mamba-2's gated norm)

    @property
    def conv_channels(self) -> int:
        return self.d_inner if self.version == 1 else self.d_inner + 2 * self.groups * self.d_state

    @property
    def state_elements(self) -> int:
        """Recurrent state of one sequence in one layer: conv state + SSM state."""
        return (self.d_conv - 1) * self.conv_channels + self.d_inner * self.d_state


@dataclass(frozen=True)
class Plan:
    """What each of a hybrid model's layers holds."""

    mixer: Mixer
    mamba_layers: int
    attention_layers: int
    mlp_layers: int  # layers with an MLP or experts
    moe_layers: int | None = None  # None: the MoE fields decide (config.py's _moe)
    how: str = ""


Number = Callable[[tuple[str, ...]], int | None]


def plan(
    cfg: dict[str, Any], model_type: str, hidden: int, layers: int, number: Number
) -> Plan | None:
    """The hybrid plan of a config, or None for a model without Mamba layers."""
    if model_type == "mamba":
        return Plan(_mamba1(cfg, hidden, number, "", "state_size", "conv_kernel", "expand"),
                    layers, 0, 0, 0, "Mamba: every layer a Mamba block")  # fmt: skip
    if model_type == "mamba2":
        return Plan(_mamba2(cfg, hidden, number, ""), layers, 0, 0, 0,
                    "Mamba-2: every layer a Mamba-2 block")  # fmt: skip
    if model_type == "jamba":
        return _jamba(cfg, hidden, layers, number)
    if model_type == "nemotron_h":
        return _pattern(cfg, hidden, layers, number)
    if model_type == "falcon_h1":
        mixer = _mamba2(cfg, hidden, number, "mamba_", norm_default=False)
        return Plan(
            mixer,
            layers,
            layers,
            layers,
            0,
            "Falcon-H1: attention and Mamba-2 side by side in every layer, then an MLP",
        )
    kinds = cfg.get("layers_block_type") or cfg.get("layer_types")
    if isinstance(kinds, list) and any(isinstance(k, str) and "mamba" in k for k in kinds):
        mamba = sum(1 for k in kinds if isinstance(k, str) and ("mamba" in k or k == "hybrid"))
        # Zamba's "hybrid" layers run a (shared) attention block beside the Mamba one: KV too.
        attention = sum(
            1 for k in kinds if isinstance(k, str) and ("attention" in k or k == "hybrid")
        )
        if _has(cfg, "mamba_n_heads", "mamba_num_heads", "n_mamba_heads"):  # Mamba-2 blocks
            mixer = _mamba2(cfg, hidden, number, "mamba_")
        else:
            mixer = _mamba1(cfg, hidden, number, "mamba_", "d_state", "d_conv", "expand")
        return Plan(
            mixer,
            mamba,
            attention,
            layers,
            None,
            f"layer types: {mamba} Mamba, {attention} attention",
        )
    return None


def _has(cfg: dict[str, Any], *names: str) -> bool:
    return any(cfg.get(n) is not None for n in names)


def _flag(cfg: dict[str, Any], name: str, default: bool) -> bool:
    value = cfg.get(name)
    return value if isinstance(value, bool) else default


def _mamba1(cfg: dict[str, Any], hidden: int, number: Number, prefix: str, state: str,
            conv: str, expand: str) -> Mixer:  # fmt: skip
    d_inner = (number((prefix + expand,)) or 2) * hidden
    rank = cfg.get(prefix + "dt_rank", cfg.get("time_step_rank"))
    dt_rank = rank if isinstance(rank, int) and not isinstance(rank, bool) and rank > 0 else (
        math.ceil(hidden / 16))  # "auto"  # fmt: skip
    d_state = number((prefix + state,)) or 16
    jamba = prefix == "mamba_"
    return Mixer(
        version=1, d_inner=d_inner, d_state=d_state, d_conv=number((prefix + conv,)) or 4,
        dt_rank=dt_rank,
        conv_bias=_flag(cfg, prefix + "conv_bias" if jamba else "use_conv_bias", True),
        proj_bias=_flag(cfg, prefix + "proj_bias" if jamba else "use_bias", False),
        inner_norms=dt_rank + 2 * d_state if jamba else 0,  # Jamba's dt, B and C RMSNorms
    )  # fmt: skip


def _mamba2(
    cfg: dict[str, Any], hidden: int, number: Number, prefix: str, norm_default: bool = True
) -> Mixer:
    heads = number((prefix + "n_heads", prefix + "num_heads", "n_mamba_heads", "num_heads")) or 1
    head_dim = number((prefix + "d_head", prefix + "head_dim", "mamba_headdim", "head_dim")) or 64
    d_ssm = number((prefix + "d_ssm",))
    d_inner = d_ssm or heads * head_dim
    gated_norm = _flag(cfg, "mamba_rms_norm", norm_default)
    return Mixer(
        version=2, d_inner=d_inner,
        d_state=number((prefix + "d_state", "ssm_state_size", "state_size")) or 128,
        d_conv=number((prefix + "d_conv", "conv_kernel")) or 4, heads=heads,
        groups=number((prefix + "n_groups", "n_groups", "mamba_num_groups", "mamba_ngroups")) or 1,
        conv_bias=_flag(cfg, prefix + "conv_bias", _flag(cfg, "use_conv_bias", True)),
        proj_bias=_flag(cfg, prefix + "proj_bias", _flag(cfg, "use_bias", False)),
        inner_norms=d_inner if gated_norm else 0,
    )  # fmt: skip


def _jamba(cfg: dict[str, Any], hidden: int, layers: int, number: Number) -> Plan:
    """Jamba: attention where i % attn_layer_period == attn_layer_offset, experts where
    i % expert_layer_period == expert_layer_offset (JambaConfig's layers_block_type)."""
    a_period = number(("attn_layer_period",)) or 8
    a_offset = _at_least_zero(cfg, "attn_layer_offset", 4)
    e_period = number(("expert_layer_period",)) or 2
    e_offset = _at_least_zero(cfg, "expert_layer_offset", 1)
    attention = sum(1 for i in range(layers) if i % a_period == a_offset)
    moe = sum(1 for i in range(layers) if i % e_period == e_offset)
    experts = number(("num_experts",)) or 16
    mixer = _mamba1(cfg, hidden, number, "mamba_", "d_state", "d_conv", "expand")
    return Plan(mixer, layers - attention, attention, layers, moe if experts > 1 else 0,
                f"Jamba: attention every {a_period} layers (offset {a_offset}), experts every "
                f"{e_period} (offset {e_offset})")  # fmt: skip


def _at_least_zero(cfg: dict[str, Any], name: str, default: int) -> int:
    value = cfg.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else (
        default)  # fmt: skip


def _pattern(cfg: dict[str, Any], hidden: int, layers: int, number: Number) -> Plan:
    """Nemotron-H: each layer one block, by hybrid_override_pattern (one character a layer: M
    Mamba-2, * attention, - MLP, E experts) or layers_block_type (mamba, attention, mlp, moe)."""
    kinds = cfg.get("layers_block_type")
    if isinstance(kinds, list):  # the newer spelling: one word a layer
        letters = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}
        pattern = "".join(letters.get(str(k), "?") for k in kinds)
    else:
        pattern = str(cfg.get("hybrid_override_pattern") or "")
    if len(pattern) != layers or set(pattern) - set("M*-E"):
        raise ModelError(
            f"hybrid_override_pattern/layers_block_type {pattern[:80]!r} is not one of M (mamba), "
            f"* (attention), - (mlp) and E (moe) for each of the {layers} layers"
        )
    mixer = _mamba2(cfg, hidden, number, "mamba_")
    return Plan(
        mixer,
        pattern.count("M"),
        pattern.count("*"),
        pattern.count("-") + pattern.count("E"),
        pattern.count("E"),
        f"hybrid_override_pattern: {pattern.count('M')} Mamba-2, {pattern.count('*')} "
        f"attention, {pattern.count('-')} MLP, {pattern.count('E')} MoE layers",
    )
