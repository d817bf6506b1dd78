"""What the commands' parsers share: option types, and the input and output helpers they name
(inputs.py, outputs.py), re-exported for the command modules."""

from __future__ import annotations

from typing import Annotated

import typer

from gpucheck.cli import completion
from gpucheck.inputs import UserError as UserError
from gpucheck.inputs import load_compat as load_compat
from gpucheck.inputs import probe_options as probe_options
from gpucheck.inputs import read_input as read_input
from gpucheck.inputs import read_snapshot as read_snapshot
from gpucheck.outputs import OutputError as OutputError
from gpucheck.outputs import output_target as output_target
from gpucheck.outputs import quiet_stdout as quiet_stdout
from gpucheck.outputs import same_file as same_file
from gpucheck.outputs import write_output as write_output

TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        min=0.5,
        max=600,
        help="Seconds each probe may take (they run side by side).",
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
PythonOpt = Annotated[
    str | None,
    typer.Option(
        "--python",
        metavar="PATH",
        help="Probe the frameworks of this interpreter (default: gpucheck's own and the active "
        "virtualenv/conda env).",
        autocompletion=completion.python_paths,
    ),
]
PythonsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--python",
        metavar="PATH",
        help="Probe the frameworks of these interpreters, side by side (repeatable; an env's "
        "folder, a glob such as '~/envs/*', or @FILE: one a line). Default: gpucheck's own and "
        "the active virtualenv/conda env.",
        autocompletion=completion.python_paths,
    ),
]
OutputOpt = Annotated[
    str | None,
    typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Answer as JSON (keys are stable).")]
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
