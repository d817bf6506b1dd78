"""Typed access to the rows of a compat TOML file, with errors that name file, table and row."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import msgspec
from packaging.version import InvalidVersion, Version

S = TypeVar("S", bound=msgspec.Struct)


class _Released(Protocol):
    @property
    def version(self) -> Version: ...


R = TypeVar("R", bound=_Released)


class CompatError(ValueError):
    """The compat data is malformed: the message names the file and row."""


def parse_version(text: str) -> Version | None:
    """Versions as drivers and packages print them; None when it is not a version at all."""
    text = text.strip()
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


class Releases(Generic[R]):
    """A topic whose rows are releases, kept oldest first (as its lookups assume)."""

    def __init__(self, releases: list[R]) -> None:
        self.releases = sorted(releases, key=lambda r: r.version)


class Rows:
    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    def table(self, name: str) -> list[Row]:
        rows = self.data.get(name, [])
        if not isinstance(rows, list):
            raise CompatError(f"{self.path.name}: [[{name}]] must be an array of tables")
        return [Row(self.path, name, i, r) for i, r in enumerate(rows)]

    def text(self, key: str, default: str = "") -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str):
            raise CompatError(f"{self.path.name}: {key} must be a string")
        return value


class Row:
    def __init__(self, path: Path, table: str, index: int, data: Any) -> None:
        if not isinstance(data, dict):
            raise CompatError(f"{path.name}: {table}[{index}] is not a table")
        self.path = path
        self.where = f"{path.name}: {table}[{index}]"
        self.data = data
        if not isinstance(data.get("source"), str) or not data["source"].strip():
            raise CompatError(f"{self.where}: every row needs a source")

    def _bad(self, key: str, what: str) -> CompatError:
        return CompatError(f"{self.where}: {key} must be {what}")

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def opt_text(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, str):
            raise self._bad(key, "a string")
        return value or None

    def text_list(self, key: str, required: bool = True) -> list[str]:
        value = self.data.get(key, None if required else [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(key, "a list of strings")
        return value

    def opt_positive(self, key: str) -> float | None:
        """A positive number (int or float), or None when the key is absent."""
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise self._bad(key, "a positive number")
        return float(value)

    def subrows(self, key: str) -> list[Row]:
        """Rows of an array of tables nested in this row (`[[gpu.spec]]`); each needs a source."""
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise self._bad(key, "an array of tables")
        table = f"{self.where.split(': ', 1)[1]}.{key}"
        return [Row(self.path, table, i, r) for i, r in enumerate(value)]

    def flag(self, key: str) -> bool:
        """true or false; absent: false."""
        value = self.data.get(key, False)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false")
        return value

    def integer_list(self, key: str) -> list[int]:
        """A list of integers; absent: empty."""
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise self._bad(key, "a list of integers")
        return value

    def integer(self, key: str) -> int:
        value = self.data.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._bad(key, "an integer")
        return value

    def text_map(self, key: str) -> dict[str, str]:
        value = self.data.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self._bad(key, "a table of strings")
        return {str(k): v for k, v in value.items()}

    def version(self, key: str) -> Version:
        value = self.opt_version(key)
        if value is None:
            raise CompatError(f"{self.where}: {key} is required")
        return value

    def opt_version(self, key: str) -> Version | None:
        value = self.data.get(key, "")
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        if not value.strip():
            return None
        parsed = parse_version(value)
        if parsed is None:
            raise CompatError(f"{self.where}: {key} = {value!r} is not a version")
        return parsed

    def struct(self, kind: type[S], optional: Collection[str] = (), **given: Any) -> S:
        """This row as `kind`: every field not `given` is read by its type, under its own name
        (a list named in `optional` may be absent, and is then empty)."""
        values = dict(given)
        for name, read in _readers(kind):
            if name not in values:
                values[name] = read(self, name, name not in optional)
        return kind(**values)


# How a field of each type is read: (row, key, required) -> value. Keyed by the annotation as
# written (the compat modules' annotations are never evaluated, and evaluating them to types
# would cost more than reading every row).
_READERS: dict[str, Callable[[Row, str, bool], Any]] = {
    "str": lambda r, k, _: r.text(k),
    "str | None": lambda r, k, _: r.opt_text(k),
    "int": lambda r, k, _: r.integer(k),
    "bool": lambda r, k, _: r.flag(k),
    "tuple[int, ...]": lambda r, k, _: tuple(r.integer_list(k)),
    "Version": lambda r, k, _: r.version(k),
    "Version | None": lambda r, k, _: r.opt_version(k),
    "tuple[str, ...]": lambda r, k, required: tuple(r.text_list(k, required)),
    "dict[str, str]": lambda r, k, _: r.text_map(k),
}


@functools.cache
def _readers(kind: type[msgspec.Struct]) -> list[tuple[str, Callable[[Row, str, bool], Any]]]:
    """(field, its reader) for each field of `kind`, worked out once per kind."""
    written: dict[str, object] = {}
    for cls in reversed(kind.__mro__):
        written.update(getattr(cls, "__annotations__", {}))
    found = []
    for name in kind.__struct_fields__:
        read = _READERS.get(str(written.get(name)))
        found.append((name, read or _no_reader(f"{kind.__name__}.{name}: no reader")))
    return found


def _no_reader(problem: str) -> Callable[[Row, str, bool], Any]:
    def read(row: Row, key: str, required: bool) -> Any:
        raise TypeError(problem)  # a field the caller must give

    return read
