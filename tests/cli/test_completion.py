"""Shell completion (typer's): the real command answers the completion protocol the
installed shell scripts speak (bash: COMP_WORDS/COMP_CWORD; zsh and fish:
_TYPER_COMPLETE_ARGS)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_gpucheck


def test_bash_completes_commands_and_options() -> None:
    env = {"_GPUCHECK_COMPLETE": "complete_bash", "COMP_WORDS": "gpucheck fl", "COMP_CWORD": "1"}
    assert run_gpucheck(env=env).stdout.split() == ["fleet"]
    env.update(COMP_WORDS="gpucheck doctor --min-g", COMP_CWORD="2")
    assert run_gpucheck(env=env).stdout.split() == ["--min-gpus"]


def test_zsh_completes_with_the_help_line() -> None:
    env = {"_GPUCHECK_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "gpucheck sna"}
    out = run_gpucheck(env=env).stdout
    assert '"snapshot":"Write the facts alone' in out


# --- values --------------------------------------------------------------------------------


def bash_values(line: str) -> list[str]:
    """What the completion script of `gpucheck --show-completion bash`, sourced in a real bash,
    puts in COMPREPLY for the last word of `line` (empty when the line ends in a space)."""
    import shutil
    import tempfile

    from conftest import REPO

    script = run_gpucheck("--show-completion", "bash").stdout
    assert "complete -o default -F _gpucheck_completion gpucheck" in script
    words = line.split(" ")
    # The script runs `env ... gpucheck`: a program on PATH, as an installed gpucheck is.
    bin_dir = Path(tempfile.mkdtemp(prefix="gpucheck-completion-"))
    shim = bin_dir / "gpucheck"
    shim.write_text(
        f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(REPO / 'src'))} "
        f'exec {shlex.quote(sys.executable)} -m gpucheck "$@"\n'
    )
    shim.chmod(0o755)
    program = (
        script
        + f"\nCOMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
        + f"COMP_CWORD={len(words) - 1}\n"
        + "_gpucheck_completion gpucheck\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("_GPUCHECK")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    shutil.rmtree(bin_dir)
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completes_closed_choices() -> None:
    assert bash_values("gpucheck doctor --format ") == [
        "text",
        "json",
        "junit",
        "prometheus",
        "html",
    ]
    assert bash_values("gpucheck doctor -f j") == ["json", "junit"]
    assert bash_values("gpucheck fleet --format ") == ["table", "json", "csv", "html"]
    assert bash_values("gpucheck watch --format ") == ["csv", "jsonl", "html"]
    assert bash_values("gpucheck fit m --optimizer ada") == ["adam", "adamw", "adafactor"]
    assert bash_values("gpucheck fit m --dtype int") == ["int8", "int4"]
    assert bash_values("gpucheck fit m --kv-dtype f") == ["fp32", "fp16", "fp8"]
    assert bash_values("gpucheck fit m --attention ") == ["flash", "sdpa", "eager"]
    assert bash_values("gpucheck schema f") == ["fit", "fleet", "fix-plan"]


def test_bash_completes_check_ids_sections_and_prefixes() -> None:
    assert bash_values("gpucheck doctor --only gpus.ecc") == ["gpus.ecc-errors"]
    skip = bash_values("gpucheck doctor --skip gpu")
    assert skip[:2] == ["gpus", "gpus."] and "gpus.memory-in-use" in skip and "gpus.lost" in skip
    assert "requirements" in bash_values("gpucheck doctor --only req")


def test_bash_completes_watch_fields_one_list_entry_at_a_time() -> None:
    assert bash_values("gpucheck watch --fields index,power.d") == ["index,power.draw"]
    assert "uuid,uuid" not in bash_values("gpucheck watch --fields uuid,")  # already there
    assert "uuid,name" in bash_values("gpucheck watch --fields uuid,")


def test_python_paths_complete_folders_and_interpreters(tmp_path: Path) -> None:
    env_bin = tmp_path / "venv" / "bin"
    env_bin.mkdir(parents=True)
    for name, mode in (
        ("python3", 0o755),
        ("python3.12", 0o755),
        ("pip", 0o755),
        ("pythonrc", 0o644),
    ):
        (env_bin / name).write_text("#!/bin/sh\n")
        (env_bin / name).chmod(mode)
    assert bash_values(f"gpucheck doctor --python {tmp_path}/ve") == [f"{tmp_path}/venv/"]
    assert bash_values(f"gpucheck bench --python {env_bin}/py") == [
        f"{env_bin}/python3",
        f"{env_bin}/python3.12",
    ]
    # A bare name: interpreters on PATH (the tests' own python among them).
    assert any(w.startswith("python3") for w in bash_values("gpucheck snapshot --python python3"))


def test_zsh_and_fish_complete_values_with_their_help() -> None:
    env = {"_GPUCHECK_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "gpucheck doctor -f p"}
    out = run_gpucheck(env=env).stdout
    assert '"prometheus":"metrics for node_exporter' in out and '"json"' not in out
    env = {
        "_GPUCHECK_COMPLETE": "complete_fish",
        "_TYPER_COMPLETE_ARGS": "gpucheck doctor --only gpus.ecc",
        "_TYPER_COMPLETE_FISH_ACTION": "get-args",
    }
    assert run_gpucheck(env=env).stdout.splitlines() == [
        "gpus.ecc-errors\tno uncorrectable ECC memory errors"
    ]
    env["_TYPER_COMPLETE_ARGS"] = "gpucheck fleet --format "
    assert [line.split("\t")[0] for line in run_gpucheck(env=env).stdout.splitlines()] == [
        "table",
        "json",
        "csv",
        "html",
    ]


# --- the scripts: --show-completion / --install-completion SHELL --------------------------------


def under_sh(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`gpucheck ARGS` with `sh` as its parent, as in a Dockerfile RUN, make or `sh -c`."""
    line = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "gpucheck", *args])
    return subprocess.run(
        ["sh", "-c", line],  # (sh runs the program as its child: `exec` would hide it)
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o default -F _gpucheck_completion gpucheck"),
        ("zsh", "#compdef gpucheck"),
        ("fish", "complete --command gpucheck --no-files"),
        ("powershell", "Register-ArgumentCompleter -Native -CommandName gpucheck"),
        ("pwsh", "Register-ArgumentCompleter -Native -CommandName gpucheck"),
    ],
)
def test_a_named_shell_is_honoured_whatever_the_parent(shell: str, marker: str) -> None:
    """Before: the word was ignored and the shell guessed from the parent: under sh, "Shell sh
    not supported.", exit 1."""
    for args in (("--show-completion", shell), (f"--show-completion={shell}",)):
        result = under_sh(*args)
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        assert marker in result.stdout
        assert "_GPUCHECK_COMPLETE" in result.stdout


