"""The Python API: the doctor and the snapshot as functions that return objects and print
nothing, for scripts and notebooks (`gpucheck.doctor()` in a notebook's first cell shows the
report: Report renders itself in Jupyter through rich).

Bad arguments raise ValueError with the message the command line would print.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING

from gpucheck.model.snapshot import Snapshot
from gpucheck.report.core import Report

if TYPE_CHECKING:
    from gpucheck.checks.context import Requirements
    from gpucheck.checks.registry import Check
    from gpucheck.compat import Compat


def snapshot(
    *,
    deep: bool = False,
    python: str | None = None,
    timeout: float = 15.0,
    host_id: str | None = None,
    redact: bool = False,
) -> Snapshot:
    """Probe this machine: the facts alone, as `gpucheck snapshot` writes them."""
    from gpucheck.inputs import UserError, probe_options
    from gpucheck.probes.run import collect

    try:
        snap = collect(probe_options(timeout, python, deep, host_id))
    except UserError as exc:
        raise ValueError(str(exc)) from None
    if redact:
        from gpucheck.model.redact import redact_here

        snap = redact_here(snap)
    return snap


def doctor(
    *,
    snapshot: Snapshot | None = None,
    from_file: str | PathLike[str] | None = None,
    deep: bool = False,
    python: str | None = None,
    timeout: float = 15.0,
    strict: bool = False,
    min_gpus: int | None = None,
    min_memory: str | int | None = None,
    min_compute_capability: str | None = None,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    compat_dirs: Sequence[str] = (),
    redact: bool = False,
) -> Report:
    """Run every check on this machine (or on `snapshot`, or a saved one `from_file`) and return
    the report: `.findings`, `.problems`, `.ready`, `.exit_code`, `.snapshot`, `.to_dict()`.

    `min_memory` is bytes, or a size as the command line takes it ("40GiB", "80GB").
    """
    import gpucheck.checks  # noqa: F401  (registers every check)
    from gpucheck.checks.context import Requirements
    from gpucheck.checks.registry import SelectionError, select
    from gpucheck.compat import CompatError
    from gpucheck.inputs import (
        UserError,
        load_compat,
        parse_compute_capability,
        parse_size,
        probe_options,
        read_snapshot,
    )

    if snapshot is not None and from_file is not None:
        raise ValueError("give snapshot or from_file, not both")
    try:
        requirements = Requirements(
            min_gpus=min_gpus,
            min_memory_bytes=min_memory
            if isinstance(min_memory, int) or min_memory is None
            else parse_size(min_memory),
            min_memory_text=None if min_memory is None else str(min_memory),
            min_compute_capability=None
            if min_compute_capability is None
            else parse_compute_capability(min_compute_capability),
        )
        selected = select(list(only), list(skip))
        compat = load_compat(list(compat_dirs))
        if from_file is not None:
            snapshot = read_snapshot(str(from_file))
        elif snapshot is None:
            from gpucheck.probes.run import collect

            snapshot = collect(probe_options(timeout, python, deep))
        origin = None if from_file is None else str(from_file)
        return diagnose(
            snapshot,
            requirements,
            selected,
            compat,
            only=bool(only),
            strict=strict,
            from_file=origin,
            redact=redact,
        )
    except (UserError, SelectionError) as exc:
        raise ValueError(str(exc)) from None
    except CompatError as exc:
        raise ValueError(f"compat data: {exc}") from None


def diagnose(
    snapshot: Snapshot,
    requirements: Requirements,
    selected: list[Check],
    compat: Compat,
    *,
    only: bool = False,
    strict: bool = False,
    from_file: str | None = None,
    redact: bool = False,
) -> Report:
    """The checks run on a snapshot, as a report: the one path from facts to verdicts that
    `gpucheck doctor` and `gpucheck.doctor()` share. Raises CompatError for bad compat data."""
    from gpucheck.checks.context import Context
    from gpucheck.checks.registry import run

    if redact:  # (redaction's imports, hashlib's OpenSSL among them, only when asked)
        from gpucheck.model.redact import redact_here

        # Judged after redaction, so that no finding quotes what was replaced.
        snapshot = redact_here(snapshot)
    findings = run(Context(snapshot, requirements, compat), selected, only=only)
    return Report(snapshot, findings, strict=strict, from_file=from_file, requirements=requirements)
