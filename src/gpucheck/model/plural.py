"""Counted nouns in sentences: "1 step", "2 steps"; the one helper every report and command
uses, so that no message says "1 steps" or "1 are"."""

from __future__ import annotations

# Nouns whose plural is not the singular plus "s".
_IRREGULAR = {"process": "processes", "is": "are", "was": "were", "has": "have", "this": "these"}


def plural(count: int, singular: str, many: str | None = None) -> str:
    """`singular` or its plural (`many`, else a known irregular one, else +s) for `count`:
    the word alone, so that a sentence places the number where it reads well."""
    if count == 1:
        return singular
    return many or _IRREGULAR.get(singular) or f"{singular}s"


def counted(count: int, singular: str, many: str | None = None) -> str:
    """The number and its noun: "1 step", "0 steps", "3 processes"."""
    return f"{count} {plural(count, singular, many)}"
