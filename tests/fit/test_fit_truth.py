"""fit's truth table: published figures, each with its citation and tolerance, against what fit
derives from the models' real config.json files (tests/fixtures/fit, sources in its README).

Expected values are literals from the sources (or, for a formula's instance, worked by hand in
the comment), never computed with the estimator. A tolerance says how precisely the source
gives its figure: "46.7B" is given to 0.1B, so 0.2%; "2.4B" to two digits, so 2.1%.
The bar: every family within 2% of the published figure on parameters and KV cache.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO

from gpucheck.fit.config import from_config
from gpucheck.fit.estimate import Setup, estimate
from gpucheck.fit.quant import weight_bytes
from gpucheck.fit.shape import ModelShape
from gpucheck.fit.training import lora_params

FIT = REPO / "tests" / "fixtures" / "fit"
MODELS = REPO / "tests" / "fixtures" / "models"
GB = 10**9


def cfg(name: str) -> ModelShape:
    folder = FIT / name if (FIT / name).is_dir() else MODELS / name
    return from_config(folder / "config.json")


def total(name: str) -> float:
    return cfg(name).params


def active(name: str) -> float:
    return cfg(name).active


def active_without_input_embedding(name: str) -> float:
    shape = cfg(name)
    return shape.active - shape.embedding_params


def non_embedding(name: str) -> float:
    """Without the input embeddings and an untied output head (as Gemma and Qwen count)."""
    shape = cfg(name)
    return shape.params - shape.embedding_params - shape.head_params


def kv_elements(name: str, tokens: int = 1) -> float:
    return cfg(name).kv_elements(tokens)


def gpt(tmp: Path, hidden: int, heads: int, layers: int, vocab: int, positions: int) -> ModelShape:
    """A GPT-2-style config (LayerNorm, biases, learned positions, tied head) of a given size."""
    path = tmp / f"gpt-{hidden}-{layers}.json"
    path.write_text(json.dumps({
        "model_type": "gpt2", "n_embd": hidden, "n_head": heads, "n_layer": layers,
        "vocab_size": vocab, "n_positions": positions,
    }))  # fmt: skip
    return from_config(path)


def states_per_param(**setup: object) -> float:
    shape = ModelShape(source="--params 1B", params=10**9)
    est = estimate(shape, Setup(mode="train", dtype="bf16", **setup))  # type: ignore[arg-type]
    return sum(p.bytes for p in est.parts if p.name in ("weights", "gradients", "optimizer")) / 1e9


def zero_gb(stage: int) -> float:
    shape = ModelShape(source="--params 7.5B", params=7_500_000_000)
    est = estimate(shape, Setup(mode="train", dtype="fp16", gpus=64, zero=stage))
    return sum(p.bytes for p in est.parts if p.name in ("weights", "gradients", "optimizer")) / GB


def nf4_bits_per_weight() -> float:
    shape = cfg("meta-llama-3-8b")
    linear = sum(x.inputs * x.outputs * x.count for x in shape.linears)
    rest = shape.params - linear
    nbytes, _ = weight_bytes(shape, "nf4")
    return (nbytes - rest * 2) * 8 / linear


def gpt3_lora(rank: int) -> Callable[[Path], float]:
    def run(tmp: Path) -> float:
        # GPT-3 175B (Brown et al. Table 2.1): 96 layers, d_model 12288, 96 heads.
        return lora_params(gpt(tmp, 12288, 96, 96, 50257, 2048), rank, ("q", "v"))

    return run


# (id, what fit derives, published, relative tolerance, source)
ROWS: list[tuple[str, Callable[[], float], float, float, str]] = [
    # --- parameter counts: dense decoders
    (
        "llama-2-7b",
        lambda: total("llama-2-7b"),
        6_738_415_616,
        0,
        "peft print_trainable_parameters / keras-hub llama_7b_en 'params': 6738415616",
    ),
    (
        "llama-3-8b",
        lambda: total("meta-llama-3-8b"),
        8.03e9,
        0.001,
        "Hugging Face Hub, meta-llama/Meta-Llama-3-8B: 'Model size 8.03B params' (safetensors)",
    ),
    (
        "llama-3-70b",
        lambda: total("meta-llama-3-70b"),
        70.6e9,
        0.001,
        "Hugging Face Hub, meta-llama/Meta-Llama-3-70B: 'Model size 70.6B params'",
    ),
    (
        "mistral-7b",
        lambda: total("mistral-7b-v0.1"),
        7.24e9,
        0.001,
        "Hugging Face Hub, mistralai/Mistral-7B-v0.1: 'Model size 7.24B params'",
    ),
    (
        "phi-3-mini",
        lambda: total("phi-3-mini-4k-instruct"),
        3.8e9,
        0.015,
        "Abdin et al., Phi-3 Technical Report (arXiv:2404.14219) abstract: 'phi-3-mini, a 3.8 "
        "billion parameter language model'",
    ),
    (
        "gemma-7b non-embedding",
        lambda: non_embedding("gemma-7b"),
        7_751_248_896,
        0,
        "Gemma Team, arXiv:2403.08295, Table 2: 7B non-embedding parameters 7,751,248,896",
    ),
    (
        "gemma-2-9b non-embedding",
        lambda: non_embedding("gemma-2-9b"),
        8_324_201_984,
        0,
        "Gemma Team, arXiv:2408.00118, Table 2: 9B non-embedding parameters 8,324,201,984",
    ),
    (
        "starcoder (MQA)",
        lambda: total("starcoder"),
        15.5e9,
        0.005,
        "Li et al., StarCoder (arXiv:2305.06161) abstract: '15.5B parameter models'",
    ),
    ("gpt2", lambda: total("gpt2"), 124_439_808, 0, "GPT2LMHeadModel all params: 124439808"),
    (
        "bert-large",
        lambda: total("bert-large-uncased"),
        335_141_888,
        0,
        "keras-hub bert_large_en_uncased 'params': 335141888 (= HF BertModel)",
    ),
    # --- mixture of experts: total and active
    (
        "mixtral total",
        lambda: total("mixtral-8x7b-v0.1"),
        46.7e9,
        0.002,
        "Mistral AI, 'Mixtral of experts' (2023-12-11): '46.7B total parameters'",
    ),
    (
        "mixtral active",
        lambda: active("mixtral-8x7b-v0.1"),
        12.9e9,
        0.004,
        "same: 'only uses 12.9B parameters per token'",
    ),
    (
        "qwen1.5-moe total",
        lambda: total("qwen1.5-moe-a2.7b"),
        14.3e9,
        0.004,
        "Qwen/Qwen1.5-MoE-A2.7B model card: '14.3B parameters in total'",
    ),
    (
        "qwen1.5-moe active",
        lambda: active("qwen1.5-moe-a2.7b"),
        2.7e9,
        0.02,
        "same: '2.7B activated parameters during runtime' (embeddings included)",
    ),
    (
        "qwen3-30b-a3b total",
        lambda: total("qwen3-30b-a3b"),
        30.5e9,
        0.002,
        "Qwen/Qwen3-30B-A3B model card: 'Number of Parameters: 30.5B in total'",
    ),
    (
        "qwen3-30b-a3b active",
        lambda: active("qwen3-30b-a3b"),
        3.3e9,
        0.02,
        "same: '3.3B activated' (embeddings included)",
    ),
    (
        "qwen3-30b-a3b non-embedding",
        lambda: non_embedding("qwen3-30b-a3b"),
        29.9e9,
        0.002,
        "same: 'Number of Parameters (Non-Embedding): 29.9B'",
    ),
    (
        "deepseek-v2 total",
        lambda: total("deepseek-v2"),
        236e9,
        0.005,
        "DeepSeek-AI, DeepSeek-V2 (arXiv:2405.04434) abstract: '236B total parameters'",
    ),
    (
        "deepseek-v2 active",
        lambda: active_without_input_embedding("deepseek-v2"),
        21e9,
        0.02,
        "same: 'of which 21B are activated for each token' (DeepSeek leaves out the input "
        "embedding lookup)",
    ),
    (
        "deepseek-v2-lite total",
        lambda: total("deepseek-v2-lite"),
        15.7e9,
        0.004,
        "deepseek-ai/DeepSeek-V2-Lite model card: '15.7B parameters in total'",
    ),
    (
        "deepseek-v2-lite active",
        lambda: active_without_input_embedding("deepseek-v2-lite"),
        2.4e9,
        0.025,
        "same: '2.4B activated' (given to two digits: derived 2.45B, 2.1% over)",
    ),
    (
        "deepseek-v3 total",
        lambda: total("deepseek-v3"),
        671e9,
        0.001,
        "DeepSeek-AI, DeepSeek-V3 (arXiv:2412.19437) abstract: '671B total parameters' (the "
        "multi-token-prediction module's 14B are outside it)",
    ),
    (
        "deepseek-v3 active",
        lambda: active_without_input_embedding("deepseek-v3"),
        37e9,
        0.02,
        "same: 'with 37B activated for each token'",
    ),
    # --- encoder-decoders: decoder with cross-attention counted
    (
        "t5-base",
        lambda: total("t5-base"),
        220e6,
        0.015,
        "Raffel et al., T5 (arXiv:1910.10683) section 3.1.2: Base 'roughly 220 million'",
    ),
    (
        "t5-small",
        lambda: total("t5-small"),
        60e6,
        0.01,
        "same, section 3.7: Small '60 million parameters'",
    ),
    (
        "bart-large",
        lambda: total("bart-large"),
        400e6,
        0.02,
        "fairseq examples/bart README: bart.large '400M'",
    ),
    (
        "whisper-large-v2",
        lambda: total("whisper-large-v2"),
        1550e6,
        0.005,
        "Radford et al., Whisper (arXiv:2212.04356) Table 1: Large 1550M",
    ),
    ("whisper-base", lambda: total("whisper-base"), 74e6, 0.02, "same: Base 74M"),
    # --- KV cache per token (elements over all layers)
    (
        "opt-13b MHA KV",
        lambda: kv_elements("opt-13b") * 2,
        819_200,
        0,
        "Kwon et al., vLLM (arXiv:2309.06180) section 3: 800 KB a token = 2 x 5120 x 40 x 2 B",
    ),
    (
        "llama-2-7b 4096-token KV",
        lambda: kv_elements("llama-2-7b", 4096) * 2,
        2 * 1024**3,
        0,
        "NVIDIA, 'Mastering LLM Techniques: Inference Optimization': Llama 2 7B, 16-bit, batch "
        "1, 4096 tokens: 1 x 4096 x 2 x 32 x 4096 x 2 bytes, ~2 GB",
    ),
    (
        "falcon-7b MQA KV",
        lambda: kv_elements("falcon-7b"),
        4096,
        0,
        "Shazeer, MQA (arXiv:1911.02150): one K/V head; 2 x 32 layers x 1 x 64 = 4096",
    ),
    (
        "starcoder MQA KV",
        lambda: kv_elements("starcoder"),
        10_240,
        0,
        "MQA as above (StarCoder uses it): 2 x 40 layers x 1 x 128 = 10240",
    ),
    (
        "falcon-40b GQA KV (num_kv_heads)",
        lambda: kv_elements("falcon-40b"),
        61_440,
        0,
        "Ainslie et al., GQA (arXiv:2305.13245): 2 x 60 layers x 8 groups x 64 = 61440",
    ),
    (
        "llama-3-70b GQA KV",
        lambda: kv_elements("meta-llama-3-70b"),
        163_840,
        0,
        "GQA as above: 2 x 80 layers x 8 groups x 128 = 163840 (320 KiB in 16-bit)",
    ),
    (
        "deepseek-v2 MLA = GQA with 2.25 groups",
        lambda: (cfg("deepseek-v2").kv_per_layer or 0) / 256,
        2.25,
        0,
        "DeepSeek-V2 (arXiv:2405.04434) section 2.1.4/Table 1: MLA's (d_c + d_h^R) l = "
        "9/2 d_h l elements, 'equal to GQA with only 2.25 groups' (d_h = 128)",
    ),
    (
        "deepseek-v2 MLA KV",
        lambda: kv_elements("deepseek-v2"),
        34_560,
        0,
        "same, section 3.1.2: d_c = 512, d_h^R = 64, 60 layers: (512 + 64) x 60",
    ),
    (
        "deepseek-v3 MLA KV",
        lambda: kv_elements("deepseek-v3"),
        35_136,
        0,
        "DeepSeek-V3 (arXiv:2412.19437) section 4.2: d_c = 512, d_h^R = 64, 61 layers",
    ),
    (
        "mistral sliding window at 32k",
        lambda: 32768 * kv_elements("mistral-7b-v0.1") / kv_elements("mistral-7b-v0.1", 32768),
        8,
        0,
        "Jiang et al., Mistral 7B (arXiv:2310.06825) section 2: rolling buffer, W = 4096: 'on a "
        "sequence length of 32k tokens, this reduces the cache memory usage by 8x'",
    ),
    (
        "gemma-2 local/global KV at 8192",
        lambda: kv_elements("gemma-2-9b", 8192),
        1_056_964_608,
        0,
        "Gemma 2 (arXiv:2408.00118): sliding window 4096 in every other layer; 2 x 8 x 256 x "
        "(21 x 8192 + 21 x 4096)",
    ),
    # --- memory formulas
    (
        "ZeRO baseline",
        lambda: zero_gb(0),
        120.0,
        0.001,
        "Rajbhandari et al., ZeRO (arXiv:1910.02054) Figure 1: 7.5B, 64 GPUs, K = 12: 120 GB",
    ),
    ("ZeRO P_os", lambda: zero_gb(1), 31.4, 0.002, "same: 31.4 GB"),
    ("ZeRO P_os+g", lambda: zero_gb(2), 16.6, 0.003, "same: 16.6 GB"),
    ("ZeRO P_os+g+p", lambda: zero_gb(3), 1.9, 0.014, "same: 1.9 GB (1.875 rounded)"),
    (
        "ZeRO/Megatron 16 B/param",
        lambda: states_per_param(),
        16,
        0,
        "ZeRO section 3.1: 2 + 2 + 12 bytes per parameter with mixed-precision Adam",
    ),
    (
        "HF Trainer 18 B/param",
        lambda: states_per_param(layout="trainer"),
        18,
        0,
        "Hugging Face 'Model training anatomy': 6 (weights, mixed precision) + 4 (gradients) + "
        "8 (AdamW) bytes per parameter",
    ),
    (
        "HF Trainer 8-bit AdamW",
        lambda: states_per_param(layout="trainer", optimizer="8bit"),
        12,
        0,
        "same: 8-bit AdamW keeps 2 bytes of state: 6 + 4 + 2",
    ),
    (
        "QLoRA NF4 bits per weight",
        nf4_bits_per_weight,
        4.127,
        0.001,
        "Dettmers et al., QLoRA (arXiv:2305.14314) section 3: double quantisation, '0.127 bits "
        "per parameter' on top of 4",
    ),
]
TMP_ROWS: list[tuple[str, Callable[[Path], float], float, float, str]] = [
    ("megatron 39.1B", lambda t: gpt(t, 8192, 64, 48, 51200, 2048).params, 39.1e9, 0.002,
     "Narayanan et al., Megatron-LM (arXiv:2104.04473) Table 1: h 8192, 64 heads, 48 layers"),
    ("megatron 145.6B", lambda t: gpt(t, 12288, 96, 80, 51200, 2048).params, 145.6e9, 0.001,
     "same: h 12288, 96 heads, 80 layers"),
    ("megatron 1008.0B", lambda t: gpt(t, 25600, 160, 128, 51200, 2048).params, 1008.0e9, 0.001,
     "same: h 25600, 160 heads, 128 layers"),
    ("LoRA GPT-3 r=1 on q,v", gpt3_lora(1), 4.7e6, 0.01,
     "Hu et al., LoRA (arXiv:2106.09685) Table 4: GPT-3 175B, LoRA 4.7M trainable"),
    ("LoRA GPT-3 r=8 on q,v", gpt3_lora(8), 37.7e6, 0.002, "same: LoRA 37.7M"),
]  # fmt: skip


def test_the_truth_table_has_at_least_25_rows() -> None:
    assert len(ROWS) + len(TMP_ROWS) >= 25


@pytest.mark.parametrize(("what", "derived", "published", "tolerance", "source"), ROWS,
                         ids=[r[0] for r in ROWS])  # fmt: skip
def test_published_figure(
    what: str, derived: Callable[[], float], published: float, tolerance: float, source: str
) -> None:
    assert tolerance <= 0.025, "acceptance: within 2% (or the source's own rounding)"
    assert derived() == pytest.approx(published, rel=tolerance, abs=0), source


@pytest.mark.parametrize(("what", "derived", "published", "tolerance", "source"), TMP_ROWS,
                         ids=[r[0] for r in TMP_ROWS])  # fmt: skip
def test_published_figure_of_a_described_config(
    tmp_path: Path, what: str, derived: Callable[[Path], float], published: float,
    tolerance: float, source: str,
) -> None:  # fmt: skip
    assert derived(tmp_path) == pytest.approx(published, rel=tolerance, abs=0), source
