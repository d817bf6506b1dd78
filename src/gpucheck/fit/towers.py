"""Vision and audio towers of multimodal models, and their projectors into the language model:
counted from `vision_config` / `audio_config` as their own part of the weights (`--text-only`
leaves them out).

- Qwen2.5-VL's ViT (transformers Qwen2_5_VisionTransformerPretrainedModel): a bias-free Conv3d
  patch embedding of channels x temporal_patch x patch^2 -> hidden; per block two RMSNorms, a
  fused biased QKV and a biased output projection, a biased SwiGLU MLP of intermediate_size;
  the merger: an RMSNorm, then Linear(hidden x merge^2 -> same) and Linear(-> out_hidden_size),
  both biased.
- Any other tower is counted as a plain pre-norm ViT (CLIP/SigLIP-like: biased attention and
  two-layer MLP, LayerNorms with biases, learned positions, a biased patch embedding) with a
  linear projector to the language model, and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tower:
    name: str  # "vision", "audio"
    params: int
    how: str


def _int(cfg: dict[str, Any], *names: str) -> int | None:
    for name in names:
        value = cfg.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 24:
            return value
    return None


def towers(cfg: dict[str, Any], text_hidden: int) -> tuple[list[Tower], list[str]]:
    """(the towers counted, notes on those that could not be)."""
    found: list[Tower] = []
    notes: list[str] = []
    for key, name in (("vision_config", "vision"), ("audio_config", "audio")):
        sub = cfg.get(key)
        if not isinstance(sub, dict) or not sub:
            continue
        tower = (
            _qwen2_5_vit(sub, name) if _is_qwen2_5_vit(sub) else _plain_vit(sub, name, text_hidden)
        )
        if tower is None:
            notes.append(f"{name} tower ({key}) not counted: its width, depth or MLP not given")
        else:
            found.append(tower)
    return found, notes


def _is_qwen2_5_vit(sub: dict[str, Any]) -> bool:
    return sub.get("model_type") == "qwen2_5_vl" or "fullatt_block_indexes" in sub


def _qwen2_5_vit(sub: dict[str, Any], name: str) -> Tower | None:
    h = _int(sub, "hidden_size", "embed_dim")
    depth = _int(sub, "depth", "num_hidden_layers")
    inter = _int(sub, "intermediate_size")
    out = _int(sub, "out_hidden_size")
    if None in (h, depth, inter, out):
        return None
    assert h and depth and inter and out
    patch = _int(sub, "patch_size", "spatial_patch_size") or 14
    temporal = _int(sub, "temporal_patch_size") or 2
    channels = _int(sub, "in_channels", "in_chans") or 3
    merge = _int(sub, "spatial_merge_size") or 2
    embed = channels * temporal * patch * patch * h
    block = 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * (h * inter + inter) + (inter * h + h)
    merged = h * merge * merge
    merger = h + (merged * merged + merged) + (merged * out + out)
    total = embed + depth * block + merger
    return Tower(name, total, f"Qwen2.5-VL ViT: {depth} blocks of {h}, merger to {out}")


def _plain_vit(sub: dict[str, Any], name: str, text_hidden: int) -> Tower | None:
    h = _int(sub, "hidden_size", "embed_dim", "d_model", "width")
    depth = _int(sub, "num_hidden_layers", "depth", "num_layers", "encoder_layers")
    if h is None or depth is None:
        return None
    inter = _int(sub, "intermediate_size", "encoder_ffn_dim") or 4 * h
    patch = _int(sub, "patch_size") or 14
    channels = _int(sub, "num_channels", "in_channels", "in_chans") or 3
    image = _int(sub, "image_size")
    positions = (image // patch) ** 2 + 1 if image else 0
    embed = channels * patch * patch * h + h + positions * h
    block = 4 * (h * h + h) + (h * inter + inter) + (inter * h + h) + 2 * 2 * h
    out = _int(sub, "projector_output_dim", "out_hidden_size") or text_hidden
    total = embed + depth * block + 2 * h + (h * out + out)
    return Tower(name, total, f"counted as a plain ViT: {depth} blocks of {h}, MLP {inter}, "
                 f"a linear projector to {out}")  # fmt: skip
