"""The Python API: the doctor and the snapshot as functions that return objects and print
nothing, for scripts and notebooks (`gpucheck.doctor()` in a notebook's first cell shows the
report: Report renders itself in Jupyter through rich).

Arguments are judged by the code the command line's options use (inputs.py): a bad value
raises ValueError, a value of the wrong type TypeError, each naming the argument.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
    python: str | Sequence[str] | None = None,
    timeout: float = 15.0,
    host_id: str | None = None,
    redact: bool = False,
) -> Snapshot:
    """Probe this machine: the facts alone, as `gpucheck snapshot` writes them. `python`: one
    interpreter or several (paths, environment folders, globs, "@FILE"), probed side by side."""
    from gpucheck.inputs import PROBE_TIMEOUT, UserError, check_number, probe_here

    timeout = check_number(timeout, "timeout", *PROBE_TIMEOUT)
    _check_pythons(python)
    _check_text(host_id, "host_id")
    try:
        return probe_here(timeout, python, deep, host_id, redact)
    except UserError as exc:
        raise ValueError(str(exc)) from None


def doctor(
    *,
    snapshot: Snapshot | None = None,
    from_file: str | PathLike[str] | None = None,
    deep: bool = False,
    python: str | Sequence[str] | None = None,
    timeout: float = 15.0,
    strict: bool = False,
    min_gpus: int | None = None,
    min_memory: str | int | None = None,
    min_compute_capability: str | None = None,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    compat_dirs: Sequence[str] = (),
    redact: bool = False,
    job_pids: Iterable[int] | None = None,
) -> Report:
    """Run every check on this machine (or on `snapshot`, or a saved one `from_file`) and return
    the report: `.findings`, `.problems`, `.ready`, `.exit_code`, `.snapshot`, `.to_dict()`.

    `min_memory` is bytes (an int), or a size with its unit as the command line takes it
    ("40GiB", "80GB"; a bare "40" is refused: GiB? GB? bytes?).
    `job_pids`: the scheduler's health profile (`--job-pids`): processes of running jobs.
    """
    from gpucheck.checks.context import Requirements
    from gpucheck.checks.registry import SelectionError, select
    from gpucheck.compat import CompatError
    from gpucheck.inputs import (
        MIN_GPUS,
        PROBE_TIMEOUT,
        UserError,
        check_number,
        load_compat,
        parse_compute_capability,
        parse_size,
        probe_here,
        read_snapshot,
    )

    if snapshot is not None and from_file is not None:
        raise ValueError("give snapshot or from_file, not both")
    if snapshot is not None and not isinstance(snapshot, Snapshot):
        raise TypeError(f"snapshot: expected a gpucheck.Snapshot, not {type(snapshot).__name__}")
    if from_file is not None and not isinstance(from_file, (str, PathLike)):
        raise TypeError(f"from_file: expected a path, not {type(from_file).__name__}")
    timeout = check_number(timeout, "timeout", *PROBE_TIMEOUT)
    if min_gpus is not None:
        min_gpus = int(check_number(min_gpus, "min_gpus", *MIN_GPUS, integer=True))
    if min_memory is not None and not isinstance(min_memory, str):
        min_memory = int(check_number(min_memory, "min_memory", 1, None, integer=True))
    _check_text(min_compute_capability, "min_compute_capability")
    _check_pythons(python)
    for name, items in (("only", only), ("skip", skip), ("compat_dirs", compat_dirs)):
        if isinstance(items, (str, bytes)) or not all(isinstance(i, str) for i in items):
            raise TypeError(f"{name}: expected a list of strings, not {items!r}")
    try:
        requirements = Requirements(
            min_gpus=min_gpus,
            min_memory_bytes=min_memory
            if isinstance(min_memory, int) or min_memory is None
            else parse_size(min_memory, "min_memory", require_unit=True),
            min_memory_text=None if min_memory is None else str(min_memory),
            min_compute_capability=None
            if min_compute_capability is None
            else parse_compute_capability(min_compute_capability, "min_compute_capability"),
            job_pids=None if job_pids is None else _job_pids(job_pids),
        )
        selected = select(list(only), list(skip))
        compat = load_compat(list(compat_dirs))
        if from_file is not None:
            snapshot = read_snapshot(str(from_file))
        elif snapshot is None:
            snapshot = probe_here(timeout, python, deep)
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


def _check_pythons(value: object) -> None:
    """python: one interpreter (a string) or several (a list of strings)."""
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_text(item, "python")
    else:
        _check_text(value, "python")


def _check_text(value: object, name: str) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, not {type(value).__name__} {value!r}")


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
    return Report(
        snapshot,
        findings,
        strict=strict,
        from_file=from_file,
        requirements=requirements,
        unknown=_unprobed_python(snapshot),
    )


def _unprobed_python(snapshot: Snapshot) -> str | None:
    """Why the frameworks the user asked about were not judged: a --python whose probe did not
    run (not a Python interpreter, or one too broken to start). A gate that could not look
    where it was told answers "could not tell" (exit 5), never "ready"."""
    failed = [e for e in snapshot.environments if e.origin == "--python" and e.error]
    if not failed:
        return None
    env = failed[0]
    return (
        f"--python {env.python} could not be probed, so its frameworks were not judged (is it "
        f"a Python interpreter? {env.error})"
    )


def _job_pids(pids: object) -> frozenset[int]:
    """job_pids as the CLI's --job-pids takes them: positive process ids."""
    if isinstance(pids, (str, bytes)) or not hasattr(pids, "__iter__"):
        raise TypeError(f"job_pids: expected a list of process ids, not {pids!r}")
    found = set()
    for pid in pids:
        if isinstance(pid, bool) or not isinstance(pid, int):
            raise TypeError(f"job_pids: expected process ids (int), not {pid!r}")
        if pid <= 0:
            raise ValueError(f"job_pids: {pid} is not a process id")
        found.add(pid)
    return frozenset(found)
