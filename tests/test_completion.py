"""Shell completion (typer's): the real command answers the completion protocol the
installed shell scripts speak (bash: COMP_WORDS/COMP_CWORD; zsh and fish:
_TYPER_COMPLETE_ARGS)."""

from __future__ import annotations

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
