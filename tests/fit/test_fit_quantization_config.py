"""A checkpoint's own quantization_config: bits per weight of each format (scales and zero
points counted), the layers it leaves in 16-bit, and a method fit does not know said, never
silent. Expected bytes are worked by hand in the comments from the formats' published layouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpucheck.fit.config import from_config
from gpucheck.fit.quant import weight_bytes
from gpucheck.fit.quantization_config import read_format

# A small Llama: per layer 4 x 64 x 64 attention + 3 x 64 x 128 MLP weights, 2 norms; 2 layers,
# 100 x 64 embeddings and an untied head, a final norm: 95,040 parameters, 81,920 in linears.
TINY = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}  # fmt: skip


def shape_of(tmp_path: Path, quantization: dict[str, Any]):  # type: ignore[no-untyped-def]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "quantization_config": quantization}))
    return from_config(path)


@pytest.mark.parametrize(
    ("quantization", "dtype", "bits"),
    [
        # OCP MX: 32 FP4 values share one 8-bit E8M0 scale.
        ({"quant_method": "mxfp4"}, "fp4", 4.25),
        # NVFP4: 16 FP4 values share an FP8 scale.
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "fp4", 4.5),
        # DeepSeek-V3: one fp32 scale per 128 x 128 block.
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8", 8 + 32 / 16384),
        ({"quant_method": "fp8"}, "fp8", 8.0),
        # GPTQ/AWQ 4-bit, group 128: fp16 scale + 4-bit zero per 128 weights.
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "int4", 4 + 20 / 128),
        ({"quant_method": "awq", "bits": 4, "group_size": 64}, "int4", 4 + 20 / 64),
        # QLoRA's double quantisation: 0.127 bits of constants per weight (arXiv:2305.14314).
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
          "bnb_4bit_use_double_quant": True}, "nf4", 4.127),
        # Without it: one fp32 absmax per 64.
        ({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "nf4", 4.5),
        ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
              "num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}}},
         "fp4", 4.5),
        ({"quant_method": "compressed-tensors", "format": "pack-quantized",
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
              "num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
              "symmetric": True}}}}, "int4", 4 + 16 / 128),
    ],
)  # fmt: skip
def test_bits_per_weight_of_each_format(
    quantization: dict[str, Any], dtype: str, bits: float
) -> None:
    fmt, note = read_format({"quantization_config": quantization})
    assert note is None and fmt is not None
    assert fmt.dtype == dtype
    assert fmt.bits == pytest.approx(bits, abs=0.001)


def test_gptq_weights_count_scales_and_zeros_and_leave_the_rest_16_bit(tmp_path: Path) -> None:
    shape = shape_of(tmp_path, {"quant_method": "gptq", "bits": 4, "group_size": 128})
    assert shape.quantization == "int4"
    # 81,920 linear weights x 4.15625 bits = 42,560 B; 13,120 others x 2 B = 26,240 B.
    assert weight_bytes(shape, "int4")[0] == pytest.approx(68_800)


def test_modules_to_not_convert_stay_16_bit(tmp_path: Path) -> None:
    shape = shape_of(tmp_path, {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                "modules_to_not_convert": ["model.layers.*.self_attn"]})  # fmt: skip
    # The 2 x 16,384 attention weights join the 16-bit rest: 49,152 x 4.15625 / 8 = 25,536 B
    # and 45,888 x 2 = 91,776 B.
    bytes_, how = weight_bytes(shape, "int4")
    assert bytes_ == pytest.approx(117_312)
    assert "not converted: model.layers.*.self_attn" in how


def test_an_ignore_list_names_the_layers_left_alone(tmp_path: Path) -> None:
    shape = shape_of(tmp_path, {"quant_method": "compressed-tensors", "ignore": ["lm_head",
                     "re:.*mlp.down_proj"], "config_groups": {"g": {"targets": ["Linear"],
                     "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}}}})  # fmt: skip
    # down_proj (2 x 8,192) stays 16-bit: 65,536 x 1 B + 29,504 x 2 B.
    assert weight_bytes(shape, "fp8")[0] == pytest.approx(65_536 + 59_008)


def test_mxfp4_quantises_only_the_experts(tmp_path: Path) -> None:
    # A dense model under MXFP4: no experts, so nothing is 4-bit (as gpt-oss's attention).
    shape = shape_of(tmp_path, {"quant_method": "mxfp4"})
    assert weight_bytes(shape, "fp4")[0] == pytest.approx(95_040 * 2)


def test_an_unknown_method_is_said_in_the_report_not_silent(gpucheck, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "quantization_config": {"quant_method": "xyz"}}))
    result = gpucheck("fit", str(path), "--infer", "--gpu-memory", "80GiB", "--json")
    data = json.loads(result.stdout)
    said = "quantization method 'xyz' not understood: weights counted as the --dtype"
    assert any(said in a for a in data["assumptions"])
    assert data["setup"]["dtype"] == "bf16"
    text = gpucheck("fit", str(path), "--infer", "--gpu-memory", "80GiB").stdout
    assert said in text


def test_a_quantised_checkpoint_is_served_in_its_own_format_by_default(  # type: ignore[no-untyped-def]
    gpucheck, tmp_path: Path
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "quantization_config": {
        "quant_method": "fp8", "weight_block_size": [128, 128]}}))  # fmt: skip
    data = json.loads(gpucheck("fit", str(path), "--infer", "--gpu-memory", "80GiB",
                               "--json").stdout)  # fmt: skip
    assert data["setup"]["dtype"] == "fp8"
    assert data["model"]["quantization"] == {"method": "fp8", "dtype": "fp8",
                                             "bits_per_weight": 8.002, "not_converted": []}  # fmt: skip
