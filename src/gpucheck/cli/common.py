"""What the commands' parsers share: option types, and the input and output helpers they name
(inputs.py, outputs.py), re-exported for the command modules."""

# No `from __future__ import annotations`: typer reads the callbacks' annotations on every run
# (get_type_hints), and strings it would compile and evaluate each time.

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from gpucheck import version
from gpucheck.cli import completion
from gpucheck.inputs import PROBE_TIMEOUT, check_number
from gpucheck.inputs import UserError as UserError
from gpucheck.inputs import load_compat as load_compat
from gpucheck.inputs import probe_here as probe_here
from gpucheck.inputs import probe_options as probe_options
from gpucheck.inputs import python_inputs as python_inputs
from gpucheck.inputs import read_input as read_input
from gpucheck.inputs import read_snapshot as read_snapshot
from gpucheck.outputs import OutputError as OutputError
from gpucheck.outputs import input_as_output as input_as_output
from gpucheck.outputs import output_target as output_target
from gpucheck.outputs import quiet_stdout as quiet_stdout
from gpucheck.outputs import refuse_input_as_output as refuse_input_as_output
from gpucheck.outputs import write_output as write_output
from gpucheck.report.output_format import choose_format as choose_format


def _checked_number(param: typer.CallbackParam, value: float | None) -> float | None:
    """Every number option's callback: the range click checked, and NaN, which passes every
    comparison (`--timeout nan` would be a probe timing out at once), judged by the check the
    Python API shares."""
    if value is None:
        return None
    kind = getattr(param, "type", None)
    name = max(param.opts, key=len) if param.opts else str(param.name)
    try:
        return check_number(
            value,
            name,
            getattr(kind, "min", None) or 0,
            getattr(kind, "max", None),
            integer=isinstance(value, int),
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None


def number_option(*names: str, low: float, high: float | None = None, **kwargs: Any) -> Any:
    """A numeric option (float or int) from `low` to `high` (None: unbounded): click shows
    the range in --help and reads the text; every value is then judged by check_number, so a
    NaN or an infinity is a one-line usage error. Every number option is made here."""
    return typer.Option(*names, min=low, max=high, callback=_checked_number, **kwargs)


def timeout_option(low: float, high: float, about: str) -> Any:
    """--timeout SECONDS from `low` to `high`: every command's time bound, `about` its help."""
    return number_option("--timeout", low=low, high=high, metavar="SECONDS", help=about)


def from_option(about: str) -> Any:
    """--from FILE: what a command reads instead of this machine (`about`: what FILE holds)."""
    return typer.Option("--from", metavar="FILE", help=about)


def gpu_option(metavar: str, about: str, *short: str) -> Any:
    """--gpu (and `short`, if any): which GPUs a command looks at, as `metavar` says."""
    return typer.Option("--gpu", *short, metavar=metavar, help=about)


TimeoutOpt = Annotated[
    float,
    timeout_option(
        PROBE_TIMEOUT[0], PROBE_TIMEOUT[1], "Seconds each probe may take (they run side by side)."
    ),
]
DeepOpt = Annotated[
    bool,
    typer.Option(
        "--deep",
        help="Also import each framework in a child process and run a tiny operation on every "
        "GPU (slower: seconds).",
    ),
]


def _one_python(value: list[str] | None) -> list[str] | None:
    """A command that probes one environment refuses a second --python (rather than take the
    last one quietly); the doctor and snapshot take several (PythonsOpt)."""
    if value and len(value) > 1:
        raise UserError(
            f"--python was given {len(value)} times: this command probes one environment "
            "(the doctor and snapshot take several)"
        )
    return value


def one_python(value: list[str] | None) -> str | None:
    """The one --python of a command that takes one (PythonOpt), or None."""
    checked = _one_python(value)
    return checked[0] if checked else None


def _python_option(about: str, callback: Any = None) -> Any:
    """--python PATH, completed with the interpreters on PATH and the files typed."""
    return typer.Option(
        "--python",
        metavar="PATH",
        help=about,
        autocompletion=completion.python_paths,
        callback=callback,
    )


PythonOpt = Annotated[
    list[str] | None,
    _python_option(
        "Probe the frameworks of this interpreter (one; default: gpucheck's own and the "
        "active virtualenv/conda env).",
        _one_python,
    ),
]


def _checked_output(value: str | None) -> str | None:
    """-o FILE judged before any work (a folder, a missing folder, a file this user may not
    write), as the shell judges `> FILE` before running the command; again when written."""
    if value is not None and value != "-":
        output_target(value)
    return value


PythonsOpt = Annotated[
    list[str] | None,
    _python_option(
        "Probe the frameworks of these interpreters, side by side (repeatable; an env's "
        "folder, a glob such as '~/envs/*', or @FILE: one a line). Default: gpucheck's own and "
        "the active virtualenv/conda env."
    ),
]


def format_option(formats: str, complete: Any = None) -> Any:
    """--format/-f FORMAT, the one option every command with a machine-readable output takes
    (with --json, JsonOpt, the same as --format json): `formats` names the choices in --help,
    `complete` (completion.py) offers them; choose_format picks the one asked for."""
    return typer.Option("--format", "-f", metavar="FORMAT", help=formats, autocompletion=complete)


def output_option(about: str, callback: Any = _checked_output) -> Any:
    """--output/-o FILE (`about`: what goes there), judged before any work (a command that
    opens FILE its own way, as watch appends, passes callback=None)."""
    return typer.Option("--output", "-o", metavar="FILE", help=about, callback=callback)


OutputOpt = Annotated[str | None, output_option("Write to FILE instead of stdout.")]
# Every command's --json: one of its --format values, the same alias with the same words.
JsonOpt = Annotated[bool, typer.Option("--json", help="Same as --format json.")]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Warnings fail too (exit 1).")]
EvidenceOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show the evidence of passing checks too.")
]
CompatDirOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--compat-dir",
        metavar="DIR",
        help="Extra compat folder whose rows override or extend the shipped data (repeatable; "
        "also GPUCHECK_COMPAT_DIR).",
    ),
]


HostIdOpt = Annotated[
    str | None,
    typer.Option(
        "--host-id",
        metavar="ID",
        help="This host's name in the fleet's inventory (default: a hash of /etc/machine-id).",
    ),
]
RedactOpt = Annotated[
    bool,
    typer.Option(
        "--redact",
        help="Replace what identifies a person or site (hostname, user names, serials, UUIDs, "
        "unlisted environment values) so the JSON can be shared publicly.",
    ),
]


def install_extra(extra: str) -> str:
    """The command that installs an optional extra into the interpreter running gpucheck (a
    bare `pip` may be another Python's, outside this venv or pipx env): from a source checkout
    an editable install of that clone, else the published package."""
    pip = f"{shlex.quote(sys.executable)} -m pip install"
    clone = Path(version.__file__).resolve().parents[2]  # src/gpucheck/version.py's root
    pyproject = clone / "pyproject.toml"
    try:
        checkout = 'name = "gpucheck-doctor"' in pyproject.read_text(encoding="utf-8")
    except OSError:
        checkout = False
    if checkout:
        return f"{pip} -e {shlex.quote(f'{clone}[{extra}]')}"
    return f"{pip} {shlex.quote(f'gpucheck-doctor[{extra}]')}"
