"""Exit statuses: one enum for every command, documented in docs/exit-codes.md; CI gates, Slurm
health checks and scripts depend on them never changing meaning. A leaf module: it imports
nothing."""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    OK = 0  # nothing failed (with --strict: nothing warned either)
    FAILED = 1  # at least one check failed (or warned, with --strict)
    USAGE = 2  # bad arguments, or a snapshot/compat file that cannot be read
    INTERNAL = 3  # gpucheck itself broke: a check raised, or an unexpected error
    OUTPUT = 4  # the report could not be written (a full disk, a closed device)
    UNKNOWN = 5  # could not tell: a question that decides the answer got none (lost GPU, no driver)
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it
