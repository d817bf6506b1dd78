"""Finding the catalog's messages in a text: every pattern compiled once per catalog, each
searched over the whole text (one C-speed scan per alternative, not one call per line), and
each hit mapped back to its line."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator

from msgspec import Struct

from gpucheck.compat.messages import Message, MessageCatalog


class Hit(Struct, frozen=True):
    """One line a message matched: its number (from 1), the line, and the matched text."""

    line: int
    text: str
    matched: str


class Match(Struct):
    """A message of the catalog and every line it matched, in order."""

    message: Message
    hits: list[Hit]

    @property
    def first_line(self) -> int:
        return self.hits[0].line

    @property
    def specificity(self) -> int:
        """How much of a line the message pinned down: the longest text it matched."""
        return max(len(hit.matched) for hit in self.hits)


class Lines:
    """A text and where each of its lines starts."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def number(self, offset: int) -> int:
        """The line (from 1) holding character `offset`."""
        return bisect_right(self.starts, offset)

    def line(self, number: int) -> str:
        start = self.starts[number - 1]
        end = self.starts[number] - 1 if number < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r")

    def __len__(self) -> int:
        """How many lines (a final newline ends the last line, it starts none)."""
        return len(self.starts) - self.text.endswith("\n") if self.text else 0


def alternatives(pattern: str) -> list[str]:
    """A pattern's top-level alternatives (`a|b(c|d)` -> `a`, `b(c|d)`), each still a whole
    pattern: re searches a pattern that starts with a literal fast, an alternation of them
    slowly (ten times slower over a large log). Leading inline flags stay with each one."""
    flags = re.match(r"\(\?[aiLmsux]+\)", pattern)
    prefix = flags.group() if flags else ""
    body = pattern[len(prefix) :]
    parts, start, depth, i, in_class = [], 0, 0, 0, False
    while i < len(body):
        char = body[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if body[i + 1 : i + 2] == "]":  # `[]...]`: the first ] is a member
                i += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return [prefix + part for part in parts]


class Matcher:
    """The catalog's patterns, compiled once (each top-level alternative on its own)."""

    def __init__(self, catalog: MessageCatalog) -> None:
        # MULTILINE: a pattern's ^ and $ are a line's start and end, as the catalog says.
        self.compiled = [
            (m, [re.compile(part, re.MULTILINE) for part in alternatives(m.pattern)])
            for m in catalog.messages
        ]

    def matches(self, lines: Lines) -> list[Match]:
        found = []
        for message, patterns in self.compiled:
            by_line: dict[int, Hit] = {}
            for pattern in patterns:
                for hit in _hits(pattern, lines):
                    by_line.setdefault(hit.line, hit)
            if by_line:
                found.append(Match(message, [by_line[n] for n in sorted(by_line)]))
        return found


def _hits(pattern: re.Pattern[str], lines: Lines) -> Iterator[Hit]:
    """Each line `pattern` matches within the line, once. A hit of the whole-text scan that
    spans lines (a \\s or [^x] crossing a newline) only says where to look: each line it
    spans is searched on its own."""
    done = 0  # the last line searched
    for found in pattern.finditer(lines.text):
        first = lines.number(found.start())
        last = lines.number(max(found.end() - 1, found.start()))
        if first == last:
            if first > done:
                done = first
                yield Hit(first, lines.line(first), found.group())
            continue
        for number in range(max(first, done + 1), last + 1):
            done = number
            line = lines.line(number)
            inside = pattern.search(line)
            if inside is not None:
                yield Hit(number, line, inside.group())
