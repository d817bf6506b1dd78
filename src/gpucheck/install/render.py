"""`gpucheck install` as text: per package the build and why, the releases ruled out (one line
each), what moves with it or breaks, then the commands and the data's date."""

from __future__ import annotations

from typing import IO

from gpucheck.install.answer import InstallAnswer, PackageAnswer
from gpucheck.report.text import printable


class _Printable:
    """Writes each line with its control characters escaped: GPU names, paths and versions
    come from a snapshot (--from) anyone may have written, and a terminal must not run them."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out

    def write(self, text: str) -> None:
        """`text`'s leading and trailing newlines are the layout's; one inside is data's."""
        line = text.strip("\n")
        start = text.index(line) if line else len(text)
        self._out.write(text[:start] + printable(line) + text[start + len(line) :])


def _package(p: PackageAnswer, out: _Printable) -> None:
    if p.requirement is not None:
        build = f", {p.build}" if p.build else ""
        where = f" from {p.index_url}" if p.index_url else " from PyPI"
        out.write(f"{p.name}: {p.release}{build}{where} ({p.requirement})\n")
    else:
        out.write(f"{p.name}: no build in the compat data runs here\n")
    if p.cliff:
        out.write(f"  {p.cliff}\n")
    if p.ruled_out:
        out.write("  ruled out:\n")
        for line in p.ruled_out:
            out.write(f"    {line}\n")
    for note in p.notes:
        out.write(f"  note: {note}\n")


def render_text(answer: InstallAnswer, out: IO[str], dry_run: bool = True) -> None:
    safe = _Printable(out)
    safe.write(f"Install for {answer.machine}\n")
    if answer.gpus:
        safe.write(f"  GPUs: {', '.join(answer.gpus)}; driver {answer.driver or 'not known'}\n")
    else:
        safe.write("  no NVIDIA GPU: the CPU builds\n")
    python = f"Python {answer.python}" if answer.python else "Python not known"
    env = f" ({answer.environment})" if answer.environment else ""
    safe.write(f"  {python}{env}, {answer.os}\n\n")
    for p in answer.packages:
        _package(p, safe)
    for m in answer.moves:
        safe.write(f"moves with it: {m.name} {m.installed} -> {m.requirement} ({m.why})\n")
    for c in answer.conflicts:
        safe.write(f"conflict: {c.why}\n")
    if answer.commands:
        safe.write(f"\nWith {answer.installer} ({answer.installer_why}):\n")
        if answer.pyproject:
            safe.write("  in pyproject.toml:\n")
            for line in answer.pyproject.splitlines():
                safe.write(f"    {line}\n" if line else "\n")
        for line in answer.commands:
            safe.write(f"  {line}\n")
        if dry_run:
            safe.write("Nothing was installed (dry run): --apply runs it, after asking.\n")
    safe.write(f"\nCompat data as of {answer.data_as_of}: releases after it are not known here.\n")
