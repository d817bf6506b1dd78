"""Text from a snapshot (or any input) is data, never code: the one quoting of a value that
goes into a fix's shell command.

A host name, an interpreter's path, a package's name or version, a library folder: any of
them may come from another machine's file and hold `$(...)`, backticks, `;`, quotes or a line
break. Every command a fix gives is built from an argument list (`join`) or, where the shell's
own syntax is part of it (`&&`, `|`, `$PATH`), with each value through `quote`, so the value
reaches the program as one argument and nothing in it runs. A Windows interpreter's path is
quoted by PowerShell's rule instead (quote_powershell): single quotes, each quote inside
doubled. A check judging a Windows snapshot runs inside `powershell_words()` (the registry sets
it from the snapshot's OS), so every `quote` and `join` of it follows PowerShell's rule: POSIX
single quotes do not hold in PowerShell, which also ends a quoted string at a typographic quote
and splits arguments at a comma.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# A word PowerShell reads as itself, also as a command's first word (no @ , ; $ ` ' " ( ) {}):
# anything else is quoted. (A backslash is literal in PowerShell: a Windows path's separator.)
_POWERSHELL_SAFE = re.compile(r"[A-Za-z0-9_./:=+\\-]+")
# PowerShell ends a single-quoted string at any of these (the typographic ones too).
_POWERSHELL_QUOTES = re.compile("['\u2018\u2019\u201a\u201b]")


# Whether the commands being built are for PowerShell (a Windows snapshot's check): see above.
_POWERSHELL: ContextVar[bool] = ContextVar("gpucheck_powershell_words", default=False)


@contextmanager
def powershell_words(on: bool = True) -> Iterator[None]:
    """Inside it (`on`), quote and join write PowerShell words, not POSIX shell words."""
    token = _POWERSHELL.set(on)
    try:
        yield
    finally:
        _POWERSHELL.reset(token)


def quote(value: object) -> str:
    """`value` as one word of the shell the commands are for: POSIX sh's (as is where it holds
    only safe characters, else in single quotes, a quote inside written '"'"'), or inside
    powershell_words() PowerShell's (quote_powershell)."""
    if _POWERSHELL.get():
        return quote_powershell(value)
    return shlex.quote(str(value))


def join(argv: Iterable[object]) -> str:
    """One command line from its arguments, each one word (quote); in PowerShell a quoted
    program is run by `&` (a quoted first word alone is a string, not a command)."""
    line = " ".join(quote(arg) for arg in argv)
    return "& " + line if _POWERSHELL.get() and line.startswith("'") else line


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


# Outside a single-quoted string, what PowerShell reads as syntax and quote_powershell never
# leaves there: a typographic quote (starts a string), a double quote ("$(...)" expands), `
# (escape), ; and | (another command), , (an array), $ @ ( ) { } (expressions), < > # and the
# other quotes. `&` stays: the call operator before a quoted program, and `&&`.
_POWERSHELL_SYNTAX = frozenset('\u2018\u2019\u201a\u201b"\u201c\u201d\u201e`;|,$@(){}<>#')


def _control(char: str) -> bool:
    """A character that ends a line or a command in a shell, outside quotes."""
    return (ord(char) < 32 and char != "\t") or ord(char) == 127 or char in "\u2028\u2029"


def powershell_hazard(command: str) -> str | None:
    """What in `command` PowerShell could run or split outside a single-quoted string, that
    PowerShell's quoting (quote_powershell) never leaves there; None for a command it built.
    In a single-quoted string only a quote (', U+2018-U+201B) is special: two are one."""
    quoted, at = False, 0
    while at < len(command):
        char = command[at]
        if quoted and _POWERSHELL_QUOTES.fullmatch(char):
            if at + 1 < len(command) and _POWERSHELL_QUOTES.fullmatch(command[at + 1]):
                at += 1  # a doubled quote: one quote inside the string
            else:
                quoted = False
        elif not quoted and char == "'":
            quoted = True
        elif not quoted and _control(char):
            return "a control character outside quotes (a line break ends the command)"
        elif not quoted and char in _POWERSHELL_SYNTAX:
            return f"{char!r} outside a single-quoted string"
        at += 1
    return "an unclosed single-quoted string" if quoted else None


def sh_hazard(command: str) -> str | None:
    """What in `command` sh could read as a new command or an unclosed quote that POSIX
    quoting (quote, join) never produces: a control character outside quotes, a backtick, `$(`
    inside double quotes, a quote left open; None for a command it built. (`;`, `&&`, `|`,
    `$(...)` outside quotes stay: fixes write them, and a value in them is quoted.)"""
    state, at = "", 0
    while at < len(command):
        char = command[at]
        if state == "'":
            state = "" if char == "'" else state
        elif char == "\\":
            at += 1  # the next character is literal, quoted or not
        elif char == "`":
            return "a backtick (runs a command)"
        elif state == '"':
            if command.startswith("$(", at):
                return "$( inside double quotes (runs a command)"
            state = "" if char == '"' else state
        elif char in "'\"":
            state = char
        elif _control(char):
            return "a control character outside quotes (a line break ends the command)"
        at += 1
    return "an unclosed quote" if state else None
