"""`gpucheck explain [FILE | -] [--text TEXT]`: the error text a person already has (a
traceback, a log, dmesg, an NCCL debug log, a pip error) in, the doctor's findings out: the
layer at fault, the cause and the fix, from the cited message and Xid catalogs; where the text
cannot decide, facts do: this machine's, probed now (the default, only when a finding needs
them), a saved snapshot's (--from), or none (--no-probe)."""

from __future__ import annotations

from typing import Annotated

import typer

from gpucheck.cli.common import (
    CompatDirOpt,
    JsonOpt,
    OutputOpt,
    format_option,
    refuse_input_as_output,
    write_output,
)
from gpucheck.exit_status import ExitStatus

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "nothing failing found: no known message, or only warnings and harmless ones",
    ExitStatus.FAILED: "a message that stops the work was found and explained",
}


def _formats() -> list[str]:
    """--format's values, for help and completion (the flow checks them)."""
    from gpucheck.explanation.flow import FORMATS

    return list(FORMATS)


def explain(
    path: Annotated[
        str | None,
        typer.Argument(
            metavar="[FILE | -]",
            help="The text to explain: a file, or - for standard input.",
            show_default=False,
        ),
    ] = None,
    text: Annotated[
        str | None,
        typer.Option("--text", metavar="TEXT", help="The text itself, instead of a file."),
    ] = None,
    from_file: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="SNAPSHOT",
            help="A saved snapshot (or doctor report) whose facts decide what the text cannot: "
            "the GPUs, the driver, the framework builds.",
        ),
    ] = None,
    no_probe: Annotated[
        bool,
        typer.Option(
            "--no-probe",
            help="Join no facts of this machine (by default, where a finding needs the GPUs "
            "or the driver, this machine is probed now, without --deep, within 5 s a probe).",
        ),
    ] = False,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Print the findings' typed fixes as one ordered plan, as `gpucheck fix` does "
            "(text or json).",
        ),
    ] = False,
    json_out: JsonOpt = False,
    fmt: Annotated[str, format_option("text, json, junit or html.", _formats)] = "text",
    output: OutputOpt = None,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Explain an error text: the cause and the fix of each known message in it."""
    from gpucheck.explanation.flow import ExplainRequest, run_explain, writer

    chosen = "json" if json_out else fmt
    refuse_input_as_output(output, [path, from_file])
    request = ExplainRequest(
        path=path,
        text=text,
        from_file=from_file,
        probe=not no_probe,
        fix=fix,
        compat_dirs=tuple(compat_dir or ()),
        output_format=chosen,
    )
    answer = run_explain(request)
    write_output(output, writer(answer, chosen))
    raise typer.Exit(answer.exit_code)