def test_a_shell_that_cannot_be_completed_is_one_line_and_exit_2() -> None:
    for args, says in [
        (
            ("--show-completion", "tcsh"),
            "--show-completion: no completion for the shell named, 'tcsh'",
        ),
        (
            ("--install-completion", "csh"),
            "--install-completion: no completion for the shell named",
        ),
        (("--show-completion",), "--show-completion: no completion for the shell here, 'sh'"),
        (("--show-completion", "bash", "zsh"), "--show-completion takes one shell name"),
    ]:
        result = under_sh(*args)
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        assert result.stderr.startswith(f"gpucheck: {says}"), result.stderr
        assert result.stderr.count("\n") == 1 and "bash (or zsh, fish" in result.stderr


def test_install_completion_of_a_named_shell_writes_its_script(tmp_path: Path) -> None:
    result = under_sh("--install-completion", "bash", env={"HOME": str(tmp_path)})
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    script = tmp_path / ".bash_completions" / "gpucheck.sh"
    assert result.stdout.startswith(f"bash completion installed in {script}\n")
    assert "complete -o default -F _gpucheck_completion gpucheck" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()


def test_help_says_the_completion_options_take_a_shell() -> None:
    out = " ".join(run_gpucheck("--help").stdout.split())
    assert "--install-completion Install completion for SHELL (bash, zsh, fish, powershell" in out
    assert "--show-completion Print the completion script for SHELL, else for the shell" in out
