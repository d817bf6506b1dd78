"""fit's training activations against a measurement: the bytes autograd really keeps in one
training forward (with the loss) of Hugging Face's own LlamaForCausalLM and
Qwen3MoeForCausalLM, random weights built from the fixture configs, on the CPU with torch 2.13
and transformers 5.23 (tests/support/venvs.py's torch-transformers environment). The estimate must be
within 15% of the measure; each figure is a real run, not the estimator."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from support import venvs

from gpucheck.fit.config import from_config
from gpucheck.fit.estimate import Setup, estimate

pytestmark = [pytest.mark.frameworks, pytest.mark.slow]
FIXTURES = REPO / "tests" / "fixtures" / "fit"
SCRIPT = FIXTURES / "scripts" / "hf_saved_bytes.py"


@pytest.fixture(scope="module")
def hf_python() -> Path:
    return venvs.require("torch-transformers")


def _measure(python: Path, model: str, attn: str, dtype: str, batch: int, seq: int) -> int:
    config = FIXTURES / model / "config.json"
    proc = subprocess.run(
        [str(python), str(SCRIPT), str(config), attn, dtype, str(batch), str(seq)],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    return int(json.loads(proc.stdout.strip().splitlines()[-1])["saved_bytes"])


@pytest.mark.parametrize(
    ("model", "attn", "dtype", "batch", "seq"),
    [
        ("tiny-llama-measure", "sdpa", "bfloat16", 2, 512),
        ("tiny-llama-measure", "eager", "bfloat16", 2, 512),
        ("tiny-llama-measure", "sdpa", "float32", 1, 256),
        ("tiny-llama-measure", "eager", "float32", 1, 256),
        ("tiny-qwen3-moe-measure", "sdpa", "bfloat16", 2, 512),
        ("tiny-qwen3-moe-measure", "eager", "bfloat16", 2, 512),
    ],
)
def test_training_activations_match_the_real_hugging_face_model(
    hf_python: Path, model: str, attn: str, dtype: str, batch: int, seq: int
) -> None:
    measured = _measure(hf_python, model, attn, dtype, batch, seq)
    shape = from_config(FIXTURES / model / "config.json")
    setup = Setup(
        mode="train", dtype={"bfloat16": "bf16", "float32": "fp32"}[dtype], batch=batch,
        seq=seq, flash_attention=attn != "eager",
    )  # fmt: skip
    activations = next(p for p in estimate(shape, setup).parts if p.name == "activations")
    assert activations.bytes == pytest.approx(measured, rel=0.15)


def test_eager_attention_keeps_the_fp32_softmax_that_sdpa_does_not(hf_python: Path) -> None:
    # The measured difference between eager and SDPA is the s x s scores: per layer 4 B (fp32
    # softmax) + 2 B (its bf16 copy) per head and position pair, minus SDPA's Q/K/V layout.
    sdpa = _measure(hf_python, "tiny-llama-measure", "sdpa", "bfloat16", 1, 512)
    eager = _measure(hf_python, "tiny-llama-measure", "eager", "bfloat16", 1, 512)
    scores = 4 * 8 * 512 * 512 * (4 + 2)  # 4 layers x 8 heads x 512^2 x 6 B
    assert eager - sdpa == pytest.approx(scores, rel=0.05)
