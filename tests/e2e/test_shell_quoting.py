"""Each value one word of its shell: a Windows interpreter by PowerShell's rule, a pip step
with a quoted interpreter still an installer step, a companion requirement quoted once."""

from __future__ import annotations

import shlex

import pytest
from support import framework_builders as fb


@pytest.mark.parametrize(
    ("python", "windows", "command"),
    [
        (
            r"C:\Users\me\venv\Scripts\python.exe",
            True,
            r"C:\Users\me\venv\Scripts\python.exe -m pip",
        ),
        (r"C:\Program Files\Py\python.exe", True, r"& 'C:\Program Files\Py\python.exe' -m pip"),
        (
            "C:\\it\u2019s;$(x)\\python.exe",
            True,
            "& 'C:\\it\u2019\u2019s;$(x)\\python.exe' -m pip",
        ),
        # A value shaped like a Windows path on a Linux machine is sh's word, never PowerShell's.
        ("C:\\x';: >P;'\\python.exe", False, "'C:\\x'\"'\"';: >P;'\"'\"'\\python.exe' -m pip"),
        ("/opt/env x/bin/python$(touch P)", False, "'/opt/env x/bin/python$(touch P)' -m pip"),
        ("/opt/it's/bin/python", False, "'/opt/it'\"'\"'s/bin/python' -m pip"),
        ("/usr/bin/python3", False, "/usr/bin/python3 -m pip"),
    ],
)
def test_an_interpreter_is_one_word_of_its_own_shell(
    python: str, windows: bool, command: str
) -> None:
    """POSIX paths by sh's rule; on a Windows machine a Windows path by PowerShell's (a quote
    doubled, the typographic ones too, and `&` to run a quoted path)."""
    from gpucheck.checks.context import interpreter_pip

    assert interpreter_pip(python, windows) == command


def test_only_a_pip_that_is_a_command_word_is_given_the_interpreter() -> None:
    """A package string from a snapshot may hold " pip install": inside its quoted word it is
    a value, and putting the interpreter (with its own quotes) there would end the word."""
    from gpucheck.checks.frameworks.per_environment import rewrite_pip

    own = "'/opt/$(touch P)/bin/python' -m pip"
    command = (
        "pip uninstall -y 'a pip install b' && pip install 'nvidia-cudnn-cu12==9.1.0 pip install x'"
    )
    assert rewrite_pip(command, own) == (
        "'/opt/$(touch P)/bin/python' -m pip uninstall -y 'a pip install b' && "
        "'/opt/$(touch P)/bin/python' -m pip install 'nvidia-cudnn-cu12==9.1.0 pip install x'"
    )
    words = shlex.split(rewrite_pip(command, own))
    assert "nvidia-cudnn-cu12==9.1.0 pip install x" in words


def test_a_pip_step_with_a_quoted_interpreter_is_still_an_installer_step() -> None:
    """--apply runs pip steps whose interpreter is quoted (sh's or PowerShell's way); a
    command with anything else in it stays printed only."""
    from gpucheck.fixplan.plan import installer_commands

    assert installer_commands(r"& 'C:\Program Files\Py\python.exe' -m pip install x==1") == [
        ["install", "x==1"]
    ]
    assert installer_commands("'/opt/env x/bin/python' -m pip install 'a<2'") == [
        ["install", "a<2"]
    ]
    assert installer_commands("'/opt/x;y/bin/python' -m pip install a; touch P") is None


def test_a_companion_pinned_with_the_new_torch_is_quoted_once() -> None:
    """torchvision beside a nightly torch on a Pascal GPU: the fix installs another release
    line with the torchvision paired to it, as one word of the command (not quoted twice)."""
    from support.evaluate import the

    env = fb.with_torch(fb.environment(), "2.10.0.dev20251101+cu130", "13.0")
    fb.add(env, "torchvision", "0.25.0.dev20251101+cu130", ["torch==2.10.0.dev20251101"])
    f = the(fb.on(fb.pascal_workstation(), env), "frameworks.torch.arch-support")
    assert f.fix is not None
    words = shlex.split(f.fix.commands[0])
    assert words[:5] == ["pip", "uninstall", "-y", "torch", "&&"]
    assert [w for w in words if w.startswith("torchvision==0.")], words
    assert not [w for w in words if "'" in w], words
