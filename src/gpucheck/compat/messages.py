"""The message catalog (compat/messages.toml): error texts people paste, what each means and
what fixes it, each entry citing the page it was read from. `gpucheck explain` matches them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from msgspec import Struct

from gpucheck.compat.rows import CompatError, Row, Rows
from gpucheck.model.fix import Step, StepKind, Tool
from gpucheck.model.layers import Layer

SEVERITIES = ("fail", "warn", "info")
LAYERS = ("system", "driver", "gpus", "cuda", "cudnn", "frameworks", "extensions")
DECISIONS = ("arch", "driver", "symbol", "wsl")  # the fact joins explain knows (explain/facts.py)


class Message(Struct, frozen=True):
    id: str
    layer: str
    severity: str
    pattern: str
    title: str
    cause: str
    fix: str
    step: str
    command: str | None
    decide: str | None
    examples: tuple[str, ...]
    source: str
    # true where `examples` are lines written in the message's usual format, not quoted from
    # the source or any thread: no public page with the line verbatim was read. Such an entry
    # still cites the page its meaning and fix were read from.
    constructed: bool = False

    @property
    def section(self) -> Layer:
        return Layer(self.layer)

    @property
    def step_kind(self) -> StepKind:
        return StepKind(self.step)

    def fix_step(self) -> Step:
        """The catalog's fix as a step (what its command is for, by its first word)."""
        tool = None
        if self.command is not None:
            first = self.command.split(maxsplit=1)[0] if self.command.strip() else ""
            tool = {"pip": Tool.PIP, "export": Tool.ENV, "unset": Tool.ENV}.get(first, Tool.SHELL)
        return Step(self.step_kind, self.fix, self.command, tool, layer=self.section)


def _one_of(row: Row, key: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise CompatError(f"{row.where}: {key} = {value!r} is not one of {', '.join(allowed)}")


def _message(row: Row) -> Message:
    message = row.struct(Message)
    _one_of(row, "layer", message.layer, LAYERS)
    _one_of(row, "severity", message.severity, SEVERITIES)
    _one_of(row, "step", message.step, tuple(kind.value for kind in StepKind))
    _one_of(row, "decide", message.decide, DECISIONS)
    if not message.examples:
        raise CompatError(f"{row.where}: examples must hold at least one line")
    try:
        re.compile(message.pattern)
    except re.error as exc:
        raise CompatError(f"{row.where}: pattern is not a regular expression: {exc}") from None
    return message


class MessageCatalog(Struct):
    messages: list[Message]
    data_as_of: str = ""

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> MessageCatalog:
        rows = Rows(path, data)
        messages = [_message(r) for r in rows.table("message")]
        seen: set[str] = set()
        for message in messages:
            if message.id in seen:
                raise CompatError(f"{path.name}: message id {message.id!r} appears twice")
            seen.add(message.id)
        return cls(messages, rows.text("data_as_of"))

    def get(self, message_id: str) -> Message | None:
        return next((m for m in self.messages if m.id == message_id), None)
