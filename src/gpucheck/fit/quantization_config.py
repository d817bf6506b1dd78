"""A checkpoint's own `quantization_config` -> the format its weights are stored and loaded in:
bits per quantised weight (scales and zero points included), which linear layers it covers, and
which modules it leaves in 16-bit. Read from config.json; nothing is downloaded.

Bits per quantised weight, each format's metadata spread over the weights it scales:
- MXFP4 (OCP Microscaling spec v1.0, gpt-oss model card arXiv:2508.10925 section 2): blocks of
  32 FP4 (E2M1) values sharing one E8M0 scale: 4 + 8/32 = 4.25 bits. gpt-oss quantises only
  the MoE experts; attention, router, embeddings and head stay bf16 (modules_to_not_convert).
- NVFP4 (NVIDIA ModelOpt, compressed-tensors "nvfp4-pack-quantized"): blocks of 16 FP4 values
  with an FP8 (E4M3) scale, and one fp32 scale per tensor: 4 + 8/16 = 4.5 bits.
- FP8: per tensor (one fp32 scale: ~8 bits), per output channel (32/inputs), or block-scaled
  (`weight_block_size` [128, 128], DeepSeek-V3: 32 / (128 * 128)).
- GPTQ and AWQ: `bits` with an fp16 scale and a `bits`-wide zero point per `group_size` inputs
  of each output (group_size -1: one per output row).
- bitsandbytes: 4-bit (nf4/fp4) blocks of 64 with an fp32 absmax (4.5 bits), or with double
  quantisation 8-bit absmax + fp32 per 256 blocks (4.127: QLoRA, arXiv:2305.14314 section 3);
  8-bit (LLM.int8) an fp32 scale per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # shape.py holds a WeightFormat: the import goes one way at run time
    from gpucheck.fit.shape import Linear

# Linear layers by the modules a skip list names (fit's Linear names -> module name words).
_ATTENTION = ("q", "k", "v", "o", "q_a", "q_b", "kv_a", "kv_b")
_MAMBA = ("in_proj", "x_proj", "dt_proj", "out_proj")


@dataclass(frozen=True)
class WeightFormat:
    """How a checkpoint stores its quantised linear weights."""

    method: str  # the quant_method as written (mxfp4, fp8, gptq, ...)
    dtype: str  # the --dtype it reads as (fp4, fp8, int4, int8, nf4)
    bits: float  # per quantised weight, block scales and zero points included
    how: str  # for the report: the layout behind `bits`
    per_row_bits: float = 0.0  # bits per output row, spread over its inputs (per-channel)
    experts_only: bool = False  # only the MoE experts are quantised (gpt-oss MXFP4)
    skip: tuple[str, ...] = ()  # modules left in 16-bit, as the config names them

    def bits_for(self, linear: Linear) -> float:
        return self.bits + self.per_row_bits / max(1, linear.inputs)

    def covers(self, linear: Linear) -> bool:
        """Whether this linear layer is quantised (else it stays 16-bit)."""
        if self.experts_only and not linear.name.startswith("expert_"):
            return False
        return not any(_names(pattern, linear.name) for pattern in self.skip)


def _names(pattern: str, linear: str) -> bool:
    """Whether a skip-list entry (`model.layers.*.self_attn`, `re:.*q_proj`, `mlp.experts`,
    `lm_head`) names the modules of one of fit's linear layers."""
    p = pattern.lower()
    base = linear.removeprefix("expert_").removeprefix("shared_").removeprefix("cross_")
    if base in _ATTENTION:
        return any(w in p for w in ("attn", "attention", f"{base}_proj"))
    if base in _MAMBA:
        return "mamba" in p or "mixer" in p or base in p
    if linear.startswith("expert_"):
        return "experts" in p or (p.rstrip("$").endswith("mlp") and "shared" not in p)
    if linear.startswith("shared_"):
        return "shared_expert" in p or p.rstrip("$").endswith("mlp")
    return p.rstrip("$").endswith(("mlp", "feed_forward", f"{base}_proj"))


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, str))


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def read_format(cfg: dict[str, Any]) -> tuple[WeightFormat | None, str | None]:
    """(the format, or None; a note where quantization_config is present but not understood)."""
    q = cfg.get("quantization_config")
    if q is None:
        q = cfg.get("compression_config")  # older compressed-tensors checkpoints
    if not isinstance(q, dict):
        return None, None
    method = str(q.get("quant_method") or "").lower()
    skip = (
        _strings(q.get("modules_to_not_convert"))
        + _strings(q.get("ignore"))
        + _strings(q.get("exclude_modules"))
        + _strings(q.get("llm_int8_skip_modules"))
    )
    fmt = _format(method, q, skip)
    if fmt is None:
        return None, (
            f"quantization method {method or '(none)'!r} not understood: weights counted as "
            "the --dtype (bf16 unless given)"
        )
    return fmt, None


