"""What the doctor is asked: one typed request that `gpucheck doctor` and `gpucheck.doctor()`
both build, and its one validation. A bad value is a RequestError naming the argument as the
caller spells it (`--min-memory` on the command line, `min_memory` in Python): the command line
prints it as one line and exits 2; to the API it is a ValueError."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from msgspec import Struct

from gpucheck.inputs import (
    MIN_GPUS,
    PROBE_TIMEOUT,
    UserError,
    check_number,
    parse_compute_capability,
    parse_job_pids,
    parse_size,
)
from gpucheck.model.requirements import Requirements

if TYPE_CHECKING:
    from gpucheck.model.snapshot import Snapshot


class RequestError(UserError, ValueError):
    """A bad doctor request: a usage error (exit 2) to the command line, a ValueError to the
    Python API."""


class Caller(enum.Enum):
    """Who asks, which decides how an argument is named in an error."""

    COMMAND_LINE = "cli"
    PYTHON = "api"


# Each request field as the command line's option names it; the API names it as the field.
OPTION_NAMES = {
    "from_file": "--from",
    "pythons": "--python",
    "deep": "--deep",
    "host_id": "--host-id",
    "timeout": "--timeout",
    "min_gpus": "--min-gpus",
    "min_memory": "--min-memory",
    "min_compute_capability": "--min-compute-capability",
    "job_pids": "--job-pids",
}
_PYTHON_NAMES = {"pythons": "python"}  # the API's argument is `python`, one or several


class DoctorRequest(Struct, frozen=True, kw_only=True):
    """One doctor run. The source: this machine (neither `from_file` nor `snapshot`), a saved
    snapshot (`from_file`, "-": stdin) or one in memory (`snapshot`, the API's)."""

    from_file: str | None = None
    snapshot: Snapshot | None = None
    pythons: tuple[str, ...] = ()  # interpreters to probe: paths, env folders, globs, @FILE
    deep: bool = False
    host_id: str | None = None
    timeout: float = 15.0  # seconds each probe may take
    only: tuple[str, ...] = ()  # check ids, prefixes or sections
    skip: tuple[str, ...] = ()
    strict: bool = False
    min_gpus: int | None = None
    min_memory: str | int | None = None  # a size with its unit ("40GiB", "80GB"), or bytes
    min_compute_capability: str | None = None
    # The scheduler's health profile: PIDs as --job-pids' text ("" for none), or as numbers.
    job_pids: str | tuple[int, ...] | None = None
    compat_dirs: tuple[str, ...] = ()
    redact: bool = False
    caller: Caller = Caller.PYTHON

    def name(self, field: str) -> str:
        """`field` as this request's caller names it in an error."""
        if self.caller is Caller.COMMAND_LINE:
            return OPTION_NAMES.get(field, field)
        return _PYTHON_NAMES.get(field, field)

    @property
    def probes_here(self) -> bool:
        """The request probes this machine (it names no saved or given snapshot)."""
        return self.from_file is None and self.snapshot is None


def validate(request: DoctorRequest) -> Requirements:
    """Judge `request` before anything runs, the same for every caller; its requirements,
    parsed. Raises RequestError (a bad value), or TypeError (a number of the wrong type)."""
    name = request.name
    if request.from_file is not None and request.snapshot is not None:
        raise RequestError("give snapshot or from_file, not both")
    if not request.probes_here and (request.deep or request.pythons or request.host_id):
        source = name("from_file") if request.snapshot is None else "snapshot"
        raise RequestError(
            f"{source} diagnoses a saved snapshot; {name('deep')}, {name('pythons')} and "
            f"{name('host_id')} probe this one"
        )
    try:
        check_number(request.timeout, name("timeout"), *PROBE_TIMEOUT)
        if request.min_gpus is not None:
            check_number(request.min_gpus, name("min_gpus"), *MIN_GPUS, integer=True)
        return _requirements(request)
    except RequestError:
        raise
    except (UserError, ValueError) as exc:
        raise RequestError(str(exc)) from None


def _requirements(request: DoctorRequest) -> Requirements:
    name = request.name
    memory = request.min_memory
    memory_bytes = None
    if isinstance(memory, str):
        memory_bytes = parse_size(memory, name("min_memory"), require_unit=True)
    elif memory is not None:
        memory_bytes = int(check_number(memory, name("min_memory"), 1, None, integer=True))
    cc = request.min_compute_capability
    return Requirements(
        min_gpus=request.min_gpus,
        min_memory_bytes=memory_bytes,
        min_memory_text=None if memory is None else str(memory),
        min_compute_capability=None
        if cc is None
        else parse_compute_capability(cc, name("min_compute_capability")),
        job_pids=_job_pids(request.job_pids, name("job_pids")),
    )


def _job_pids(pids: str | tuple[int, ...] | None, name: str) -> frozenset[int] | None:
    """The job PIDs, from --job-pids' text or a list of process ids."""
    if pids is None:
        return None
    if isinstance(pids, str):
        return parse_job_pids(pids, name)
    for pid in pids:
        if pid <= 0:
            raise RequestError(f"{name}: {pid} is not a process id")
    return frozenset(pids)
