"""`gpucheck fit` per architecture family and mode: what each term is counted from (total vs
active parameters, KV heads, latents, windows, cross-attention), serving split over GPUs, LoRA,
and quantised weights. Expected values are worked by hand from the configs' literal fields."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest
from conftest import REPO

from gpucheck.fit.config import from_config
from gpucheck.fit.estimate import Setup, estimate
from gpucheck.fit.training import lora_params
from gpucheck.fit.units import SAFETENSORS_BYTES

FIT = REPO / "tests" / "fixtures" / "fit"
GIB = 1024**3


def part(shape_name: str, name: str, **setup: object) -> float:
    shape = from_config(FIT / shape_name / "config.json")
    est = estimate(shape, Setup(**setup))  # type: ignore[arg-type]
    return next(p.bytes for p in est.parts if p.name == name)


def test_moe_weights_count_every_expert_and_activations_only_the_routed_ones() -> None:
    # Mixtral: 46,702,792,704 params resident in bf16; the MLP activations are those of the 2
    # experts a token goes through (doubling top-k doubles them, the weights do not change).
    weights = part("mixtral-8x7b-v0.1", "weights", mode="infer", dtype="bf16", seq=128)
    assert weights == 46_702_792_704 * 2
    shape = from_config(FIT / "mixtral-8x7b-v0.1" / "config.json")
    from dataclasses import replace

    one = estimate(replace(shape, experts_per_token=1), Setup(mode="train", dtype="bf16", seq=128))
    two = estimate(shape, Setup(mode="train", dtype="bf16", seq=128))
    act1 = next(p.bytes for p in one.parts if p.name == "activations")
    act2 = next(p.bytes for p in two.parts if p.name == "activations")
    # Per layer and token, one more expert adds 4 x 14336 x 2 B (gate, act, up, product) and
    # 2 x 4096 x 2 B + 30 B of routing rows: 32 layers x 128 tokens.
    assert act2 - act1 == 32 * 128 * (4 * 14336 * 2 + 2 * 4096 * 2 + 2 + 4 + 24)


def test_tensor_parallel_divides_weights_and_kv_heads() -> None:
    # Llama 3 70B bf16, 8 KV heads over 8 GPUs: one KV head each; 4096 tokens.
    kw = {"mode": "infer", "dtype": "bf16", "seq": 4096, "gpus": 8, "parallel": "tensor"}
    assert part("meta-llama-3-70b", "weights", **kw) == 70_553_706_496 * 2 / 8
    assert part("meta-llama-3-70b", "kv_cache", **kw) == 2 * 80 * 1 * 128 * 4096 * 2


def test_mqa_kv_head_is_replicated_not_divided_over_tensor_parallel_gpus() -> None:
    # Falcon-7B has one KV head: each of 4 GPUs keeps it whole (vLLM replicates KV heads).
    kw = {"mode": "infer", "dtype": "bf16", "seq": 2048}
    one = part("falcon-7b", "kv_cache", **kw)
    four = part("falcon-7b", "kv_cache", **kw, gpus=4, parallel="tensor")
    assert one == four == 2 * 32 * 1 * 64 * 2048 * 2


def test_mla_latent_is_kept_whole_on_every_tensor_parallel_gpu() -> None:
    kw = {"mode": "infer", "dtype": "bf16", "seq": 1000}
    assert part("deepseek-v3", "kv_cache", **kw, gpus=8, parallel="tensor") == 61 * 576 * 1000 * 2


def test_pipeline_parallel_keeps_a_stage_of_layers_on_each_gpu() -> None:
    kw = {"mode": "infer", "dtype": "bf16", "seq": 4096}
    kv = part("meta-llama-3-70b", "kv_cache", **kw, gpus=4, parallel="pipeline")
    assert kv == 2 * 80 * 8 * 128 * 4096 * 2 / 4  # 20 of 80 layers
    weights = part("meta-llama-3-70b", "weights", **kw, gpus=4, parallel="pipeline")
    # 20 of 80 layers' weights plus the larger end (embeddings = head: 128256 x 8192).
    layers = 70_553_706_496 - 2 * 128256 * 8192
    assert weights == pytest.approx(layers * 2 / 4 + 128256 * 8192 * 2)


def test_encoder_decoder_counts_cross_attention_kv_over_the_encoder_output() -> None:
    # Whisper large-v2: 32 decoder layers x 2 x 20 heads x 64 x 1500 encoder frames x 2 B.
    cross = part("whisper-large-v2", "cross_kv_cache", mode="infer", dtype="fp16", seq=448)
    assert cross == 2 * 32 * 20 * 64 * 1500 * 2


def test_sliding_window_caps_kv_and_says_so(gpucheck) -> None:  # type: ignore[no-untyped-def]
    result = gpucheck(
        "fit", str(FIT / "mistral-7b-v0.1" / "config.json"), "--infer", "--seq", "32768",
        "--gpu-memory", "80GiB", "--json",
    )  # fmt: skip
    data = json.loads(result.stdout)
    kv = next(p for p in data["per_gpu"]["parts"] if p["name"] == "kv_cache")
    assert kv["bytes"] == 2 * 32 * 8 * 128 * 4096 * 2  # capped at the 4096 window
    assert any("sliding window" in a for a in data["assumptions"])


def test_quantised_weights_keep_embeddings_and_head_in_16_bit_and_count_scales() -> None:
    # Llama 3 8B int4 (GPTQ group 128): 6,979,321,856 linear weights x (4 + 20/128) bits, the
    # 2 x 128256 x 4096 embedding and head and 65 x 4096 norm weights at 2 B.
    weights = part("meta-llama-3-8b", "weights", mode="infer", dtype="int4", seq=16)
    linear = 32 * (4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    assert linear == 6_979_321_856
    assert weights == pytest.approx(linear * 4.15625 / 8 + (8_030_261_248 - linear) * 2)


def test_lora_adapters_on_q_and_v_and_on_every_linear_layer() -> None:
    shape = from_config(FIT / "meta-llama-3-8b" / "config.json")
    # r x (in + out) per matrix, 32 layers: q 4096->4096, v 4096->1024.
    assert lora_params(shape, 16, ("q", "v")) == 32 * 16 * (8192 + 5120) == 6_815_744
    every = 32 * 16 * (8192 + 5120 * 2 + 8192 + 3 * (4096 + 14336))
    assert lora_params(shape, 16, ("all-linear",)) == every


def test_qlora_trains_adapters_only(gpucheck) -> None:  # type: ignore[no-untyped-def]
    result = gpucheck(
        "fit", str(FIT / "meta-llama-3-8b" / "config.json"), "--dtype", "nf4", "--lora", "16",
        "--seq", "1024", "--gpu-memory", "24GiB", "--json",
    )  # fmt: skip
    parts = {p["name"]: p["bytes"] for p in json.loads(result.stdout)["per_gpu"]["parts"]}
    assert parts["gradients"] == 6_815_744 * 4 and parts["optimizer"] == 6_815_744 * 8
    assert parts["weights"] < 6 * GIB  # NF4 base with 16-bit embeddings and head: 5.3 GiB


def _write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """Each tensor's data_offsets span its bytes; the data is a hole (a sparse file)."""
    header: dict[str, object] = {}
    end = 0
    for name, (dtype, shape) in tensors.items():
        size = math.ceil(math.prod(shape) * SAFETENSORS_BYTES[dtype])
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [end, end + size]}
        end += size
    raw = json.dumps(header).encode()
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        fh.truncate(8 + len(raw) + end)


