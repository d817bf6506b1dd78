"""On a Windows snapshot every fix command is PowerShell's, and a hostile value in any string
field stays inside one single-quoted PowerShell word: the doctor's commands and the lines of
the `fix --format ps1` script hold, outside single quotes, nothing PowerShell reads as syntax.

pwsh is not installable here, so the proof is structural, by a tokenizer for PowerShell's
single-quoted strings written from about_Quoting_Rules
(https://learn.microsoft.com/powershell/module/microsoft.powershell.core/about/about_quoting_rules,
"Single-quoted strings": a verbatim string, nothing substituted; its note added in
https://github.com/MicrosoftDocs/PowerShell-Docs/pull/11405: PowerShell treats smart, typographic
quotation marks as normal quotation marks), the single ones being U+2018, U+2019, U+201A and
U+201B (https://gitlab.com/gitlab-org/gitlab-runner/-/merge_requests/7709, which doubles all
five); two quotes in a row inside a single-quoted string are one. Outside quotes, `;` `|` `,`
`$` `(` `)` `{` `}` `@` `"` and the backtick are syntax.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.shell_sandbox import BASES, TARGETED, commands_of, every_string, hostile

from gpucheck.compat import load
from gpucheck.fixplan import diagnose, plan_for
from gpucheck.fixplan.render import render_json, render_ps1
from gpucheck.model.snapshot import Snapshot
from gpucheck.report.core import Report
from gpucheck.report.formats import FORMATS

COMPAT = load()
SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"
# Outside quotes: a word's own characters, the space between words, and `&` (the call operator
# before a quoted program, or `&&` between two commands).
BARE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=+-\\ &")
ROOT = Path("C:/sandbox")


def words(command: str) -> list[tuple[bool, str]]:
    """`command` as (quoted, text) runs, the text of a quoted run as PowerShell reads it (two
    quotes one); an unclosed string fails the test."""
    runs: list[tuple[bool, str]] = []
    quoted, text, at = False, "", 0
    while at < len(command):
        char = command[at]
        if quoted and char in SINGLE_QUOTES:
            if command[at + 1 : at + 2] and command[at + 1] in SINGLE_QUOTES:
                text, at = text + char, at + 2
                continue
            runs.append((True, text))
            quoted, text = False, ""
        elif not quoted and char in SINGLE_QUOTES:
            runs.append((False, text))
            quoted, text = True, ""
        else:
            text += char
        at += 1
    assert not quoted, f"an unclosed single-quoted string: {command!r}"
    return [*runs, (False, text)]


def statements(script: str) -> list[str]:
    """The script's lines, a line break inside a single-quoted string kept in its line (it is
    literal there); a comment line is one line whatever it holds."""
    found: list[str] = []
    line, quoted = "", False
    for char in script:
        if char == "\n" and not quoted:
            found.append(line)
            line = ""
            continue
        comment = line.startswith("#")
        if not comment and char in SINGLE_QUOTES:
            quoted = not quoted  # a doubled quote closes and opens again: the same state
        line += char
    return [*found, line]


def assert_powershell_safe(command: str) -> None:
    """Outside quotes only words and `&`: what a script line may hold."""
    for quoted, text in words(command):
        if not quoted:
            assert set(text) <= BARE, f"{sorted(set(text) - BARE)} outside quotes: {command!r}"


def assert_payload_quoted(command: str) -> None:
    """No hostile payload (each calls `pwned`) nor line break outside quotes: a doctor's fix
    command may also be a Linux one with a pipe of its own (`sudo dmesg | grep -i nvrm`), which
    the script never writes as a command (assert_powershell_safe)."""
    for quoted, text in words(command):
        if not quoted:
            assert "pwned" not in text.lower(), f"a payload outside quotes: {command!r}"
            assert not any(c in text for c in "\n\r\u2028"), f"a line break: {command!r}"


def windows(snap: Snapshot) -> Snapshot:
    snap.system.os, snap.system.wsl = "Windows", False
    return snap


def commands(snap: Snapshot) -> tuple[list[str], list[str]]:
    """The doctor's fix commands, and the lines of the ps1 script that are commands."""
    findings = diagnose(snap, COMPAT)
    stream = io.StringIO()
    FORMATS["json"].write(Report(snap, findings, from_file="win.json"), stream, True)
    plan = plan_for(snap, findings, "win.json")
    script = io.StringIO()
    render_ps1(plan, script)
    lines = statements(script.getvalue())
    live = [ln for ln in lines if ln and not ln.startswith(("#", "$ErrorAction", "if ($LAST"))]
    plan_json = io.StringIO()
    render_json(plan, plan_json)
    planned = [s["command"] for s in json.loads(plan_json.getvalue())["steps"] if s["command"]]
    return commands_of(stream.getvalue()) + planned, live


def test_the_tokenizer_reads_powershell_quoting_as_published() -> None:
    assert words("pip install 'a''b' x") == [(False, "pip install "), (True, "a'b"), (False, " x")]
    assert words("'9.1\u2019\u2019;calc'") == [(False, ""), (True, "9.1\u2019;calc"), (False, "")]
    assert words("'9.1\u2019;calc.exe;\u2019'")[2] == (False, ";calc.exe;")


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(h=hostile, target=st.sampled_from(["cudnn", "env", "nvcc"]))  # (device groups: Linux's)
def test_a_hostile_value_on_windows_is_inside_one_single_quoted_word(h: str, target: str) -> None:
    snap, expected = TARGETED[target](ROOT, h)
    doctor, script = commands(windows(snap))
    for command in doctor:
        assert_payload_quoted(command)
    for command in script:
        assert_powershell_safe(command)
    quoted = [text for command in doctor for q, text in words(command) if q]
    for value in expected:
        bare = set(value) <= BARE - {" ", "&"} and any(value in c for c in doctor)
        assert bare or any(value in text for text in quoted), f"{value!r} quoted nowhere: {doctor}"


@SETTINGS
@given(h=hostile, base=st.integers(0, len(BASES) - 1), which=st.randoms(use_true_random=False))
def test_hostile_strings_anywhere_in_a_windows_snapshot_stay_quoted(
    h: str, base: int, which: Any
) -> None:
    snap = BASES[base](ROOT)
    share = which.choice([0.1, 0.5, 1.0])
    every_string(snap, lambda value: value + h if which.random() < share else value)
    doctor, script = commands(windows(snap))
    for command in doctor:
        assert_payload_quoted(command)
    for command in script:
        assert_powershell_safe(command)
