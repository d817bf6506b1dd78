"""Text from a snapshot (or any input) is data, never code: the one quoting of a value that
goes into a fix's shell command.

A host name, an interpreter's path, a package's name or version, a library folder: any of
them may come from another machine's file and hold `$(...)`, backticks, `;`, quotes or a line
break. Every command a fix gives is built from an argument list (`join`) or, where the shell's
own syntax is part of it (`&&`, `|`, `$PATH`), with each value through `quote`, so the value
reaches the program as one argument and nothing in it runs. A Windows interpreter's path is
quoted by PowerShell's rule instead (quote_powershell): single quotes, each quote inside
doubled.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

# A word PowerShell reads as itself, also as a command's first word (no @ , ; $ ` ' " ( ) {}).
_POWERSHELL_SAFE = re.compile(r"[A-Za-z0-9_:.\\/-]+")
# PowerShell ends a single-quoted string at any of these (the typographic ones too).
_POWERSHELL_QUOTES = re.compile("['\u2018\u2019\u201a\u201b]")


def quote(value: object) -> str:
    """`value` as one POSIX shell word: as is where it holds only safe characters, else in
    single quotes (a quote inside written '"'"')."""
    return shlex.quote(str(value))


def join(argv: Iterable[object]) -> str:
    """One command line from its arguments, each one word (quote)."""
    return " ".join(quote(arg) for arg in argv)


def quote_powershell(value: object) -> str:
    """`value` as one PowerShell word: as is where it holds only safe characters, else a
    single-quoted (literal) string with each quote inside doubled."""
    text = str(value)
    if _POWERSHELL_SAFE.fullmatch(text):
        return text
    return "'" + _POWERSHELL_QUOTES.sub(lambda m: m.group() * 2, text) + "'"


def is_windows_path(path: str) -> bool:
    """A path as Windows writes it: a drive (C:\\...) or a share (\\\\host\\...)."""
    return bool(re.match(r"[A-Za-z]:[\\/]", path)) or path.startswith("\\\\")


def interpreter_pip(python: str, windows: bool = False) -> str:
    """`PYTHON -m pip`: this interpreter's own pip, its path one shell word (the one spelling
    every check's pip command uses); on a Windows machine (`windows`: the snapshot's OS, never
    the path's shape, which any value can take) a Windows path is one PowerShell word, run by
    `&` where it is quoted."""
    if windows and is_windows_path(python):
        word = quote_powershell(python)
        return f"{'& ' if word.startswith(chr(39)) else ''}{word} -m pip"
    return join([python, "-m", "pip"])
