"""The `gpucheck` program's entry point: everything the command line does runs inside it, the
imports included, so that Ctrl-C anywhere ends with "gpucheck: interrupted" and exit 130, a
closed pipe or a full disk with one line, a closed or odd standard stream with its documented
exit code, and nothing with a traceback (unless GPUCHECK_DEBUG=1).

Only the program imports this module (the console script, `python -m gpucheck`), so it takes
over Ctrl-C as soon as it is imported: from then on, until main() has set up its own handling,
there is nothing to clean up and a Ctrl-C ends the program at once. What runs before this
module's first line (the interpreter's start, the console script's `import re`) is outside any
program's reach.
"""

# (No `from __future__ import annotations`: it is an import too, of __future__.)
import os
import sys

TYPE_CHECKING = False  # (typing's import is what a Ctrl-C at start-up used to land in)
if TYPE_CHECKING:
    import signal as _signal  # (the same functions, typed)
    from collections.abc import Callable
    from types import FrameType
    from typing import NoReturn
else:
    try:  # CPython's signal functions, loaded with the interpreter: no import before the handler
        import _signal
    except ImportError:  # pragma: no cover  (another interpreter)
        import signal as _signal

# ExitStatus.INTERRUPTED (exit_status.py), spelled as the shells' rule it follows: a Ctrl-C
# can come before that module is imported.
_INTERRUPTED = 128 + _signal.SIGINT


def _interrupted() -> "NoReturn":
    try:  # noqa: SIM105  (a second Ctrl-C while saying so changes nothing)
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    except ValueError:
        pass
    try:
        if sys.stderr is not None:
            sys.stderr.write("gpucheck: interrupted\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(_INTERRUPTED)  # past this point nothing is left to clean up


def _on_sigint_early(signum: int, frame: "FrameType | None") -> None:
    if globals().get("_IGNORED"):  # (between taking Ctrl-C over and giving it back: below)
        return
    _interrupted()  # before main(): nothing started, nothing to clean up


# Ctrl-C is taken over by this program's first call (gpucheck/__init__.py makes none): Python
# runs the handler of a signal that came earlier when a call returns, and finds ours there. A
# Ctrl-C at any gpucheck line is therefore gpucheck's; asking first (getsignal) would run the
# interpreter's handler at that call, and show its traceback.
try:
    _PREVIOUS = _signal.signal(_signal.SIGINT, _on_sigint_early)
    _MAIN_THREAD = True
except ValueError:  # not the main thread (embedded): keep the default
    _PREVIOUS = _signal.getsignal(_signal.SIGINT)
    _MAIN_THREAD = False
# Started with Ctrl-C ignored (`gpucheck doctor &` in a script, nohup): it is not for us, as
# the interpreter itself judged (it installs its handler only where SIGINT was not ignored).
_IGNORED = _PREVIOUS is not _signal.default_int_handler
if _IGNORED and _MAIN_THREAD and _PREVIOUS is not None:
    _signal.signal(_signal.SIGINT, _PREVIOUS)


def _take_sigint(handler: "Callable[[int, FrameType | None], object]") -> None:
    if not _IGNORED:
        try:  # noqa: SIM105  (contextlib's import would come before the handler)
            _signal.signal(_signal.SIGINT, handler)
        except ValueError:  # not the main thread (embedded): keep the default
            pass


from gpucheck.exit_status import ExitStatus  # noqa: E402  (after the handler: see above)

_SEEN: list[int] = []  # a Ctrl-C arrived (even one some library code swallowed)


def _on_sigint(signum: int, frame: "FrameType | None") -> None:
    # Probe children run in their own sessions (so that a timeout kills their whole group),
    # hence do not get the terminal's Ctrl-C: end them now, or waiting threads would wait.
    child = sys.modules.get("gpucheck.child.run")
    if child is not None:
        child.kill_all()
    if _SEEN:  # the second Ctrl-C: the first one's unwinding is not waited for
        _interrupted()
    _SEEN.append(signum)
    raise KeyboardInterrupt


def _on_termination(signum: int, frame: "FrameType | None") -> None:
    """SIGTERM or SIGHUP (a scheduler's timeout, a closed terminal): the probe children, in
    sessions of their own, would outlive us (a hung driver call holds them); end them, then
    end as the signal would have, so the exit status stays the one shells report (128+N)."""
    child = sys.modules.get("gpucheck.child.run")
    if child is not None:
        child.kill_all()
    _signal.signal(signum, _signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def main() -> "NoReturn":
    try:
        code = _run()
    except BaseException as exc:
        # A Ctrl-C, even one that library code turned into another exception (an import
        # interrupted inside a class body ends as RuntimeError), is "interrupted".
        if _SEEN or isinstance(exc, KeyboardInterrupt):
            _interrupted()
        if isinstance(exc, SystemExit) or os.environ.get("GPUCHECK_DEBUG"):
            raise
        from gpucheck.outputs import StdoutError

        if isinstance(exc, StdoutError):
            _say(f"cannot write to standard output: {exc.strerror}")
            os._exit(ExitStatus.OUTPUT)
        # (cli.run turns every error of a command into its line: this is start-up's own)
        _say(f"internal error: {type(exc).__name__}: {exc}")
        os._exit(ExitStatus.INTERNAL)
    if _SEEN:
        _interrupted()
    os._exit(code)


def _say(message: str) -> None:
    try:
        sys.stderr.write(f"gpucheck: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # (stderr unusable: the exit code still says it)


def _unraisable(info: "sys.UnraisableHookArgs") -> None:
    # A Ctrl-C raised where Python cannot propagate it (a __del__, a weakref callback) would be
    # printed as "Exception ignored" and lost: it is the interruption it is.
    if isinstance(info.exc_value, KeyboardInterrupt):
        _interrupted()
    sys.__unraisablehook__(info)


def _run() -> int:
    import contextlib
    import gc

    # Start-up creates ~100k long-lived objects (modules, classes, typer's command) and the
    # default thresholds collect over them dozens of times for nothing. Collections still
    # run, rarer, so that a long watch or fleet stays bounded.
    gc.set_threshold(50_000, 20, 10)
    _take_sigint(_on_sigint)
    for signum in (_signal.SIGTERM, _signal.SIGHUP):  # (watch puts its own clean stop on TERM)
        if _signal.getsignal(signum) == _signal.SIG_DFL:
            with contextlib.suppress(ValueError):
                _signal.signal(signum, _on_termination)
    sys.unraisablehook = _unraisable
    from gpucheck.outputs import StdoutError, usable_standard_streams

    usable_standard_streams()
    try:
        from gpucheck.cli import run

        code = run(sys.argv[1:])
        try:
            sys.stdout.flush()
        except StdoutError as exc:  # what a command wrote straight to stdout (help, a table)
            if code != ExitStatus.OUTPUT:  # (not said yet)
                _say(f"cannot write to standard output: {exc.strerror}")
                code = ExitStatus.OUTPUT
    except BrokenPipeError:
        code = ExitStatus.OK  # (the reader went away: the exit code still tells the result)
    with contextlib.suppress(OSError, ValueError):
        # Nothing more (nor a late flush) may fail on a pipe whose reader has gone.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    # The work is done: a late Ctrl-C still ends as "interrupted", not by the signal.
    _take_sigint(lambda signum, frame: _interrupted())
    # Nothing is left to clean up (output written and closed, children reaped), so main
    # skips the interpreter's teardown of every module and object.
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    return code
