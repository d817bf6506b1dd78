"""Text from a snapshot (or any input) is data, never code: the one quoting of a value that
goes into a fix's shell command.

A host name, an interpreter's path, a package's name or version, a library folder: any of
them may come from another machine's file and hold `$(...)`, backticks, `;`, quotes or a line
break. Every command a fix gives is built from an argument list (`join`) or, where the shell's
own syntax is part of it (`&&`, `|`, `$PATH`), with each value through `quote`, so the value
reaches the program as one argument and nothing in it runs. (No fix emits a PowerShell
command: where one does, its values need PowerShell's rule, a single quote doubled.)
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable


def quote(value: object) -> str:
    """`value` as one POSIX shell word: as is where it holds only safe characters, else in
    single quotes (a quote inside written '"'"')."""
    return shlex.quote(str(value))


def join(argv: Iterable[object]) -> str:
    """One command line from its arguments, each one word (quote)."""
    return " ".join(quote(arg) for arg in argv)
