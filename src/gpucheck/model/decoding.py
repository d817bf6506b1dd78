"""Typed decoding and encoding of the model's Structs, by msgspec.

Snapshots arrive from other machines and other gpucheck versions (`doctor --from`), so
reading one is parsing untrusted input: every field is type-checked, and the first bad value
is reported as one line with its path (`nvml.gpus[2].memory_total: expected integer, got
string`). Unknown keys are ignored (a newer minor schema may add fields); missing keys take
the field's default (unknown).

msgspec does in C what a hand-written walker did in Python (decoding a large snapshot is
about 20x faster, and its import is cheap), and it generates the JSON Schema from the
same types (report/schema.py), so decoder and schema cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")


class DecodeError(ValueError):
    """A value does not fit the dataclass it is read into; the message is one line."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '<root>'}: {message}")
        self.path = path


_TYPE_NAMES = {
    "int": "integer",
    "str": "string",
    "float": "number",
    "bool": "boolean",
    "array": "array",
    "object": "object",
    "null": "null",
}
# (Patterns as text: re compiles one on first use, not at every start-up.)
_AT = r"(?s)^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$"


def _type_text(names: str) -> str:
    wanted = [n.strip(" `") for n in names.split("|")]
    words = [_TYPE_NAMES.get(n, n) for n in wanted if n != "null"] or ["null"]
    return " or ".join(words)


def _readable(error: msgspec.ValidationError) -> DecodeError:
    match = re.match(_AT, str(error))
    what = match.group("what") if match else str(error)
    path = (match.group("path") or "").lstrip(".") if match else ""
    if m := re.match(r"Expected `([^`]*)`, got `([^`]*)`", what):
        return DecodeError(path, f"expected {_type_text(m.group(1))}, got {_type_text(m.group(2))}")
    if m := re.match(r"Object missing required field `([^`]*)`", what):
        return DecodeError(f"{path}.{m.group(1)}" if path else m.group(1), "is required")
    if what.startswith("Expected `int` >= 0"):  # types.Count: a count or size
        return DecodeError(path, "must not be negative (a count or size)")
    if re.match(r"Expected `(int|float)` [<>]=?", what) or what.startswith("Number out of range"):
        number = "integer" if "int" in what else "number"
        return DecodeError(path, f"{number} out of range")
    if m := re.match(r"Invalid enum value (.*)", what):
        return DecodeError(path, f"{m.group(1)} is not an allowed value")
    return DecodeError(path, what[:1].lower() + what[1:])


def from_dict(cls: type[T], data: Any) -> T:
    """Build `cls` from plain JSON values, raising DecodeError at the first bad value."""
    try:
        return msgspec.convert(data, type=cls, strict=True)
    except msgspec.ValidationError as exc:
        raise _readable(exc) from None


def refuse_repeats(path: str, items: Sequence[Any], *keys: str) -> None:
    """DecodeError naming the first of `items` whose `key` repeats an earlier one's: one thing
    listed twice (a GPU by its index or UUID) would be judged as two, or as none."""
    for key in keys:
        seen: dict[object, int] = {}
        for position, item in enumerate(items):
            value = getattr(item, key)
            if value is None or value == "":
                continue
            if value in seen:
                raise DecodeError(
                    f"{path}[{position}].{key}",
                    f"{value!r} is listed twice (also {path}[{seen[value]}]): one entry each",
                )
            seen[value] = position


def from_json(cls: type[T], data: bytes) -> T:
    """Parse and build `cls` in one pass. Raises DecodeError, or ValueError for bad JSON."""
    try:
        return msgspec.json.decode(data, type=cls, strict=True)
    except msgspec.ValidationError as exc:
        raise _readable(exc) from None
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None


def to_dict(obj: Any) -> Any:
    """Structs and dataclasses (recursively) and enums as plain JSON-compatible values, every
    field present. (msgspec.to_builtins reads a dataclass's instance dict, in which msgspec's
    own decoding leaves out fields at their class default: walk dataclasses by their fields.)"""
    if hasattr(type(obj), "__dataclass_fields__"):  # a dataclass instance (bench, fit)
        # Imported here: the doctor's path has no dataclass, and the start-up benchmark's
        # `doctor --from --json` row (benchmarks/startup.py) does not pay for the module.
        import dataclasses

        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return msgspec.to_builtins(obj)


# What JSON may hold raw but a terminal must not see: DEL, the C1 controls (0x9b starts an
# escape sequence on some terminals), the bidi controls and the line separators. (msgspec
# already escapes C0.) Raw, they can only be inside a string, where \uXXXX reads the same.
_TERMINAL_UNSAFE = "[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"


def to_json(obj: Any, indent: int = 2) -> bytes:
    """JSON text of a model object, indented for people and diffs; a text value's control
    characters written as escapes, so a terminal showing the JSON executes none."""
    return escape_unsafe(msgspec.json.format(msgspec.json.encode(obj), indent=indent))


def escape_unsafe(data: bytes) -> bytes:
    """JSON text with the characters msgspec leaves raw (DEL, C1, bidi controls, line
    separators) written as \\u escapes: the same value, safe to show on a terminal."""
    if data.isascii() and b"\x7f" not in data:
        return data
    return re.sub(
        _TERMINAL_UNSAFE, lambda m: f"\\u{ord(m.group()):04x}", data.decode("utf-8")
    ).encode("utf-8")
