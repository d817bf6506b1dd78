"""What a job asked of the machine (--min-gpus, --min-memory, --min-compute-capability,
--job-pids).

A model record, not the checks': the report carries it (summary.requirements), so that a
report judged again later (`fleet --recheck`) is judged against what was asked.
"""

from __future__ import annotations

from msgspec import Struct


class Requirements(Struct):
    min_gpus: int | None = None
    min_memory_bytes: int | None = None
    min_memory_text: str | None = None  # as the user wrote it, for the report
    min_compute_capability: str | None = None
    # The scheduler's health profile (--job-pids): the PIDs of running jobs. GPU memory and
    # exclusive-process GPUs they hold are their jobs', not a problem; a process of no job
    # holding a GPU is leaked. None: no profile (any holder counts).
    job_pids: frozenset[int] | None = None
