"""`gpucheck procs`: who holds GPU memory and GPU device files, and ending them safely."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from gpucheck.cli.common import (
    JsonOpt,
    UserError,
    choose_format,
    format_option,
    gpu_option,
    number_option,
    timeout_option,
    write_output,
)
from gpucheck.exit_status import ExitStatus
from gpucheck.model.plural import counted
from gpucheck.procs import flow
from gpucheck.procs.render import FORMATS

if TYPE_CHECKING:
    from gpucheck.procs.ending import Decision


GpuOpt = Annotated[
    str | None,
    gpu_option("N|UUID", "Only this GPU (NVML index, or UUID prefix)."),
]


# The largest process id Linux gives (pid_max's ceiling, 2**22).
PID_MAX = 4194304

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "listed (and every process asked for was ended)",
    ExitStatus.FAILED: "a process was not ended (declined, refused, or still running)",
    ExitStatus.UNKNOWN: (
        "could not tell: NVML did not answer for a GPU (lost), so a holder may be missing"
    ),
}


def procs(
    json_out: JsonOpt = False,
    fmt: Annotated[str, format_option("text or json.")] = "text",
    gpu: GpuOpt = None,
    kill: Annotated[
        list[int] | None,
        typer.Option("--kill", metavar="PID", help="End these GPU holders (repeatable)."),
    ] = None,
    kill_mine: Annotated[
        bool,
        typer.Option(
            "--kill-mine",
            help="End your processes (SUDO_UID's under sudo) in this container that have a "
            "compute context on a GPU.",
        ),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="As root: also end another user's processes named.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    grace: Annotated[
        float,
        number_option(
            "--grace",
            low=0,
            high=600,
            metavar="SECONDS",
            help="Seconds between SIGTERM and SIGKILL.",
        ),
    ] = 10.0,
    timeout: Annotated[
        float,
        timeout_option(0.5, 600, "NVML time bound."),
    ] = 15.0,
) -> None:
    """Who holds GPU memory and device files (NVML and /proc merged), and ending them safely."""
    shown_as = choose_format(FORMATS, fmt, json_out)
    json_out = shown_as.name == "json"
    for pid in kill or ():
        # -5 is no process: os.kill would read it as a process group (or, -1, every process).
        if not 0 < pid <= PID_MAX:
            raise UserError(f"--kill: {pid} is not a process id (give one from 1 to {PID_MAX})")
    acting = bool(kill) or kill_mine
    if not acting:
        for name, given in (("--force", force), ("--yes", yes)):
            if given:
                raise UserError(f"{name} goes with --kill or --kill-mine")
    looked = flow.look(gpu, timeout)
    if looked.unmatched is not None and acting:
        sys.stderr.write(
            f"gpucheck: --gpu {gpu}: NVML listed no GPU to match it against: "
            f"{looked.unmatched}; nothing was ended\n"
        )
        raise typer.Exit(ExitStatus.UNKNOWN)
    if not acting:
        doc = flow.listing(looked)
        write_output(None, lambda stream: shown_as.write(doc, stream))
        if not looked.holders.complete:
            raise typer.Exit(ExitStatus.UNKNOWN)  # "no process holds it" could not be said
        return
    decisions, unasked = flow.endings(looked, tuple(kill or ()), kill_mine, force)
    to_end = [d for d in decisions if d.end]
    _tell(decisions, json_out, unasked)
    if to_end and not yes:
        if not sys.stdin.isatty():
            raise UserError(
                "ending processes asks for confirmation: run on a terminal, or add --yes "
                "(nothing was ended)"
            )
        if not typer.confirm(f"End {counted(len(to_end), 'process')}?", default=False, err=True):
            sys.stderr.write("gpucheck: nothing was ended\n")
            raise typer.Exit(ExitStatus.FAILED)
    doc = flow.end(looked, decisions, grace)
    write_output(None, lambda stream: shown_as.write(doc, stream))
    ended = [a for a in doc.actions or [] if a.decision == "end"]
    done = all(a.outcome in ("terminated", "killed", "gone") for a in ended)
    if not done or len(to_end) < len(decisions):
        raise typer.Exit(ExitStatus.FAILED)
    if unasked:
        raise typer.Exit(ExitStatus.UNKNOWN)


def _tell(decisions: list[Decision], json_out: bool, unasked: list[str]) -> None:
    """What will be ended and what not, before anything is: on stderr when stdout is JSON."""
    stream = sys.stderr if json_out else sys.stdout
    for why in unasked:
        stream.write(
            f"could not tell which of your processes have a compute context: {why}; "
            "name them with --kill PID (`gpucheck procs` lists the device files' holders)\n"
        )
    if not decisions and not unasked:
        stream.write("Nothing to end: none of your processes has a compute context on a GPU.\n")
    for d in decisions:
        if d.end:
            stream.write(f"will end  PID {d.pid}  {d.reason}\n")
        else:
            stream.write(f"not ending PID {d.pid}: {d.reason}\n")
    stream.flush()