def test_a_quantised_checkpoint_is_served_at_the_bytes_its_files_hold(  # type: ignore[no-untyped-def]
    gpucheck, tmp_path: Path
) -> None:
    # A GPTQ checkpoint packs 8 int4 weights per I32 element: the parameter count comes from
    # the config, the weights' bytes from the safetensors header, dtype by dtype.
    config = json.loads((FIT / "tiny-llama-measure" / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 128}
    (tmp_path / "config.json").write_text(json.dumps(config))
    _write_safetensors(tmp_path / "model.safetensors", {
        "q.qweight": ("I32", [32, 256]), "q.scales": ("F16", [2, 256]),
        "embed": ("BF16", [2000, 256]),
    })  # fmt: skip
    data = json.loads(gpucheck("fit", str(tmp_path), "--infer", "--seq", "8", "--gpu-memory",
                               "8GiB", "--json").stdout)  # fmt: skip
    assert data["model"]["params"] == 3_795_200  # from the config
    weights = next(p for p in data["per_gpu"]["parts"] if p["name"] == "weights")
    assert weights["bytes"] == 32 * 256 * 4 + 2 * 256 * 2 + 2000 * 256 * 2
    assert data["setup"]["dtype"] == "int4"


def test_readme_examples_moe_mqa_and_multi_gpu_serving(gpucheck) -> None:  # type: ignore[no-untyped-def]
    moe = gpucheck("fit", str(FIT / "qwen3-30b-a3b" / "config.json"), "--infer", "--seq",
                   "8192", "--batch", "8", "--gpu-memory", "80GiB")  # fmt: skip
    assert moe.returncode == 0 and "3.35B active: 8 of 128 experts" in moe.stdout
    mqa = gpucheck("fit", str(FIT / "falcon-7b" / "config.json"), "--infer", "--seq", "2048",
                   "--batch", "32", "--gpu-memory", "24GiB")  # fmt: skip
    assert "MQA (1 KV of 71 heads)" in mqa.stdout
    tp = gpucheck("fit", str(FIT / "meta-llama-3-70b" / "config.json"), "--infer", "--seq",
                  "8192", "--batch", "8", "--gpus", "4", "--gpu-memory", "80GiB")  # fmt: skip
    assert tp.returncode == 0 and "4 GPUs tensor parallel" in tp.stdout


def test_an_index_without_its_shards_serves_at_its_total_size_with_the_configs_count(  # type: ignore[no-untyped-def]
    gpucheck, tmp_path: Path
) -> None:
    # metadata.total_size is the bytes the shards hold, whatever their dtypes: it is not
    # divided by a --dtype; the parameter count comes from the config beside it.
    (tmp_path / "config.json").write_bytes(
        (FIT / "tiny-llama-measure" / "config.json").read_bytes()
    )
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({
        "metadata": {"total_size": 7_000_000}, "weight_map": {"a": "model-00001-of-00002.safetensors"},
    }))  # fmt: skip
    data = json.loads(gpucheck("fit", str(tmp_path), "--infer", "--seq", "8", "--gpu-memory",
                               "8GiB", "--json").stdout)  # fmt: skip
    assert data["model"]["params"] == 3_795_200
    weights = next(p for p in data["per_gpu"]["parts"] if p["name"] == "weights")
    assert weights["bytes"] == 7_000_000


