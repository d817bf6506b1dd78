"""Bytes of the weights in a dtype, quantised formats with their scales and zero points.

Weight-only formats quantise the linear layers of the transformer blocks and keep the
embeddings, the output head, norms, biases and MoE routers in 16-bit, as GPTQ, AWQ and
bitsandbytes do. Bits per quantised weight, metadata included:
- int4 (GPTQ/AWQ, group size 128): 4 + (16-bit scale + 4-bit zero point) / 128 = 4.156.
- nf4 (bitsandbytes/QLoRA, blocks of 64, double quantisation): 4 + 8/64 + 32/(64 * 256) =
  4.127 (Dettmers et al., arXiv:2305.14314 section 3: "0.127 bits per parameter").
- int8 (bitsandbytes LLM.int8): 8 + one fp32 scale per output row (32 / inputs).
- fp8 (DeepSeek-V3 style, 128 x 128 blocks): 8 + 32 / 16384.
- fp4 (NVFP4, blocks of 16 with an FP8 scale): 4 + 8 / 16 = 4.5.
A checkpoint whose config.json carries a quantization_config is counted by that format
(quantization_config.py): its bits, the layers it covers and those it leaves in 16-bit.
"""

from __future__ import annotations

from collections.abc import Callable

from gpucheck.fit.quantization_config import WeightFormat
from gpucheck.fit.shape import ModelShape
from gpucheck.fit.units import DTYPE_BYTES

QUANTISED = ("int8", "int4", "nf4", "fp8", "fp4")
# Metadata bits per quantised weight (scales, zero points), a linear layer of `inputs` columns.
_META_BITS: dict[str, Callable[[int], float]] = {
    "int4": lambda inputs: (16 + 4) / 128,
    "nf4": lambda inputs: 8 / 64 + 32 / (64 * 256),
    "int8": lambda inputs: 32 / inputs,
    "fp8": lambda inputs: 32 / (128 * 128),
    "fp4": lambda inputs: 8 / 16,
}
_FORMAT = {
    "int4": "GPTQ/AWQ group 128: fp16 scale + 4-bit zero",
    "nf4": "bitsandbytes NF4, blocks of 64, double-quantised scales",
    "int8": "LLM.int8: fp32 scale per row",
    "fp8": "fp8 with fp32 scales per 128x128 block",
    "fp4": "NVFP4: blocks of 16 with an FP8 scale",
}


def linear_params(shape: ModelShape) -> int:
    return sum(x.inputs * x.outputs * x.count for x in shape.linears)


def weight_bytes(shape: ModelShape, dtype: str, params: int | None = None) -> tuple[float, str]:
    """(bytes, how) of the weights of `params` (default: all) in `dtype`."""
    n = shape.params if params is None else params
    fmt = shape.weight_format
    if fmt is not None and dtype == fmt.dtype and shape.linears:
        return _as_stored(shape, fmt, n)
    if dtype not in QUANTISED or (dtype == "fp8" and not shape.linears):
        per = DTYPE_BYTES[dtype]
        return n * per, f"{n:,} params x {per:g} B ({dtype})"
    quantised = linear_params(shape) if shape.linears else n
    quantised = min(quantised, n)
    share = n / shape.params if shape.params else 1.0  # a pipeline stage's share
    quantised = int(quantised * share) if params is not None else quantised
    sixteen = n - quantised
    bits = DTYPE_BYTES[dtype] * 8
    if shape.linears:
        meta = sum(
            x.inputs * x.outputs * x.count * _META_BITS[dtype](x.inputs) for x in shape.linears
        ) / max(1, linear_params(shape))
    else:
        meta = _META_BITS[dtype](4096)
    total = quantised * (bits + meta) / 8 + sixteen * 2
    how = (
        f"{quantised:,} linear weights x {bits + meta:.3f} bits ({_FORMAT[dtype]}) + "
        f"{sixteen:,} embeddings/head/norms x 2 B"
    )
    return total, how


def _as_stored(shape: ModelShape, fmt: WeightFormat, n: int) -> tuple[float, str]:
    """The checkpoint's own format: its linear layers at the format's bits, the rest 16-bit."""
    covered = [x for x in shape.linears if fmt.covers(x)]
    quantised = min(sum(x.inputs * x.outputs * x.count for x in covered), shape.params)
    bits = sum(x.inputs * x.outputs * x.count * fmt.bits_for(x) for x in covered)
    share = n / shape.params if shape.params else 1.0  # a pipeline stage's share
    sixteen = shape.params - quantised
    total = (bits / 8 + sixteen * 2) * share
    mean = bits / quantised if quantised else 0.0
    kept = f" (not converted: {', '.join(fmt.skip)})" if fmt.skip else ""
    how = (
        f"{quantised:,} {'expert ' if fmt.experts_only else ''}linear weights x {mean:.3f} bits "
        f"({fmt.how}; quantization_config {fmt.method}) + {sixteen:,} others x 2 B{kept}"
    )
    return total, how
