"""`gpucheck explain [FILE | -] [--text TEXT]`: the error text a person already has (a
traceback, a log, dmesg, an NCCL debug log, a pip error) in, the doctor's findings out: the
layer at fault, the cause and the fix, from the cited message and Xid catalogs; where the text
cannot decide, facts do: this machine's, probed now (the default, only when a finding needs
them), a saved snapshot's (--from), or none (--no-probe)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from gpucheck.cli.common import (
    CompatDirOpt,
    JsonOpt,
    OutputOpt,
    UserError,
    format_option,
    load_compat,
    read_input,
    read_snapshot,
    refuse_input_as_output,
    write_output,
)
from gpucheck.exit_status import ExitStatus

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "nothing failing found: no known message, or only warnings and harmless ones",
    ExitStatus.FAILED: "a message that stops the work was found and explained",
}
FORMATS = ("text", "json", "junit", "html")
TOO_LARGE = "is larger than 16 MiB: give the part of the log around the error"


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
    fmt: Annotated[
        str, format_option("text, json, junit or html.", lambda: list(FORMATS))
    ] = "text",
    output: OutputOpt = None,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Explain an error text: the cause and the fix of each known message in it."""
    from gpucheck.explanation import INPUT_LIMIT, decode
    from gpucheck.explanation import explain as explain_text
    from gpucheck.explanation.live import explain_here

    chosen = "json" if json_out else fmt
    if chosen not in FORMATS:
        raise UserError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if no_probe and from_file is not None:
        raise UserError("explain: --from and --no-probe: give one")
    if fix and chosen not in ("text", "json"):
        raise UserError(f"explain --fix: the plan is text or json, not {chosen}")
    if (path is None) == (text is None):
        raise UserError("explain: give the text one way: FILE, - (standard input) or --text TEXT")
    refuse_input_as_output(output, [path, from_file])
    if text is not None:
        if len(text.encode("utf-8", errors="replace")) > INPUT_LIMIT:
            raise UserError(f"--text: the text {TOO_LARGE}")
        content, name = decode(text.encode("utf-8", errors="replace")), "--text"
    else:
        assert path is not None
        content, name = decode(read_input(path, INPUT_LIMIT, TOO_LARGE, "FILE")), path
    snapshot = read_snapshot(from_file) if from_file is not None else None
    compat = load_compat(compat_dir)
    if snapshot is not None:
        result = explain_text(content, compat, snapshot, name=name, facts_from=from_file)
    else:
        result, snapshot = explain_here(content, compat, name, probe=not no_probe)
    if fix:
        from gpucheck.fixplan import plan_for
        from gpucheck.fixplan.render import plan_dict, render_text
        from gpucheck.model.snapshot import Snapshot

        plan = plan_for(snapshot or Snapshot(), result.findings, from_file)
        if chosen == "json":
            planned = json.dumps(plan_dict(plan), indent=2) + "\n"
            write_output(output, lambda stream: stream.write(planned))
        else:
            write_output(output, lambda stream: render_text(plan, stream))
        raise typer.Exit(result.exit_code)
    if chosen == "json":
        document = json.dumps(result.to_dict(), indent=2) + "\n"
        write_output(output, lambda stream: stream.write(document))
    elif chosen == "junit":
        write_output(output, result.write_junit)
    elif chosen == "html":
        from gpucheck.explanation.html import render_html

        write_output(output, lambda stream: render_html(result, stream))
    else:
        write_output(output, result.write_text)
    raise typer.Exit(result.exit_code)
