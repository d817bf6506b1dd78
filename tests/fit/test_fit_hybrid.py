"""State-space and hybrid models: which layers keep a KV cache and which a recurrent state, in
every config spelling (Nemotron-H's pattern and block-type list, Falcon-H1's parallel blocks),
the recurrent state as its own serving part, and the config fields fit does not read said."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO

from gpucheck.fit.config import from_config
from gpucheck.fit.estimate import Setup, estimate
from gpucheck.fit.schema import fit_schema
from gpucheck.fit.shape import ModelError, ModelShape

FIT = REPO / "tests" / "fixtures" / "fit"
# Nemotron-H's Mamba-2 fields (transformers NemotronHConfig spelling), tiny.
NEMOTRON = {"model_type": "nemotron_h", "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
            "vocab_size": 100, "mamba_num_heads": 4, "mamba_head_dim": 32, "n_groups": 2,
            "ssm_state_size": 8, "conv_kernel": 4}  # fmt: skip


def write(tmp_path: Path, cfg: dict[str, Any]) -> ModelShape:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return from_config(path)


def test_nemotron_h_pattern_decides_each_layer(tmp_path: Path) -> None:
    shape = write(tmp_path, {**NEMOTRON, "num_hidden_layers": 6,
                             "hybrid_override_pattern": "M-M*-M"})  # fmt: skip
    assert (shape.mamba_layers, shape.kv_layers) == (3, 1)
    # One attention layer: 2 x 2 KV heads x 16 per token.
    assert shape.kv_elements(1) == 64
    # Per Mamba layer: conv (4 - 1) x (128 + 2 x 2 x 8) + SSM 128 x 8.
    assert shape.recurrent_per_layer == 3 * 160 + 1024


def test_nemotron_h_block_type_list_reads_as_the_pattern(tmp_path: Path) -> None:
    listed = write(tmp_path, {**NEMOTRON, "num_hidden_layers": 4,
                              "layers_block_type": ["mamba", "mlp", "attention", "mlp"]})  # fmt: skip
    lettered = write(tmp_path, {**NEMOTRON, "num_hidden_layers": 4,
                                "hybrid_override_pattern": "M-*-"})  # fmt: skip
    assert listed.params == lettered.params
    assert (listed.mamba_layers, listed.kv_layers) == (1, 1)


def test_a_pattern_that_does_not_match_the_layers_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="hybrid_override_pattern/layers_block_type 'M-X'"):
        write(tmp_path, {**NEMOTRON, "num_hidden_layers": 3, "hybrid_override_pattern": "M-X"})


def test_falcon_h1_runs_attention_and_mamba_in_every_layer(tmp_path: Path) -> None:
    shape = write(tmp_path, {"model_type": "falcon_h1", "hidden_size": 64,
                             "num_hidden_layers": 3, "num_attention_heads": 4,
                             "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
                             "vocab_size": 100, "mamba_d_ssm": 128, "mamba_n_heads": 4,
                             "mamba_d_head": 32, "mamba_n_groups": 1, "mamba_d_state": 16,
                             "mamba_d_conv": 4})  # fmt: skip
    assert (shape.mamba_layers, shape.kv_layers) == (3, 3)


def test_zamba_style_hybrid_layers_keep_kv_and_a_mamba_state(tmp_path: Path) -> None:
    shape = write(tmp_path, {"model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 3,
                             "num_attention_heads": 4, "vocab_size": 100,
                             "layers_block_type": ["mamba", "hybrid", "mamba"],
                             "n_mamba_heads": 4, "mamba_headdim": 32, "mamba_ngroups": 1,
                             "mamba_d_state": 16, "mamba_d_conv": 4, "num_mem_blocks": 2})  # fmt: skip
    assert (shape.mamba_layers, shape.kv_layers) == (3, 1)
    # Mamba-2 state: (4 - 1) x (128 + 2 x 16) conv + 128 x 16 SSM.
    assert shape.recurrent_per_layer == 3 * 160 + 2048
    assert any("counted in every hybrid layer (an overestimate)" in n for n in shape.notes)


def test_jamba_serving_keeps_a_recurrent_state_that_does_not_grow_with_length() -> None:
    shape = from_config(FIT / "jamba-v0.1" / "config.json")
    parts = {}
    for seq in (1000, 100_000):
        est = estimate(shape, Setup(mode="infer", dtype="bf16", batch=2, seq=seq))
        parts[seq] = {p.name: p.bytes for p in est.parts}
    # 28 Mamba layers x ((4 - 1) x 8192 conv + 8192 x 16 SSM) x 2 B x batch 2.
    assert parts[1000]["ssm_state"] == parts[100_000]["ssm_state"] == 17_432_576
    # KV of the 4 attention layers only: 4 x 2 x 8 x 128 x 1000 tokens x 2 B x batch 2.
    assert parts[1000]["kv_cache"] == 32_768_000


def test_a_pure_state_space_model_is_served_with_no_kv_cache(gpucheck) -> None:  # type: ignore[no-untyped-def]
    config = FIT / "mamba2-780m" / "config.json"
    result = gpucheck("fit", str(config), "--infer", "--seq", "4096", "--gpu-memory", "24GiB",
                      "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    jsonschema.Draft202012Validator(fit_schema()).validate(data)
    names = [p["name"] for p in data["per_gpu"]["parts"]]
    assert "ssm_state" in names and "kv_cache" not in names
    assert data["model"]["mamba_layers"] == 48 and data["model"]["attention_layers"] == 0
    assert data["schema_version"] == "1.2"


def test_training_a_mamba_model_says_its_activations_are_not_modelled() -> None:
    shape = from_config(FIT / "mamba-2.8b" / "config.json")
    est = estimate(shape, Setup(mode="train", dtype="bf16", seq=512))
    assert est.lower_bound
    assert any("64 Mamba layers" in a for a in est.assumptions)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"attention_chunk_size": 8192}, "attention_chunk_size 8192 not read: KV counted as "
         "full attention"),
        ({"num_nextn_predict_layers": 1}, "num_nextn_predict_layers 1: the multi-token-"
         "prediction module(s) are stored in the checkpoint but not counted in the weights"),
        ({"vision_config": {"hidden_size": 1280}}, "vision tower (vision_config) not counted"),
        ({"model_type": "qwen2_5_vl"}, "model_type 'qwen2_5_vl' estimated as the qwen2 family"),
    ],
)  # fmt: skip
def test_a_field_fit_does_not_read_is_said(
    tmp_path: Path, extra: dict[str, Any], said: str
) -> None:
    llama = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}  # fmt: skip
    shape = write(tmp_path, {**llama, **extra})
    assert any(said in note for note in shape.notes), shape.notes


def test_llama4_counts_its_shared_expert_and_interleaved_moe_layers(tmp_path: Path) -> None:
    shape = write(tmp_path, {"model_type": "llama4_text", "hidden_size": 64,
                             "num_hidden_layers": 4, "num_attention_heads": 4,
                             "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100,
                             "intermediate_size": 32, "intermediate_size_mlp": 128,
                             "num_local_experts": 4, "num_experts_per_tok": 1,
                             "interleave_moe_layer_step": 2})  # fmt: skip
    # Layers 1 and 3 are MoE: 4 routed experts + 1 shared, each 3 x 64 x 32, router 64 x 4;
    # layers 0 and 2 a dense MLP of 3 x 64 x 128. Attention 2 x 64 x 64 + 2 x 64 x 32 a layer.
    attention, norms = 12_288, 128
    moe, dense = 5 * 6_144 + 256, 24_576
    body = 4 * (attention + norms) + 2 * moe + 2 * dense
    assert shape.params == body + 2 * 100 * 64 + 64
    # One routed expert and the shared one a token.
    assert shape.active == shape.params - 2 * 3 * 6_144


def test_gpt_oss_counts_its_attention_sinks_and_biases(tmp_path: Path) -> None:
    base = json.loads((FIT / "gpt-oss-20b" / "config.json").read_text())
    shape = write(tmp_path, base)
    as_llama = write(tmp_path, {**base, "model_type": "mixtral", "attention_bias": False})
    # Per layer: 64 sinks, q/k/v/o biases 4096 + 512 + 512 + 2880, 32 experts' biases
    # 32 x (2 x 2880 + 2880), router bias 32; over 24 layers.
    assert shape.params - as_llama.params == 24 * (64 + 8000 + 32 * 8640 + 32)


def test_a_folder_with_safetensors_keeps_what_the_config_said(tmp_path: Path) -> None:
    """The files give exact counts, the config the architecture: a field the config has that
    fit does not read is still said when the weights' headers are read beside it."""
    import json as _json
    import struct

    from gpucheck.fit.sources import local_model

    llama = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
             "attention_chunk_size": 8192}  # fmt: skip
    (tmp_path / "config.json").write_text(_json.dumps(llama))
    header = _json.dumps({"w": {"dtype": "BF16", "shape": [64, 64], "data_offsets": [0, 8192]}})
    with (tmp_path / "model.safetensors").open("wb") as fh:
        fh.write(struct.pack("<Q", len(header)) + header.encode() + bytes(8192))
    shape = local_model(str(tmp_path))
    assert shape.params == 64 * 64  # the file's count
    assert any("attention_chunk_size 8192 not read" in note for note in shape.notes), shape.notes