@pytest.mark.parametrize(
    ("args", "per_param", "said"),
    [
        ((), 16, "layout: ZeRO/Megatron mixed precision"),
        (("--layout", "trainer"), 18, "layout: Hugging Face Trainer mixed precision"),
        (("--optimizer", "8bit"), 10, "layout: ZeRO/Megatron"),
        (("--optimizer-states", "bf16"), 12, "layout: ZeRO/Megatron"),
    ],
)
def test_training_layout_and_optimizer_are_said_and_counted(  # type: ignore[no-untyped-def]
    gpucheck, args: tuple[str, ...], per_param: int, said: str
) -> None:
    # Bytes of model states per parameter: ZeRO 2 + 2 + 4 + 8; HF Trainer 6 + 4 + 8; 8-bit
    # AdamW 2 + 2 + 4 + 2; bf16 Adam moments 2 + 2 + 4 + 4.
    result = gpucheck("fit", "--params", "1B", *args, "--gpu-memory", "80GiB", "--json")
    data = json.loads(result.stdout)
    parts = {p["name"]: p["bytes"] for p in data["per_gpu"]["parts"]}
    assert parts["weights"] + parts["gradients"] + parts["optimizer"] == per_param * 10**9
    assert any(a.startswith(said) for a in data["assumptions"])
