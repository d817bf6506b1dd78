"""The JSON Schema of `gpucheck compat ... --json`: one answer per question (torch, tensorflow,
jax, cudnn, driver, cuda, gpu; `--about`). Written out here, since the answers are built as
dictionaries: the keys each question always gives, and `sources` (every row cited)."""

from __future__ import annotations

from typing import Any

from gpucheck.model.json_schema import document

# The answers carry no version field of their own: this schema describes the first.
COMPAT_SCHEMA_VERSION = "1.0"

TEXT = {"type": "string"}
MAYBE_TEXT = {"type": ["string", "null"]}
TEXTS = {"type": "array", "items": TEXT}
MAYBE_TEXTS = {"type": ["array", "null"], "items": TEXT}
MAJORS = {"type": "array", "items": {"type": "integer"}}
PICK = {
    "type": ["object", "null"],
    "required": ["version", "cuda", "install"],
    "properties": {"version": TEXT, "cuda": MAYBE_TEXT, "install": TEXT, "cudnn": TEXT},
}
DRIVERS_BY_MAJOR = {"type": "object", "additionalProperties": TEXT}


def _answer(about: str, properties: dict[str, Any], optional: tuple[str, ...] = ()) -> Any:
    return {
        "description": about,
        "type": "object",
        "required": [p for p in properties if p not in optional],
        "properties": properties,
    }


def compat_schema() -> dict[str, Any]:
    sources = {"sources": TEXTS}
    answers = {
        "torch": _answer(
            "gpucheck compat torch VERSION",
            {
                "version": TEXT,
                "known": {"type": "boolean"},
                "cuda_variants": MAYBE_TEXTS,
                "python_min": MAYBE_TEXT,
                "python_max": MAYBE_TEXT,
                "default_pypi_cuda": MAYBE_TEXT,
                "rocm_variants": MAYBE_TEXTS,
                "architectures": {
                    "type": ["object", "null"],
                    "additionalProperties": {
                        "type": ["object", "null"],
                        "required": ["sm", "ptx"],
                        "properties": {"sm": TEXTS, "ptx": TEXTS},
                    },
                },
                "cuda": MAYBE_TEXT,
                **sources,
            },
        ),
        "tensorflow": _answer(
            "gpucheck compat tensorflow VERSION",
            {
                "version": TEXT,
                "cuda": MAYBE_TEXT,
                "cudnn": MAYBE_TEXT,
                "python_min": MAYBE_TEXT,
                "python_max": MAYBE_TEXT,
                "windows_native_gpu": {"type": ["boolean", "null"]},
                "and_cuda_requires": MAYBE_TEXTS,
                "install": MAYBE_TEXT,
                **sources,
            },
        ),
        "jax": _answer(
            "gpucheck compat jax VERSION",
            {
                "version": TEXT,
                "row": TEXT,
                "cuda_min": MAYBE_TEXT,
                "cudnn_min": MAYBE_TEXT,
                "python_min": MAYBE_TEXT,
                "cuda_majors": TEXTS,
                "packages": TEXTS,
                **sources,
            },
        ),
        "cudnn": _answer(
            "gpucheck compat cudnn VERSION",
            {
                "version": TEXT,
                "answered_by": TEXT,
                "cuda": TEXTS,
                "cuda_majors": MAJORS,
                "min_driver_linux": DRIVERS_BY_MAJOR,
                "min_driver_windows": DRIVERS_BY_MAJOR,
                "compute_capabilities": MAYBE_TEXTS,
                **sources,
            },
        ),
        "driver": _answer(
            "gpucheck compat driver VERSION [--windows]",
            {
                "driver": TEXT,
                "os": {"enum": ["linux", "windows"]},
                "max_cuda": MAYBE_TEXT,
                "minor_compat_majors": MAJORS,
                "newest_torch": PICK,
                "newest_tensorflow": PICK,
                **sources,
            },
        ),
        "cuda": _answer(
            "gpucheck compat cuda VERSION",
            {
                "version": TEXT,
                "release": TEXT,
                "min_driver_linux": MAYBE_TEXT,
                "min_driver_windows": MAYBE_TEXT,
                "minor_compat_min_driver_linux": MAYBE_TEXT,
                "min_compute_capability": MAYBE_TEXT,
                "max_compute_capability": MAYBE_TEXT,
                "cuda": TEXT,
                **sources,
            },
        ),
        "gpu": _answer(
            "gpucheck compat gpu NAME",
            {
                "name": TEXT,
                "compute_capability": TEXT,
                "architecture": MAYBE_TEXT,
                "segment": MAYBE_TEXT,
                "newest_cuda": MAYBE_TEXT,
                "newest_torch": PICK,
                "newest_tensorflow": PICK,
                **sources,
            },
        ),
        "about": _answer(
            "gpucheck compat --about",
            {
                "data_as_of": MAYBE_TEXT,
                "folders": TEXTS,
                "files": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "required": ["data_as_of", "rows"],
                        "properties": {
                            "data_as_of": TEXT,
                            "rows": {
                                "type": "object",
                                "additionalProperties": {"type": "integer", "minimum": 0},
                            },
                        },
                    },
                },
                "distinct_sources": {"type": "integer", "minimum": 0},
            },
        ),
    }
    return document(
        "compat",
        COMPAT_SCHEMA_VERSION,
        "gpucheck compat answer",
        "Output of `gpucheck compat QUESTION --json`: one answer, by question (see $defs); every "
        "answer but --about lists the sources it rests on.",
        {"anyOf": [{"$ref": f"#/$defs/{name}"} for name in answers], "$defs": answers},
    )
