"""The JSON Schema of `gpucheck fit --json` (FitReport.to_dict: its keys are stable)."""

from __future__ import annotations

from typing import Any

from gpucheck.fit.report import FIT_SCHEMA_VERSION
from gpucheck.model.json_schema import document, version_property

COUNT = {"type": "integer", "minimum": 0}
MAYBE_INT = {"type": ["integer", "null"]}
MAYBE_TEXT = {"type": ["string", "null"]}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": list(properties), "properties": properties}


def fit_schema() -> dict[str, Any]:
    model = _object(
        {
            "source": {"type": "string"},
            "params": COUNT,
            "param_bytes": MAYBE_INT,
            "param_dtypes": {"type": "object", "additionalProperties": COUNT},
            "architecture": MAYBE_TEXT,
            "layers": MAYBE_INT,
            "hidden": MAYBE_INT,
            "heads": MAYBE_INT,
            "kv_heads": MAYBE_INT,
            "head_dim": MAYBE_INT,
            "intermediate": MAYBE_INT,
            "vocab": MAYBE_INT,
            "traced_activation_bytes": MAYBE_INT,
            "quantization": {
                "oneOf": [
                    {"type": "null"},
                    _object(
                        {
                            "method": {"type": "string"},
                            "dtype": {"type": "string"},
                            "bits_per_weight": {"type": "number", "minimum": 0},
                            "not_converted": {"type": "array", "items": {"type": "string"}},
                        }
                    ),
                ],
                "description": "the checkpoint's own quantization_config, as fit read it",
            },
            "attention_layers": {**MAYBE_INT, "description": "layers that keep a KV cache"},
            "mamba_layers": COUNT,
            "tower_params": {**COUNT, "description": "vision/audio towers, inside params"},
            "mtp_params": {**COUNT, "description": "multi-token-prediction modules, not in params"},
            "recurrent_state_elements": {
                **COUNT,
                "description": "Mamba layers' conv + SSM state of one sequence, any length",
            },
        }
    )
    setup = _object(
        {
            "mode": {"enum": ["train", "infer"]},
            "dtype": {"type": "string"},
            "batch": {"type": "integer", "minimum": 1},
            "seq": MAYBE_INT,
            "optimizer": MAYBE_TEXT,  # training only
            "master_weights": {"type": ["boolean", "null"]},
            "checkpointing": {"type": ["boolean", "null"]},
            "gpus": {"type": "integer", "minimum": 1},
            "zero": {"enum": [0, 1, 2, 3]},
            "flash_attention": {"type": "boolean"},
        }
    )
    part = _object({"name": {"type": "string"}, "bytes": COUNT, "how": {"type": "string"}})
    per_gpu = _object(
        {
            "parts": {"type": "array", "items": part},
            "total_bytes": COUNT,
            "per_sample_bytes": MAYBE_INT,
        }
    )
    verdict = _object(
        {
            "gpu": {"type": "string", "description": "the GPU judged against, as a label"},
            "index": MAYBE_INT,
            "memory_bytes": COUNT,
            "verdict": {"enum": ["fits", "tight", "may fit", "does not fit"]},
            "share": {"type": "number", "minimum": 0},
            "largest_batch": MAYBE_INT,
        }
    )
    strings = {"type": "array", "items": {"type": "string"}}
    body = _object(
        {
            "schema_version": version_property(FIT_SCHEMA_VERSION, "fit schema"),
            "tool": _object({"name": {"const": "gpucheck"}, "version": {"type": "string"}}),
            "model": model,
            "setup": setup,
            "per_gpu": per_gpu,
            "verdicts": {"type": "array", "items": verdict},
            "assumptions": strings,
            "notes": strings,
            "exit_code": {"enum": [0, 1]},
        }
    )
    return document(
        "fit",
        FIT_SCHEMA_VERSION,
        "gpucheck fit report",
        f"Output of `gpucheck fit --json`, fit schema {FIT_SCHEMA_VERSION}: the memory a model "
        "needs per GPU, and a verdict per GPU considered.",
        body,
    )
