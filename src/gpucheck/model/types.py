"""Value types the model's records share."""

# No `from __future__ import annotations`: msgspec would compile and evaluate every string
# annotation when it first decodes these records, on every `doctor --from`.
from typing import Annotated, Literal

import msgspec
from msgspec import Struct

# Integers as C drivers report them (64-bit): a larger one in a snapshot is corrupt, and would
# overflow the float arithmetic of the checks.
Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
# What can only be zero or more (counts, sizes, indices, PIDs, percentages, clocks: unsigned in
# NVML's API): a negative one in a snapshot is corrupt, and would be judged (-1 ECC errors a
# failure, -5 bytes "free"). Temperatures, return codes and exit statuses stay Int.
Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]

# How a probe ran (`ProbeRun.status`): "skipped" means deliberately not run, and why is said.
RunStatus = Literal["ok", "error", "timeout", "crashed", "skipped"]
# How importing a framework or extension in a child ended (`FrameworkRuntime.status`).
ImportStatus = Literal["ok", "import_error", "error", "timeout", "crashed", "skipped"]


class ChildFailure(Struct):
    """How a probe's child process ended badly, as data (its `error` says the same in words)."""

    how: Literal["timeout", "crashed", "exited", "not_started"]
    stage: str | None = None  # the last step it announced before the end ("nvmlInit")
    signal: str | None = None  # crashed: "SIGSEGV", "SIGABRT"
    exit_code: Int | None = None  # exited: its status
    stderr_tail: str | None = None  # its last line on stderr, where it said one


class GpuRef(Struct, frozen=True):
    """One GPU a finding or a fix step concerns, by every name a fleet may key it on."""

    index: int
    uuid: str | None = None
    pci_bus_id: str | None = None
