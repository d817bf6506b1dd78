"""The Python API: the doctor and the snapshot as functions that return objects and print
nothing, for scripts and notebooks (`gpucheck.doctor()` in a notebook's first cell shows the
report: Report renders itself in Jupyter through rich).

The doctor's arguments become the request the command line builds too (diagnosis/request.py),
judged by the same code: a bad value raises ValueError (the request's RequestError), a value of
the wrong type TypeError, each naming the argument.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import TYPE_CHECKING

from gpucheck.diagnosis.flow import run
from gpucheck.diagnosis.request import DoctorRequest
from gpucheck.inputs import PROBE_TIMEOUT, UserError, check_number, probe_here
from gpucheck.model.snapshot import Snapshot
from gpucheck.report.core import Report

if TYPE_CHECKING:
    from gpucheck.explanation import Explanation
    from gpucheck.install.answer import InstallAnswer


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
    if snapshot is not None and not isinstance(snapshot, Snapshot):
        raise TypeError(f"snapshot: expected a gpucheck.Snapshot, not {type(snapshot).__name__}")
    if from_file is not None and not isinstance(from_file, (str, PathLike)):
        raise TypeError(f"from_file: expected a path, not {type(from_file).__name__}")
    # (Numbers: their type and value are judged with the request's, by validate.)
    _check_text(min_compute_capability, "min_compute_capability")
    _check_pythons(python)
    for name, items in (("only", only), ("skip", skip), ("compat_dirs", compat_dirs)):
        if isinstance(items, (str, bytes)) or not all(isinstance(i, str) for i in items):
            raise TypeError(f"{name}: expected a list of strings, not {items!r}")
    request = DoctorRequest(
        from_file=None if from_file is None else str(from_file),
        snapshot=snapshot,
        pythons=(python,) if isinstance(python, str) else tuple(python or ()),
        deep=deep,
        timeout=timeout,
        only=tuple(only),
        skip=tuple(skip),
        strict=strict,
        min_gpus=min_gpus,
        min_memory=min_memory,
        min_compute_capability=min_compute_capability,
        job_pids=None if job_pids is None else _job_pids(job_pids),
        compat_dirs=tuple(compat_dirs),
        redact=redact,
    )
    return run(request)  # (its RequestError is a ValueError)


def explain(
    text: str | bytes, snapshot: Snapshot | None = None, compat_dirs: Sequence[str] = ()
) -> Explanation:
    """The known messages in an error text (a traceback, a log, dmesg), each a finding with
    its cause and fix, the best explanation first; `snapshot` (a Snapshot, from
    gpucheck.snapshot() or a saved file) supplies the facts the text cannot decide. Bytes are
    decoded as `gpucheck explain` decodes a file; more than 16 MiB raises ValueError."""
    from gpucheck.compat import load
    from gpucheck.explanation import INPUT_LIMIT, decode
    from gpucheck.explanation import explain as explain_text

    if isinstance(text, str):
        raw = text.encode("utf-8", errors="replace")
    elif isinstance(text, bytes):
        raw = text
    else:
        raise TypeError(f"text: expected str or bytes, not {type(text).__name__}")
    if snapshot is not None and not isinstance(snapshot, Snapshot):
        raise TypeError(f"snapshot: expected a Snapshot, not {type(snapshot).__name__}")
    if len(raw) > INPUT_LIMIT:
        raise ValueError("text: larger than 16 MiB; give the part of the log around the error")
    return explain_text(decode(raw), load(tuple(compat_dirs)), snapshot, name="text")


def install_plan(
    packages: Sequence[str],
    snapshot: Snapshot | None = None,
    *,
    gpus: Sequence[str] = (),
    driver: str | None = None,
    python: str | None = None,
    os: str | None = None,
    installer: str = "pip",
    compat_dirs: Sequence[str] = (),
) -> InstallAnswer:
    """The build of each package ("torch", "torch>=2.4", "tensorflow", "jax", "cupy", ...) that runs
    on a machine, and the installer's commands, as `gpucheck install --json` answers: a plan,
    nothing is installed. The machine: one described (gpus as nvidia-smi names them, driver,
    python "3.11", os "linux" or "windows": any of them describes one, as the command line's
    options do), else `snapshot`, else this one probed; a described machine and a snapshot
    together are refused. Bad input raises ValueError."""
    from gpucheck.compat import load
    from gpucheck.install.commands import INSTALLERS
    from gpucheck.install.flow import answer_for
    from gpucheck.install.machine import Described, described, from_snapshot
    from gpucheck.install.request import parse_wanted

    if isinstance(packages, str):
        raise TypeError("packages: expected a list of package names, not one string")
    if installer not in INSTALLERS:
        raise ValueError(f"installer: {installer!r} is not one of {', '.join(INSTALLERS)}")
    compat = load(tuple(compat_dirs))
    wanted = parse_wanted(list(packages))
    if gpus or driver is not None or python is not None or os is not None:
        if snapshot is not None:
            raise ValueError("gpus/driver/python/os describe another machine: drop snapshot")
        given = Described(gpus=tuple(gpus), driver=driver, python=python, os=os or "linux")
        machine = described(compat, given)
    else:
        machine = from_snapshot(
            snapshot if snapshot is not None else probe_here(15.0, None), compat
        )
    return answer_for(compat, machine, wanted, installer, "the installer argument")


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


def _job_pids(pids: object) -> tuple[int, ...]:
    """job_pids: process ids (the request judges their values as --job-pids' own)."""
    if isinstance(pids, (str, bytes)) or not hasattr(pids, "__iter__"):
        raise TypeError(f"job_pids: expected a list of process ids, not {pids!r}")
    found = []
    for pid in pids:
        if isinstance(pid, bool) or not isinstance(pid, int):
            raise TypeError(f"job_pids: expected process ids (int), not {pid!r}")
        found.append(pid)
    return tuple(found)
