"""fit's truth table for the architectures of 2025-26: MXFP4 MoE (gpt-oss), state-space
(Mamba, Mamba-2) and hybrid (Jamba) models, against published figures, each with its source and
tolerance (tests/fixtures/fit/README.md says where each config.json was read).

Expected values are literals from the sources, never computed with the estimator. A tolerance
says how precisely the source gives its figure ("116.8B" to 0.1B: 0.1%; "52B" to 1B: 1%).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from conftest import REPO

from gpucheck.fit.config import from_config
from gpucheck.fit.quant import weight_bytes
from gpucheck.fit.shape import ModelShape

FIT = REPO / "tests" / "fixtures" / "fit"
GIB = 1024**3


def cfg(name: str) -> ModelShape:
    return from_config(FIT / name / "config.json")


def active_without_input_embedding(name: str) -> float:
    shape = cfg(name)
    return shape.active - shape.embedding_params


def as_stored_gib(name: str) -> float:
    """The weights in the checkpoint's own quantisation (no --dtype)."""
    shape = cfg(name)
    assert shape.quantization is not None
    return weight_bytes(shape, shape.quantization)[0] / GIB


def kv_bytes(name: str, tokens: int) -> float:
    return cfg(name).kv_elements(tokens) * 2  # 16-bit


ROWS: list[tuple[str, Callable[[], float], float, float, str]] = [
    ("gpt-oss-120b total", lambda: cfg("gpt-oss-120b").params, 116.8e9, 0.001,
     "gpt-oss model card, arXiv:2508.10925 section 2: 116.8B total parameters"),
    ("gpt-oss-120b active", lambda: active_without_input_embedding("gpt-oss-120b"), 5.1e9, 0.01,
     "same: 5.1B active (the unembedding counted, the input embedding not)"),
    ("gpt-oss-20b total", lambda: cfg("gpt-oss-20b").params, 20.9e9, 0.003,
     "same: 20.9B total parameters"),
    ("gpt-oss-20b active", lambda: active_without_input_embedding("gpt-oss-20b"), 3.6e9, 0.014,
     "same: 3.6B active"),
    ("gpt-oss-120b MXFP4 weights", lambda: as_stored_gib("gpt-oss-120b"), 59.8 + 1.1, 0.005,
     "ollama/ollama#12752 (gpt-oss:120b load log): model weights 59.8 GiB on ROCm0 + 1.1 GiB "
     "on CPU"),
    ("Jamba total", lambda: cfg("jamba-v0.1").params, 52e9, 0.01,
     "transformers docs, model_doc/jamba.md: an overall of 52B parameters"),
    ("Jamba active", lambda: cfg("jamba-v0.1").active, 12e9, 0.042,
     "same: 12B active parameters"),
    ("Jamba KV cache at 256K", lambda: kv_bytes("jamba-v0.1", 256 * 1024) / GIB, 4.0, 0.01,
     "Jamba, arXiv:2403.19887 Table 1: KV cache at 256K context, 16-bit: 4GB"),
    ("Mamba 2.8B total", lambda: cfg("mamba-2.8b").params, 2.8e9, 0.018,
     "Gu and Dao, arXiv:2312.00752: Mamba-2.8B (state-spaces/mamba-2.8b)"),
    ("Qwen2.5-VL-7B total", lambda: cfg("qwen2.5-vl-7b-instruct").params, 8.29e9, 0.0006,
     "a public verl training log (EvaHan2026 run, read through the code index) loading "
     "Qwen2.5-VL-7B-Instruct: Qwen2_5_VLForConditionalGeneration contains 8.29B parameters"),
    ("DeepSeek-V3 with its MTP module", lambda: cfg("deepseek-v3").params
     + cfg("deepseek-v3").mtp_params, 685e9, 0.001,
     "DeepSeek-V3 model card (huggingface.co/deepseek-ai/DeepSeek-V3): the total size on Hugging "
     "Face is 685B, 671B of the Main Model weights and 14B of the MTP Module weights"),
    ("Nemotron-Nano-9B-v2 total", lambda: cfg("nemotron-nano-9b-v2").params, 9e9, 0.056,
     "NVIDIA-Nemotron-Nano-9B-v2 model card: a 9B-parameter model (given to one digit)"),
    ("Nemotron-Nano-9B-v2 attention layers", lambda: cfg("nemotron-nano-9b-v2").kv_layers, 4, 0,
     "same: Mamba-2 and MLP layers combined with just four Attention layers"),
    ("Mamba-2 780M total", lambda: cfg("mamba2-780m").params, 780e6, 0.001,
     "Dao and Gu, arXiv:2405.21060: Mamba-2 780M (state-spaces/mamba2-780m)"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "derived", "published", "tolerance", "source"), ROWS,
                         ids=[r[0] for r in ROWS])  # fmt: skip
def test_published_figure_of_a_2026_architecture(
    what: str, derived: Callable[[], float], published: float, tolerance: float, source: str
) -> None:
    value = derived()
    assert abs(value - published) <= tolerance * published, (
        f"{what}: fit says {value:,.3f}, {source} says {published:,.3f}"
    )


def test_a_state_space_model_keeps_no_kv_cache_only_its_recurrent_state() -> None:
    # Mamba-2 780M: 48 layers x ((4 - 1) x (3072 + 2 x 128) conv + 3072 x 128 SSM) elements.
    shape = cfg("mamba2-780m")
    assert shape.kv_elements(100_000) == 0
    assert shape.recurrent_elements == 48 * (3 * 3328 + 3072 * 128)


def test_text_only_leaves_the_vision_tower_out(gpucheck) -> None:  # type: ignore[no-untyped-def]
    config = str(FIT / "qwen2.5-vl-7b-instruct" / "config.json")
    args = ("fit", config, "--infer", "--gpu-memory", "80GiB", "--json")
    whole = json.loads(gpucheck(*args).stdout)["model"]["params"]
    text = json.loads(gpucheck(*args, "--text-only").stdout)
    # The ViT: Conv3d 3 x 2 x 14 x 14 x 1280 = 1,505,280; 32 blocks of 19,702,200 (2 RMSNorms,
    # QKV 1280 -> 3840 and output projection with biases, a biased SwiGLU of 3420); merger
    # 1280 + 5120 x 5120 + 5120 + 5120 x 3584 + 3584 = 44,574,464.
    assert whole - text["model"]["params"] == 1_505_280 + 32 * 19_702_200 + 44_574_464
    assert any("--text-only: 676,550,144 tower parameters left out" in n for n in text["notes"])


def test_only_jambas_attention_layers_keep_kv() -> None:
    # 4 of 32 layers attend (period 8, offset 4): 2 x 8 KV heads x 128 per token and layer.
    assert cfg("jamba-v0.1").kv_elements(1) == 4 * 2 * 8 * 128
