"""model/shell.py: on a Windows snapshot every value is one PowerShell word (PowerShell's
about_Quoting_Rules: a single-quoted string is literal, ends at ' or a typographic single quote
U+2018-U+201B, and two quotes in a row are one; a comma outside quotes makes an array), and
the scripts' last guard (powershell_hazard, sh_hazard) tells a command its quoting built from
one it could not have."""

from __future__ import annotations

import pytest

from gpucheck.model.shell import join, powershell_hazard, powershell_words, quote, sh_hazard


def test_inside_powershell_words_a_typographic_quote_is_doubled_not_an_end() -> None:
    with powershell_words():
        assert quote("9.1\u2019;calc.exe;\u2019") == "'9.1\u2019\u2019;calc.exe;\u2019\u2019'"
        assert quote("9.1,evil-pkg") == "'9.1,evil-pkg'"
        assert quote("torch==2.5.1+cu121") == "torch==2.5.1+cu121"
        assert join(["C:\\My Python\\python.exe", "-m", "pip"]) == (
            "& 'C:\\My Python\\python.exe' -m pip"
        )
    # outside it, POSIX sh's rule: shlex leaves a comma bare (sh reads it as itself)
    assert quote("9.1,evil-pkg") == "9.1,evil-pkg"
    assert quote("a\u2019b") == "'a\u2019b'"


@pytest.mark.parametrize(
    "command",
    [
        "pip install torch==2.9.1+cu130 --index-url https://download.pytorch.org/whl/cu130",
        "& 'C:\\Users\\me\\my venv\\Scripts\\python.exe' -m pip install 'x''y'",
        "pip uninstall -y torch && pip install 'nvidia-cudnn-cu12==9.1\u2019\u2019;calc.exe'",
        "pip install 'a\u2018\u2018b' 'c''d'",
    ],
)
def test_a_command_powershell_quoting_built_is_written(command: str) -> None:
    assert powershell_hazard(command) is None


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("pip install 'nvidia-cudnn-cu12==9.1\u2019;calc.exe;\u2019'", "';' outside"),
        ("pip install nvidia-cudnn-cu12==9.1,evil-pkg", "',' outside"),
        ("pip install x`;calc", "'`' outside"),
        ("pip install $(calc)", "'$' outside"),
        ('pip install "$env:X"', "'\"' outside"),
        ("pip install 'unclosed", "an unclosed single-quoted string"),
        ("pip install x\ncalc.exe", "a control character"),
    ],
)
def test_a_command_powershell_could_run_or_split_is_refused(command: str, why: str) -> None:
    hazard = powershell_hazard(command)
    assert hazard is not None and hazard.startswith(why), hazard


@pytest.mark.parametrize(
    "command",
    [
        "pip install 'nvidia-cudnn-cu12==9.1'\"'\"';calc'",
        "dkms status; ls /lib/modules/$(uname -r)/updates",
        'export LD_LIBRARY_PATH="/usr/lib/wsl/lib:$LD_LIBRARY_PATH"',
        "sudo usermod -aG video $USER",
    ],
)
def test_a_command_posix_quoting_built_is_written(command: str) -> None:
    assert sh_hazard(command) is None


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("pip install `calc`", "a backtick"),
        ('pip install "$(calc)"', "$( inside double quotes"),
        ("pip install 'open", "an unclosed quote"),
        ("pip install x\rcalc", "a control character"),
    ],
)
def test_a_command_sh_could_run_is_refused(command: str, why: str) -> None:
    hazard = sh_hazard(command)
    assert hazard is not None and hazard.startswith(why), hazard
