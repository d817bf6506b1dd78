"""`gpucheck fit`'s inputs: every bad value refused with one line and exit 2 (USAGE), options that
do not apply to the mode refused, a lower bound never called "fits", and nothing judged never
exit 0 but 1, as the doctor's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpucheck.fit.config import from_config
from gpucheck.fit.estimate import Setup, estimate
from gpucheck.fit.shape import ModelError
from gpucheck.fit.units import UnitError, parse_count, parse_size

FIT = REPO / "tests" / "fixtures" / "fit"
LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
         "num_attention_heads": 32, "vocab_size": 32000, "intermediate_size": 11008}  # fmt: skip


def test_a_bare_small_count_is_a_forgotten_suffix_and_a_big_one_is_exact() -> None:
    with pytest.raises(UnitError, match="no suffix: write 7B or 7M"):
        parse_count("7")
    assert parse_count("6738415616") == 6_738_415_616
    assert parse_count("7e9") == 7_000_000_000
    with pytest.raises(UnitError, match="more than any model has"):
        parse_count("1e30")


def test_gpu_memory_needs_a_unit_where_fit_asks_for_one() -> None:
    with pytest.raises(UnitError, match="has no unit: write 80GiB"):
        parse_size("80", "--gpu-memory", require_unit=True)
    assert parse_size("80GiB", "--gpu-memory", require_unit=True) == 80 * 1024**3


@pytest.mark.parametrize(
    ("field", "words"),
    [
        ({"num_key_value_heads": 0}, "num_key_value_heads is 0; it must be at least 1"),
        ({"num_key_value_heads": -2}, "num_key_value_heads is -2; it must be at least 1"),
        ({"head_dim": -64}, "head_dim is -64; it must be at least 1"),
        ({"intermediate_size": -1}, "intermediate_size is -1; it must be at least 1"),
        ({"num_key_value_heads": 64}, "num_key_value_heads (64) is more than num_attention_heads"),
        ({"num_key_value_heads": 3}, "num_key_value_heads (3) does not divide"),
        ({"num_attention_heads": 7}, "num_attention_heads (7) does not divide hidden_size"),
        ({"num_hidden_layers": 10**9}, "num_hidden_layers is 1000000000, above any real model"),
        ({"hidden_size": "4096"}, "hidden_size is '4096', not a whole number"),
        ({"vocab_size": None}, "no vocab_size"),
    ],
)
def test_a_config_field_that_cannot_be_right_is_refused_by_name(  # type: ignore[no-untyped-def]
    gpucheck, tmp_path: Path, field: dict[str, object], words: str
) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**LLAMA, **field}))
    result = gpucheck("fit", str(config), "--infer", "--gpu-memory", "80GiB")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and words in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--params", "7"), "'7' has no suffix"),
        (("--params", "1e30"), "more than any model has"),
        (("--params", "7B", "--gpu-memory", "80"), "'80' has no unit"),
        (("--params", "7B", "--gpu-memory", "900000TiB"), "more than any GPU has"),
        (("--params", "7B", "--gpu-memory", "9000000TiB"), "is too large"),
        (("--params", "7B", "--batch", "100000000000"), "--batch: 100000000000 is outside"),
        (("--params", "7B", "--seq", "0"), "--seq: 0 is outside"),
        (("--params", "7B", "--infer", "--zero", "2", "--gpus", "2"), "--zero applies to --train"),
        (("--params", "7B", "--infer", "--optimizer", "sgd"), "--optimizer applies to --train"),
        (("--params", "7B", "--infer", "--checkpointing"), "--checkpointing applies to --train"),
        (("--params", "7B", "--kv-dtype", "fp8"), "--kv-dtype applies to --infer"),
        (
            ("--params", "7B", "--gpus", "2", "--parallel", "tensor"),
            "--parallel applies to --infer",
        ),
        (("--params", "7B", "--infer", "--parallel", "tensor"), "pass --gpus N as well"),
        (("--params", "7B", "--infer", "--kv-dtype", "int4"), "--kv-dtype int4: serving engines"),
        (("--params", "7B", "--lora", "16"), "--lora needs the model's config.json"),
        (("--params", "7B", "--train", "--dtype", "nf4"), "add --lora 16"),
        (("--params", "7B", "--timeout", "nan"), "--timeout: nan is not a number"),
        (("--params", "7B", "--layout", "deepspeed"), "--layout: 'deepspeed' is not zero"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(  # type: ignore[no-untyped-def]
    gpucheck, args: tuple[str, ...], words: str
) -> None:
    result = gpucheck("fit", *args, "--json")
    assert result.returncode == 2, result.stdout
    assert result.stderr.startswith("gpucheck: ") and result.stderr.count("\n") == 1
    assert words in result.stderr, result.stderr


def test_with_no_gpu_to_judge_the_estimate_is_printed_and_the_exit_is_not_0(gpucheck) -> None:  # type: ignore[no-untyped-def]
    # `fit --params 7B --infer` on a machine with no GPU once exited 0: nothing was judged.
    result = gpucheck("fit", "--params", "7B", "--infer", "--json")
    assert result.returncode == 1  # as the doctor's "nothing was judged"
    assert json.loads(result.stdout)["verdicts"] == []
    assert "no GPU judged" in result.stderr and result.stderr.count("\n") == 1


def test_params_alone_is_a_lower_bound_never_fits(gpucheck) -> None:  # type: ignore[no-untyped-def]
    result = gpucheck("fit", "--params", "7B", "--infer", "--gpu-memory", "80GiB", "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["per_gpu"]["lower_bound"] is True
    assert data["verdicts"][0]["verdict"] == "may fit"
    assert any("LOWER BOUND" in a for a in data["assumptions"])
    text = gpucheck("fit", "--params", "7B", "--infer", "--gpu-memory", "80GiB")
    assert "may fit" in text.stdout and "  fits " not in text.stdout


def test_an_unknown_model_type_is_estimated_with_its_assumption_said(  # type: ignore[no-untyped-def]
    gpucheck, tmp_path: Path
) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**LLAMA, "model_type": "newarch", "hidden_act": "silu"}))
    data = json.loads(gpucheck("fit", str(config), "--infer", "--gpu-memory", "80GiB",
                               "--json").stdout)  # fmt: skip
    said = " ".join(data["assumptions"])
    assert "model_type 'newarch' is not one fit knows" in said
    assert "gated MLP" in said and "tie_word_embeddings not given" in said


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=True),
    st.text(max_size=5), st.lists(st.one_of(st.integers(), st.lists(st.integers())), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)  # fmt: skip
_FIELDS = (
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "head_dim", "intermediate_size", "vocab_size", "num_experts", "num_experts_per_tok",
    "moe_intermediate_size", "n_shared_experts", "first_k_dense_replace", "mlp_only_layers",
    "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "sliding_window", "layer_types",
    "multi_query", "tie_word_embeddings", "quantization_config", "model_type", "text_config",
    "decoder_sparse_step", "max_position_embeddings", "use_sliding_window",
    "hybrid_override_pattern", "layers_block_type", "mamba_d_conv", "mamba_dt_rank",
    "attn_layer_period", "attn_layer_offset", "expert_layer_period", "mamba_num_heads",
    "n_groups", "ssm_state_size", "interleave_moe_layer_step", "attention_chunk_size",
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@example({"mlp_only_layers": [[1]]}, "qwen2_moe")  # was a TypeError (unhashable list)
@example({"sliding_window": False}, "llama")
@given(st.dictionaries(st.sampled_from(_FIELDS), _VALUES, max_size=2),
       st.sampled_from(("llama", "qwen2_moe", "deepseek_v3", "gemma2", "falcon", "t5", "x",
                        "jamba", "mamba2", "nemotron_h", "gpt_oss", "llama4_text")))  # fmt: skip
def test_hostile_config_values_are_a_model_error_or_an_estimate(
    tmp_path_factory: pytest.TempPathFactory, fields: dict[str, object], model_type: str
) -> None:
    config = tmp_path_factory.mktemp("cfg") / "config.json"
    moe = {"num_experts": 4, "n_routed_experts": 4} if model_type != "llama" else {}
    config.write_text(json.dumps({**LLAMA, "model_type": model_type, **moe, **fields}))
    try:
        shape = from_config(config)
    except ModelError:
        return
    for mode in ("train", "infer"):
        est = estimate(shape, Setup(mode=mode, dtype="bf16", seq=64))
        assert est.total > 0
