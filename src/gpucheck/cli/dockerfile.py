"""`gpucheck dockerfile PATH`: judge a Dockerfile or Compose file against this machine (or a
saved snapshot of the one it will run on), with the doctor's findings, formats and exit codes."""

from __future__ import annotations

from typing import Annotated

import typer

from gpucheck.cli.common import (
    CompatDirOpt,
    EvidenceOpt,
    JsonOpt,
    OutputOpt,
    StrictOpt,
    TimeoutOpt,
    UserError,
    choose_format,
    format_option,
    from_option,
    install_extra,
    load_compat,
    probe_here,
    read_input,
    read_snapshot,
    refuse_input_as_output,
    write_output,
)
from gpucheck.exit_status import ExitStatus
from gpucheck.report.core import Report
from gpucheck.report.formats import FORMATS

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "ready: nothing failed (with --strict: nothing warned either)",
    ExitStatus.FAILED: "a check failed (or warned, with --strict)",
    ExitStatus.UNKNOWN: (
        "could not tell: the host's driver is unknown (judge a snapshot of the machine it "
        "will run on with --from)"
    ),
}


def dockerfile(
    path: Annotated[str, typer.Argument(metavar="PATH", help="A Dockerfile or a Compose file.")],
    from_file: Annotated[
        str | None,
        from_option("Judge against a saved snapshot or report (the machine it will run on)."),
    ] = None,
    json_out: JsonOpt = False,
    fmt: Annotated[str, format_option("text, json, junit, prometheus or html.")] = "text",
    output: OutputOpt = None,
    verbose: EvidenceOpt = False,
    strict: StrictOpt = False,
    timeout: TimeoutOpt = 15.0,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Judge a Dockerfile or Compose file against the machine it will run on."""
    chosen = choose_format(FORMATS, fmt, json_out)
    try:
        from gpucheck.dockerfile import RECIPE_LIMIT, RecipeError, host_unknown, judge_file
    except ImportError as exc:
        raise UserError(
            f"gpucheck dockerfile needs {exc.name}: {install_extra('docker')}"
        ) from None
    refuse_input_as_output(output, [path, from_file])
    raw = read_input(path, RECIPE_LIMIT, "is too large to be a Dockerfile (over 4 MiB)", "PATH")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"PATH: {path} is not UTF-8 text") from None
    compat = load_compat(compat_dir)
    snapshot = read_snapshot(from_file) if from_file is not None else probe_here(timeout, None)
    try:
        findings = judge_file(path, text, snapshot, compat)
    except RecipeError as exc:
        raise UserError(str(exc)) from None
    except ImportError as exc:
        raise UserError(
            f"gpucheck dockerfile needs {exc.name}: {install_extra('docker')}"
        ) from None

    unknown = host_unknown(snapshot)
    report = Report(snapshot, findings, strict=strict, from_file=from_file, unknown=unknown)
    write_output(output, lambda stream: chosen.write(report, stream, verbose))
    raise typer.Exit(report.exit_code)