def _format(method: str, q: dict[str, Any], skip: tuple[str, ...]) -> WeightFormat | None:
    if method == "mxfp4":
        return WeightFormat(method, "fp4", 4 + 8 / 32, "MXFP4: 32 FP4 + one E8M0 scale",
                            experts_only=True, skip=skip)  # fmt: skip
    if method == "bitsandbytes" or q.get("load_in_4bit") or q.get("load_in_8bit"):
        if q.get("load_in_4bit"):
            kind = str(q.get("bnb_4bit_quant_type") or "fp4")
            double = bool(q.get("bnb_4bit_use_double_quant"))
            bits = 4 + 8 / 64 + 32 / (64 * 256) if double else 4 + 32 / 64
            how = f"bitsandbytes {kind}, blocks of 64" + (", double-quantised" if double else "")
            return WeightFormat(method or "bitsandbytes", "nf4", bits, how, skip=skip)
        if q.get("load_in_8bit"):
            return WeightFormat(method or "bitsandbytes", "int8", 8, "LLM.int8: fp32 per row",
                                per_row_bits=32, skip=skip)  # fmt: skip
        return None
    if method in ("gptq", "awq", "gptq_marlin", "awq_marlin", "autoround", "auto-round"):
        bits = _int(q.get("bits", q.get("w_bit")), 4)
        group = _int(q.get("group_size", q.get("q_group_size")), 128)
        if bits not in (2, 3, 4, 8):
            return None
        dtype = "int8" if bits == 8 else "int4"
        meta = (16 + bits) / group if group > 0 else 0.0
        return WeightFormat(method, dtype, bits + meta, f"{method.upper()} {bits}-bit, group "
                            f"{group}: fp16 scale + {bits}-bit zero",
                            per_row_bits=(16 + bits) if group <= 0 else 0.0, skip=skip)  # fmt: skip
    if method in ("fp8", "fbgemm_fp8"):
        block = q.get("weight_block_size")
        if isinstance(block, list) and len(block) == 2 and all(_int(b, 0) > 0 for b in block):
            area = block[0] * block[1]
            return WeightFormat(
                method,
                "fp8",
                8 + 32 / area,
                f"FP8, fp32 scale per {block[0]}x{block[1]} block",
                skip=skip,
            )
        if method == "fbgemm_fp8":
            return WeightFormat(method, "fp8", 8, "FP8, fp32 scale per row", per_row_bits=32,
                                skip=skip)  # fmt: skip
        return WeightFormat(method, "fp8", 8, "FP8, one fp32 scale per tensor", skip=skip)
    if method == "modelopt":
        algo = str(q.get("quant_algo") or "").upper()
        if "NVFP4" in algo:
            return WeightFormat(method, "fp4", 4 + 8 / 16, "NVFP4: 16 FP4 + FP8 scale", skip=skip)
        if "FP8" in algo:
            return WeightFormat(method, "fp8", 8, "FP8, one fp32 scale per tensor", skip=skip)
        return None
    if method == "compressed-tensors":
        return _compressed_tensors(q, skip)
    return None


def _compressed_tensors(q: dict[str, Any], skip: tuple[str, ...]) -> WeightFormat | None:
    """compressed-tensors (llm-compressor): the first config group's weight scheme."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None
    group = next(iter(groups.values()))
    weights = group.get("weights") if isinstance(group, dict) else None
    if not isinstance(weights, dict):
        return None
    bits = _int(weights.get("num_bits"), 0)
    kind = str(weights.get("type") or "int")
    strategy = str(weights.get("strategy") or "tensor")
    size = _int(weights.get("group_size"), 0)
    zero = bits if weights.get("symmetric") is False else 0
    fmt = str(q.get("format") or "")
    if bits == 4 and kind == "float":  # NVFP4: groups of 16, FP8 scales
        return WeightFormat("compressed-tensors", "fp4", 4 + 8 / (size or 16),
                            f"NVFP4 ({fmt or 'float'}): {size or 16} FP4 + FP8 scale",
                            skip=skip)  # fmt: skip
    if bits == 8 and kind == "float":
        block = weights.get("block_structure")
        if strategy == "block" and isinstance(block, list) and len(block) == 2:
            area = _int(block[0], 1) * _int(block[1], 1)
            return WeightFormat(
                "compressed-tensors",
                "fp8",
                8 + 32 / max(1, area),
                f"FP8, scale per {block[0]}x{block[1]} block",
                skip=skip,
            )
        per_row = 32 if strategy == "channel" else 0
        return WeightFormat("compressed-tensors", "fp8", 8, f"FP8, {strategy} scales",
                            per_row_bits=per_row, skip=skip)  # fmt: skip
    if bits in (4, 8) and kind == "int":
        dtype = "int8" if bits == 8 else "int4"
        if strategy == "group" and size > 0:
            return WeightFormat("compressed-tensors", dtype, bits + (16 + zero) / size,
                                f"int{bits}, group {size}: fp16 scale"
                                + (f" + {bits}-bit zero" if zero else ""), skip=skip)  # fmt: skip
        per_row = 16 + zero if strategy == "channel" else 0
        return WeightFormat("compressed-tensors", dtype, bits, f"int{bits}, {strategy} scales",
                            per_row_bits=per_row, skip=skip)  # fmt: skip
    return None
