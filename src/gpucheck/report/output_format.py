"""One way to choose an output: every command's formats are Formats (a name, and a writer of
the command's result), each feature's in one table by name; --format NAME (and --json, the
same as --format json) picks one by choose_format; every JSON output is written by write_json."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Generic, Protocol, TypeVar

from gpucheck.inputs import UserError

ResultT = TypeVar("ResultT", contravariant=True)
Result = TypeVar("Result")


class Format(Protocol[ResultT]):
    """One output of a command's result: `name` is what --format takes; `write` renders the
    result to a stream (`verbose`: -v, for the formats that show more with it)."""

    @property
    def name(self) -> str: ...

    def write(self, result: ResultT, stream: IO[str], verbose: bool = False) -> None: ...


class FunctionFormat(Generic[Result]):
    """A format that is one function: `render(result, stream)`, or with `verbose` too."""

    def __init__(
        self,
        name: str,
        render: Callable[[Result, IO[str]], object] | Callable[[Result, IO[str], bool], object],
        takes_verbose: bool = False,
    ) -> None:
        self.name = name
        self._render = render
        self._takes_verbose = takes_verbose

    def write(self, result: Result, stream: IO[str], verbose: bool = False) -> None:
        if self._takes_verbose:
            self._render(result, stream, verbose)  # type: ignore[call-arg]
        else:
            self._render(result, stream)  # type: ignore[call-arg]


def format_table(*formats: Format[Result]) -> dict[str, Format[Result]]:
    """A feature's formats by name, in the order --help lists them (the first is the default)."""
    return {f.name: f for f in formats}


def choose_format(
    table: dict[str, Format[Result]], name: str | None, json_out: bool = False
) -> Format[Result]:
    """The format --format NAME (or --json, the same as --format json) asks for; the default
    (the table's first) without either. A name not in the table, or --json with another
    --format, is a UserError."""
    default = next(iter(table))
    if json_out and name not in (None, default, "json"):
        raise UserError(f"--json and --format {name} ask for two formats: give one")
    chosen = "json" if json_out else (name or default)
    if chosen not in table:
        raise UserError(f"--format: {chosen!r} is not one of {', '.join(table)}")
    return table[chosen]


def write_json(data: object, stream: IO[str], indent: int | None = 2) -> None:
    """The one JSON writer (msgspec) of the commands' JSON output: `data` (a model object or
    plain data) indented by `indent` (None: compact, one line), and a newline."""
    import msgspec

    from gpucheck.model.decoding import escape_unsafe

    encoded = msgspec.json.encode(data)
    if indent is not None:
        encoded = msgspec.json.format(encoded, indent=indent)
    stream.write(escape_unsafe(encoded).decode("utf-8"))
    stream.write("\n")
