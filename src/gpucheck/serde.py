"""Dataclass <-> JSON-compatible dict conversion, strict on the way in.

Snapshots arrive from other machines and other gpucheck versions (`doctor --from`), so
reading one is parsing untrusted input: every field is type-checked and an error names
the exact path (`nvml.gpus[2].memory_total`). Unknown keys are ignored (a newer minor
schema may add fields); missing keys take the field's default (unknown).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from functools import cache
from typing import Any, TypeVar, Union

T = TypeVar("T")


class DecodeError(ValueError):
    """A value does not fit the dataclass it is read into."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '<root>'}: {message}")
        self.path = path


def to_dict(obj: Any) -> Any:
    """Convert dataclasses (recursively) into plain JSON-compatible values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def from_dict(cls: type[T], data: Any, path: str = "") -> T:
    """Build `cls` from `data`, raising DecodeError with the path of the first bad value."""
    return typing.cast(T, _decode(cls, data, path))


def _decode(tp: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise DecodeError(path, "must not be null")
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return _decode(non_none[0], value, path)
        for arg in non_none:
            try:
                return _decode(arg, value, path)
            except DecodeError:
                continue
        raise DecodeError(path, f"matches none of the allowed types ({_type_name(value)})")
    if tp is Any:
        return value
    if origin is list:
        if not isinstance(value, list):
            raise DecodeError(path, f"expected array, got {_type_name(value)}")
        (item_tp,) = typing.get_args(tp)
        return [_decode(item_tp, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise DecodeError(path, f"expected object, got {_type_name(value)}")
        key_tp, val_tp = typing.get_args(tp)
        if key_tp is not str:
            raise TypeError(f"only str-keyed dicts are supported, not {key_tp}")
        return {str(k): _decode(val_tp, v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise DecodeError(path, f"expected object, got {_type_name(value)}")
        hints = _hints(tp)
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(tp):
            sub = f"{path}.{f.name}" if path else f.name
            if f.name in value:
                kwargs[f.name] = _decode(hints[f.name], value[f.name], sub)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise DecodeError(sub, "is required")
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in tp)
            raise DecodeError(path, f"{value!r} is not one of: {allowed}") from None
    if tp is bool:
        if not isinstance(value, bool):
            raise DecodeError(path, f"expected boolean, got {_type_name(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DecodeError(path, f"expected integer, got {_type_name(value)}")
        if not -(2**63) <= value < 2**64:
            raise DecodeError(path, "integer out of range")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DecodeError(path, f"expected number, got {_type_name(value)}")
        if value != value or value in (float("inf"), float("-inf")):
            raise DecodeError(path, "expected a finite number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise DecodeError(path, f"expected string, got {_type_name(value)}")
        return value
    raise TypeError(f"unsupported type {tp!r} at {path}")
