"""`gpucheck snapshot`: the facts alone, as JSON, for `doctor --from` here or elsewhere."""

from __future__ import annotations

from gpucheck.cli.common import (
    DeepOpt,
    HostIdOpt,
    OutputOpt,
    PythonsOpt,
    RedactOpt,
    TimeoutOpt,
    probe_options,
    write_output,
)


def snapshot(
    output: OutputOpt = None,
    timeout: TimeoutOpt = 15.0,
    deep: DeepOpt = False,
    python: PythonsOpt = None,
    host_id: HostIdOpt = None,
    redact: RedactOpt = False,
) -> None:
    """Write the facts alone, as JSON (for `doctor --from` here or on another machine)."""
    from gpucheck.model.snapshot import dumps
    from gpucheck.probes.run import collect

    snap = collect(probe_options(timeout, python, deep, host_id))
    if redact:
        from gpucheck.model.redact import redact_here

        snap = redact_here(snap)
    write_output(output, lambda stream: stream.write(dumps(snap)))
