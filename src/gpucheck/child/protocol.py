"""The child side of the probe protocol (the parent's side is run.py, beside it), shared by
every child script, whichever package owns it:

- stdout: one JSON object per line, flushed at once (a crash loses only what came after);
- stderr: "@ <step>" written unbuffered before each risky call, so the parent can say where the
  child hung or died; anything else on stderr is the child's own message;
- argv[1]: the parent's options as one JSON value, where a script takes any.

Standard library only; no gpucheck imports; Python 3.8+ (the scripts run under the user's
interpreter, with -S). A child script lives in its package's `scripts/` folder and imports this
module relatively (`from . import protocol`): imported as a module, that folder's `__init__`
hands it this module; run as a script, it first makes itself the package those imports come
from, its own folder first and this one (gpucheck/child, two folders up) second:

    if not __package__:  # run as a script: the package of its relative imports is its own
        # folder, then gpucheck/child/ (protocol.py, which every child script shares)
        _FOLDER = os.path.dirname(os.path.realpath(__file__))
        __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

so the modules load as `__main__.protocol`, `__main__.bench_common` ...: never through sys.path
(where a file beside the scripts could shadow a module of the target interpreter, and which
PYTHONSAFEPATH leaves without the script's folder), and under names no module of the target
uses. A script's folder holds no protocol.py of its own (the architecture test keeps it so)."""

from __future__ import annotations

import contextlib
import json
import os
import sys

TYPE_CHECKING = False  # mypy treats this name as True; typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

MAX_LINE = 500  # characters of an error kept in one line
OUT_FD = 1
STEP_MARK = "@ "  # a stderr line that starts so names the step just begun
# The file descriptor a gated child waits on for the parent's word (run.Gate): "go", or
# "stop <reason>"; end of file (a dead parent) reads as stop.
GATE_FD_ENV = "GPUCHECK_GATE_FD"
# Where "@ step" lines go: the parent's stderr, even while a script captures fd 2 itself
# (deep_capture.Capture points this at its saved copy of the parent's pipe).
STEP_FD = 2

# Run as a script, Python put the script's folder first on sys.path: take it off, so that
# nothing beside the scripts shadows a module of the target interpreter and the folder is not
# reported as part of the environment. That folder is the first of the package this module is
# imported from (the script itself, as `__main__`); imported on its own, this one's.
_PACKAGE = sys.modules.get(__name__.rpartition(".")[0])
_FOLDERS = getattr(_PACKAGE, "__path__", None) or [os.path.dirname(os.path.realpath(__file__))]
if sys.path and os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(_FOLDERS[0]):
    del sys.path[0]


def step(name: str, gpu: int | None = None) -> None:
    """Announce the next risky call ("@ nvmlInit", "@ nvmlDeviceGetName gpu=1")."""
    where = "" if gpu is None else f" gpu={gpu:d}"
    with contextlib.suppress(OSError):
        os.write(STEP_FD, f"{STEP_MARK}{name}{where}\n".encode("utf-8", "replace"))


def emit(record: Any) -> bool:
    """One record as one JSON line on stdout; False when stdout is gone (the parent ended).
    What JSON cannot hold is written as its str()."""
    try:
        sys.stdout.write(json.dumps(record, default=str) + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        return False
    return True


def arguments(argv: list[str], default: Any) -> Any:
    """The parent's options (argv[1], one JSON value), `default` where none were given.
    ValueError where they are not JSON."""
    return json.loads(argv[1]) if len(argv) > 1 else default


def trim(text: str, limit: int = MAX_LINE) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(exc: BaseException) -> str:
    """The exception, as "Type: message" (its whole message)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def one_line(exc: BaseException, limit: int = MAX_LINE, whole: bool = False) -> str:
    """The exception in one line of at most `limit` characters: its message's first line, or
    with `whole` all of it, white space folded."""
    text = str(exc).strip()
    if whole:
        text = " ".join(text.split())
    elif text:
        text = text.splitlines()[0].strip()
    name = type(exc).__name__
    return trim(f"{name}: {text}" if text else name, limit)


def nvml_error_name(exc: BaseException) -> str:
    """pynvml's error class without its prefix: NVMLError_GpuIsLost -> GpuIsLost."""
    name = type(exc).__name__
    return name[len("NVMLError_") :] if name.startswith("NVMLError_") else name
