"""What the commands that act share (cli/acting.py): the question before `fix --apply`,
`fix --undo` and `install --apply` act, asked on a real pseudo-terminal, and the folder their
record goes to."""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpucheck.cli.acting import confirmed, record_folder
from gpucheck.inputs import UserError


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """Standard input on a real pseudo-terminal; the fd to type the answer into."""
    typed, tty = os.openpty()
    stdin = open(tty, encoding="utf-8", closefd=True)  # noqa: SIM115 (closed below)
    monkeypatch.setattr(sys, "stdin", stdin)
    yield typed
    stdin.close()
    os.close(typed)


def test_yes_goes_on_without_asking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # nothing to read: never asked
    assert confirmed("--apply", "Apply the 2 local steps now?", yes=True)


def test_without_a_terminal_it_refuses_and_names_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    with pytest.raises(UserError) as caught:
        confirmed("--undo", "Restore /venv as recorded in r?", yes=False)
    assert (
        str(caught.value) == "--undo asks before changing anything: answer on a terminal, or --yes"
    )


def test_a_no_on_the_terminal_changes_nothing(
    terminal: int, capsys: pytest.CaptureFixture[str]
) -> None:
    os.write(terminal, b"n\n")
    assert not confirmed("--apply", "Install into /venv now?", yes=False)
    shown = capsys.readouterr().out
    assert shown.startswith("Install into /venv now? [y/N]: ")
    assert shown.endswith("Nothing was changed.\n")


def test_a_yes_on_the_terminal_goes_on(terminal: int, capsys: pytest.CaptureFixture[str]) -> None:
    os.write(terminal, b"y\n")
    assert confirmed("--apply", "Apply the 1 local step now?", yes=False)
    assert "Nothing was changed." not in capsys.readouterr().out


def test_the_question_shows_control_characters_escaped(
    terminal: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """An environment's path is the user's text: a carriage return in it would let the
    question overwrite itself on the terminal."""
    os.write(terminal, b"n\n")
    confirmed("--undo", "Restore /env\rX as recorded in r?", yes=False)
    assert capsys.readouterr().out.startswith("Restore /env\\x0dX as recorded in r? [y/N]: ")


def test_a_new_record_folder_is_named_for_the_command_and_the_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = record_folder(None, "install")
    assert re.fullmatch(r"gpucheck-install-\d{8}-\d{6}", str(folder)), folder
    assert record_folder(str(tmp_path / "mine"), "fix") == tmp_path / "mine"


def test_a_record_folder_with_something_in_it_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kept").write_text("a record")
    with pytest.raises(UserError) as caught:
        record_folder(str(tmp_path), "fix")
    assert str(caught.value) == f"--record: {tmp_path} is not empty: name a new folder"
