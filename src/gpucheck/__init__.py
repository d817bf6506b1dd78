"""gpucheck: is this machine ready to run deep learning on its NVIDIA GPUs, and if not, why.

    >>> import gpucheck
    >>> report = gpucheck.doctor()      # probes, checks, prints nothing
    >>> report.ready, report.problems

The API is loaded on first use (PEP 562), so `import gpucheck` costs next to nothing.
"""

# `import gpucheck` runs nothing but these lines (not even typing's import): the program's
# start passes through here before it can take over Ctrl-C (entry.py).
TYPE_CHECKING = False

__all__ = ["Report", "Snapshot", "__version__", "doctor", "explain", "install_plan", "snapshot"]

if TYPE_CHECKING:
    from typing import Any

    from gpucheck.api import doctor, explain, install_plan, snapshot
    from gpucheck.model.snapshot import Snapshot
    from gpucheck.report.core import Report
    from gpucheck.version import __version__

_LAZY = {
    "doctor": "gpucheck.api",
    "explain": "gpucheck.api",
    "install_plan": "gpucheck.api",
    "snapshot": "gpucheck.api",
    "Report": "gpucheck.report.core",
    "Snapshot": "gpucheck.model.snapshot",
    "__version__": "gpucheck.version",
}


def __getattr__(name: str) -> "Any":
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gpucheck' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
