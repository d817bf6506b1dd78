"""Finding the message catalog's entries and NVIDIA's Xids in a text: one scan per pattern
alternative, but only for those whose leading literal (its anchor) the text holds at all, a
substring test at C speed; all Xid lines in one scan, each read through the Xid catalog for its
number. Every hit is mapped back to its line. Shared by explain (a pasted text) and the doctor's
checks (the kernel log's lines, a deep probe's error text): one matcher, no second copy of the
patterns."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING

from msgspec import Struct

from gpucheck.compat.messages import Message, MessageCatalog
from gpucheck.compat.xids import XID_LINE, XidCatalog

if TYPE_CHECKING:
    from gpucheck.compat import Compat


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


_META = frozenset(".^$*+?{}[]|()")
_MIN_ANCHOR = 3  # a shorter leading literal would be in almost any text: no prefilter then
_XID_NUMBER = re.compile(r"(\d{1,4}),$")
_OPTIONAL_LEAD = re.compile(r"^\^?(?:\[[^\]]*\]|\\s)[*?]|^\^")


def anchor(pattern: str) -> tuple[str, bool]:
    """The literal text every match of `pattern` (one alternative) starts with, and whether it
    is compared ignoring case ((?i)): `NVRM: Xid \\(` -> `NVRM: Xid (`; `abc?d` -> `ab`."""
    flags = re.match(r"\(\?([aiLmsux]+)\)", pattern)
    ignore_case = bool(flags and "i" in flags.group(1))
    body = pattern[flags.end() :] if flags else pattern
    # A line start and optional leading blanks (`^[ \t]*`, `^\s*`) come before the literal.
    body = _OPTIONAL_LEAD.sub("", body, count=1)
    literal: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            escaped = body[i + 1 : i + 2]
            if not escaped or escaped.isalnum():  # \d, \s, \b ...: a class, not a literal
                break
            literal.append(escaped)
            i += 2
            continue
        if char in _META:
            if char in "?*{" and literal:  # the last character may be absent
                literal.pop()
            break
        literal.append(char)
        i += 1
    text = "".join(literal)
    return (text.lower() if ignore_case else text), ignore_case


class _Scan(Struct, frozen=True):
    message: Message
    pattern: re.Pattern[str]
    anchor: str  # "" where there is none: always scanned
    ignore_case: bool


class Matcher:
    """The catalog's patterns, compiled once (each top-level alternative on its own, with its
    anchor), and the Xid catalog's one line pattern."""

    def __init__(self, catalog: MessageCatalog, xids: XidCatalog | None = None) -> None:
        self.xids = xids
        self.scans: list[_Scan] = []
        entries = [(m, m.pattern) for m in catalog.messages]
        if xids is not None:
            entries += [(xids.message(code), also) for code, also in xids.others()]
        for message, pattern in entries:
            for part in alternatives(pattern):
                # MULTILINE: a pattern's ^ and $ are a line's start and end, as the catalog says.
                literal, ignore_case = anchor(part)
                compiled = re.compile(part, re.MULTILINE)
                literal = literal if len(literal) >= _MIN_ANCHOR else ""
                self.scans.append(_Scan(message, compiled, literal, ignore_case))
        self.xid_line = re.compile(XID_LINE)
        self._xid_messages: dict[int, Message] = {}

    def matches(self, lines: Lines) -> list[Match]:
        text, lowered = lines.text, ""
        found: dict[str, tuple[Message, dict[int, Hit]]] = {}
        for scan in self.scans:
            if scan.anchor:
                if scan.ignore_case and not lowered:
                    lowered = text.lower()
                if scan.anchor not in (lowered if scan.ignore_case else text):
                    continue
            for hit in _hits(scan.pattern, lines):
                found.setdefault(scan.message.id, (scan.message, {}))[1].setdefault(hit.line, hit)
        if self.xids is not None and "NVRM: Xid (" in text:
            for hit in _hits(self.xid_line, lines):
                number = _XID_NUMBER.search(hit.matched)
                if number is None:
                    continue
                message = self.xid_message(int(number.group(1)))
                found.setdefault(message.id, (message, {}))[1].setdefault(hit.line, hit)
        return [Match(message, [hits[n] for n in sorted(hits)]) for message, hits in found.values()]

    def xid_message(self, code: int) -> Message:
        assert self.xids is not None
        if code not in self._xid_messages:
            self._xid_messages[code] = self.xids.message(code)
        return self._xid_messages[code]


# Each compat data's matcher, compiled once per process (the catalogs kept, so their ids stay
# their own).
_MATCHERS: dict[tuple[int, int], tuple[MessageCatalog, XidCatalog, Matcher]] = {}


def matcher(compat: Compat) -> Matcher:
    """The compat data's message and Xid catalogs, compiled once."""
    catalog, xids = compat.messages, compat.xids
    key = (id(catalog), id(xids))
    if key not in _MATCHERS:
        _MATCHERS[key] = (catalog, xids, Matcher(catalog, xids))
    return _MATCHERS[key][2]


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
