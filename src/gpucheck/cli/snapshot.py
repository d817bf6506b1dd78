"""`gpucheck snapshot`: the facts alone, as JSON, for `doctor --from` here or elsewhere."""

from __future__ import annotations

from typing import IO, Annotated

import typer

from gpucheck.bundle.making import make_bundle
from gpucheck.cli.common import (
    CompatDirOpt,
    DeepOpt,
    HostIdOpt,
    OutputOpt,
    PythonsOpt,
    TimeoutOpt,
    UserError,
    probe_here,
    python_inputs,
    refuse_input_as_output,
    write_output,
)
from gpucheck.exit_status import ExitStatus
from gpucheck.model.snapshot import dumps
from gpucheck.outputs import output_target

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "the facts were written (a probe that failed is a recorded fact)",
}


def snapshot(
    output: OutputOpt = None,
    timeout: TimeoutOpt = 15.0,
    deep: DeepOpt = False,
    python: PythonsOpt = None,
    host_id: HostIdOpt = None,
    redact: Annotated[
        bool | None,
        typer.Option(
            "--redact/--no-redact",
            help="Replace what identifies a person or site (hostname, user names, serials, "
            "UUIDs, unlisted environment values) so the JSON can be shared publicly. "
            "On by default with --bundle.",
        ),
    ] = None,
    bundle: Annotated[
        str | None,
        typer.Option(
            "--bundle",
            metavar="FILE",
            help="Write a support bundle (FILE.tar.gz): the snapshot, the doctor's report as "
            "JSON, text and HTML, the fix plan, the kernel's NVRM lines, nvidia-smi -q, a "
            "manifest; redacted unless --no-redact.",
        ),
    ] = None,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Write the facts alone, as JSON (for `doctor --from` here or on another machine)."""
    if bundle is not None:
        if output is not None:
            raise UserError("--bundle FILE and -o FILE: the bundle holds the snapshot; give one")
        refuse_input_as_output(bundle, python_inputs(python), "--bundle")
        if bundle != "-":
            output_target(bundle, "--bundle")  # a folder, a missing one: said before probing
        facts = probe_here(timeout, python, deep, host_id, False)
        data = make_bundle(facts, redact is not False, tuple(compat_dir or ()))
        write_output(bundle, lambda stream: _write_bytes(stream, data), option="--bundle")
        return
    if compat_dir:
        raise UserError("--compat-dir goes with --bundle (a snapshot is facts, judged later)")
    refuse_input_as_output(output, python_inputs(python))
    snap = probe_here(timeout, python, deep, host_id, bool(redact))
    write_output(output, lambda stream: stream.write(dumps(snap)))


def _write_bytes(stream: IO[str], data: bytes) -> None:
    """`data` as they are, through the text stream's own file (the safe writer's)."""
    stream.flush()
    stream.buffer.write(data)  # type: ignore[attr-defined]  # (always a TextIOWrapper)
