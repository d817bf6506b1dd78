"""`gpucheck snapshot`: the facts alone, as JSON, for `doctor --from` here or elsewhere."""

from __future__ import annotations

from gpucheck.cli.common import (
    DeepOpt,
    HostIdOpt,
    OutputOpt,
    PythonsOpt,
    RedactOpt,
    TimeoutOpt,
    probe_here,
    python_inputs,
    refuse_input_as_output,
    write_output,
)
from gpucheck.exit_status import ExitStatus
from gpucheck.model.snapshot import dumps

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
    redact: RedactOpt = False,
) -> None:
    """Write the facts alone, as JSON (for `doctor --from` here or on another machine)."""
    refuse_input_as_output(output, python_inputs(python))
    snap = probe_here(timeout, python, deep, host_id, redact)
    write_output(output, lambda stream: stream.write(dumps(snap)))
