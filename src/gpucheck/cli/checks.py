"""`gpucheck checks`: every check the doctor runs."""

from __future__ import annotations

from gpucheck.checks.registry import all_checks
from gpucheck.cli.common import write_output
from gpucheck.exit_status import ExitStatus

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "the list was printed",
}


def list_checks() -> None:
    """List every check: its id (for --only / --skip), section and what it looks at."""
    text = "".join(f"{c.id:34} {c.section.value:13} {c.summary}\n" for c in all_checks())
    write_output(None, lambda stream: stream.write(text))
