"""Counts, sizes and dtypes as a person writes them on the command line (7B, 80GiB, bf16)."""

from __future__ import annotations

import re

# Bytes per element of each dtype `--dtype` accepts; int4 packs two values in a byte.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
    "nf4": 0.5,
    "fp4": 0.5,  # MXFP4 / NVFP4
}
MAX_PARAMS = 10**14  # 100 trillion: above any model built
MIN_BARE_COUNT = 10**6  # a count without a suffix below this is a forgotten suffix (7 -> 7B?)

# safetensors' dtype names (the header's "dtype") -> bytes per element.
SAFETENSORS_BYTES: dict[str, float] = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F4": 0.5,
    "F6_E2M3": 0.75,
    "F6_E3M2": 0.75,
}

_COUNT_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


class UnitError(ValueError):
    """A value the user wrote that is not a count, size or dtype: a one-line message."""


def parse_count(text: str, option: str = "--params") -> int:
    """'7B' -> 7_000_000_000 (decimal, as model sizes are named); '125M', '1.3e9', '6738415616'.

    A bare number is an exact count only from a million up: '7' is a forgotten suffix, not a
    model of seven parameters, and is refused."""
    raw = text.strip().replace("_", "").replace(",", "")
    match = re.fullmatch(r"(\d+(?:\.\d+)?(?:[eE]\d+)?)\s*([a-zA-Z]?)", raw)
    suffix = match.group(2).lower() if match else None
    if not match or suffix not in _COUNT_SUFFIX:
        raise UnitError(f"{option}: {text!r} is not a parameter count (examples: 7B, 125M, 1.3e9)")
    exact = float(match.group(1)) * _COUNT_SUFFIX[suffix]
    if exact > MAX_PARAMS:  # (1e999 reads as infinity, which no integer holds)
        raise UnitError(f"{option}: {text!r} is more than any model has (100T at most)")
    value = round(exact)
    if value <= 0:
        raise UnitError(f"{option}: {text!r} must be above zero")
    if not suffix and "e" not in raw.lower() and value < MIN_BARE_COUNT:
        raise UnitError(
            f"{option}: {text!r} has no suffix: write {raw}B or {raw}M (a bare number is an "
            "exact count, from 1000000 up)"
        )
    if value > MAX_PARAMS:
        raise UnitError(f"{option}: {text!r} is more than any model has (100T at most)")
    return value


def parse_size(text: str, option: str, require_unit: bool = False) -> int:
    """'80GiB' -> bytes, by the one reading every size option has (inputs.parse_size)."""
    from gpucheck.inputs import UserError
    from gpucheck.inputs import parse_size as size

    try:
        return size(text, option, require_unit)
    except UserError as exc:
        raise UnitError(str(exc)) from None


def parse_dtype(text: str, option: str = "--dtype") -> str:
    key = text.strip().lower()
    key = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}.get(key, key)
    key = {"q4": "int4", "4bit": "int4", "8bit": "int8"}.get(key, key)
    if key not in DTYPE_BYTES:
        raise UnitError(f"{option}: {text!r} is not one of {', '.join(DTYPE_BYTES)}")
    return key


def gib(value: float) -> str:
    return f"{value / 1024**3:.2f} GiB"


def human_count(n: int) -> str:
    for div, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if n >= div:
            return f"{n / div:.2f}{suffix}"
    return str(n)
