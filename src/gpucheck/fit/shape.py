"""What `fit` knows about a model: its parameter count (and dtypes where a file says them) and,
when a config gives them, the architecture fields the activation and KV-cache formulas need.

Three local sources, no network: `--params 7B`, a Hugging Face `config.json` (config.py derives
the architecture, params.py counts it), and a PyTorch module traced on the meta device
(trace.py). The safetensors header reader is in safetensors.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpucheck.fit.quantization_config import WeightFormat
from gpucheck.inputs import empty_input, note_input, unreadable

CONFIG_LIMIT = 4 * 1024 * 1024  # bytes: configs are a few KB; anything larger is not one


class ModelError(ValueError):
    """A model source that cannot be read: one line for the user."""


@dataclass(frozen=True)
class Linear:
    """Linear layers of one kind over the whole model (LoRA adapts them): `count` matrices of
    `inputs` x `outputs`."""

    name: str  # q, k, v, o, gate, up, down (and MLA's q_a, q_b, kv_a, kv_b)
    inputs: int
    outputs: int
    count: int


@dataclass(frozen=True)
class ModelShape:
    source: str  # where the facts came from, for the report
    params: int  # total: every weight held in memory (all experts of a MoE)
    param_bytes: int | None = None  # exact bytes where a file says them (safetensors)
    param_dtypes: dict[str, int] = field(default_factory=dict)  # dtype -> count (safetensors)
    architecture: str | None = None
    family: str | None = None  # the model_type the counting rules followed
    layers: int | None = None  # decoder layers (an encoder-only model's layers)
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None  # of the queries and keys (MLA: nope + rope)
    value_dim: int | None = None  # MLA's v_head_dim; None: head_dim
    intermediate: int | None = None  # dense MLP width
    vocab: int | None = None
    gated_mlp: bool = False  # SwiGLU/GeGLU: three MLP matrices, not two
    rms_norm: bool = False  # RMSNorm in fp32 (Llama-style): activations per Hugging Face's code
    qk_norm: bool = False  # RMSNorm over each head's Q and K (Qwen3, Gemma 3)
    dropout: bool = False  # dropout masks are saved for backward
    max_positions: int | None = None
    decoder: bool = True  # False: an encoder (BERT): no KV cache, no generation
    # Mixture of experts: routed experts per MoE layer, how many a token uses, their width.
    experts: int = 1
    experts_per_token: int = 1
    moe_layers: int = 0
    moe_intermediate: int | None = None
    shared_intermediate: int = 0  # always-on shared experts' total width
    active_params: int | None = None  # what one token touches (MoE); None: = params
    embedding_params: int = 0  # input embeddings (token and learned positions)
    head_params: int = 0  # an untied output head
    # KV cache: elements per token per layer (2 x kv_heads x head_dim; MLA's one latent)
    kv_per_layer: int | None = None
    mla: bool = False
    sliding_window: int | None = None
    windowed_layers: int = 0  # layers whose KV is capped at the window
    # Hybrid and state-space models (hybrid.py): attention layers (None: every layer), Mamba
    # layers, and the recurrent state one sequence keeps in each Mamba layer (elements).
    attention_layers: int | None = None
    mamba_layers: int = 0
    recurrent_per_layer: int = 0
    tower_params: int = 0  # vision/audio towers and projectors (towers.py), inside `params`
    mtp_params: int = 0  # multi-token-prediction modules: stored, not in `params` (not loaded)
    # Encoder-decoder: cross-attention K and V per encoder token over the decoder's layers.
    encoder_layers: int | None = None
    cross_kv_per_token: int | None = None
    encoder_positions: int | None = None  # a fixed encoder length (Whisper's 1500 frames)
    linears: tuple[Linear, ...] = ()
    quantization: str | None = None  # the config's quantization_config, as a --dtype
    weight_format: WeightFormat | None = None  # that quantization_config, read whole
    # From a traced module (trace.py): bytes autograd saves per sample, and the input shape.
    traced_activation_bytes: int | None = None
    traced_input: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def is_transformer(self) -> bool:
        """Layers whose shapes are known (attention heads, or Mamba blocks)."""
        if self.layers is None or self.hidden is None:
            return False
        return self.heads is not None or self.mamba_layers > 0

    @property
    def kv_layers(self) -> int:
        """Layers that keep a KV cache: the attention layers."""
        if self.attention_layers is not None:
            return self.attention_layers
        return self.layers or 0

    @property
    def recurrent_elements(self) -> int:
        """Recurrent state of one sequence over every Mamba layer: the same at any length."""
        return self.mamba_layers * self.recurrent_per_layer

    @property
    def heads_or_one(self) -> int:
        return self.heads or 1

    @property
    def active(self) -> int:
        return self.active_params if self.active_params is not None else self.params

    @property
    def kv_bytes_per_token_element(self) -> int | None:
        """Elements of the KV cache per token over all layers, with no window."""
        if self.layers is None or self.kv_per_layer is None:
            return None
        return self.kv_layers * self.kv_per_layer

    def kv_elements(self, tokens: int, kv_heads_divisor: int = 1) -> float:
        """Elements of the self-attention KV cache for one sequence of `tokens`, windowed layers
        capped at the window; `kv_heads_divisor` splits heads over tensor-parallel GPUs."""
        if self.layers is None or self.kv_per_layer is None:
            return 0.0
        per_layer = float(self.kv_per_layer)
        if not self.mla and kv_heads_divisor > 1 and self.kv_heads:
            # Heads split over GPUs; fewer KV heads than GPUs are replicated (one per GPU).
            per_layer = per_layer / self.kv_heads * max(1, -(-self.kv_heads // kv_heads_divisor))
        windowed = min(self.windowed_layers, self.kv_layers)
        capped = min(tokens, self.sliding_window or tokens)
        return per_layer * ((self.kv_layers - windowed) * tokens + windowed * capped)

    def with_params(self, params: int, source: str) -> ModelShape:
        return replace(self, params=params, source=source)


def without_towers(shape: ModelShape, notes: list[str]) -> ModelShape:
    """--text-only: the language model alone (its weights; a file's stored bytes stay whole)."""
    if not shape.tower_params:
        notes.append("--text-only: this model has no vision or audio tower fit counted")
        return shape
    notes.append(f"--text-only: {shape.tower_params:,} tower parameters left out")
    return replace(shape, params=shape.params - shape.tower_params, tower_params=0,
                   param_bytes=None, param_dtypes={})  # fmt: skip


def read_json(path: Path, what: str) -> dict[str, Any]:
    note_input(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(CONFIG_LIMIT + 1)
    except OSError as exc:
        raise ModelError(unreadable(path, exc, "is a folder (pass its config.json)")) from None
    if len(raw) > CONFIG_LIMIT:
        raise ModelError(f"{path} is too large to be a {what} (over 4 MiB)")
    if not raw.removeprefix(b"\xef\xbb\xbf").strip():
        raise ModelError(empty_input(str(path)))
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ModelError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ModelError(f"{path} is not a {what} (expected a JSON object)")
    return data
