"""`gpucheck compat ...`: ask the compatibility data (compat/*.toml, every row cited)."""

# No `from __future__ import annotations`: typer would compile and evaluate the option
# annotations on every start-up (see cli/doctor.py).
import sys
from collections.abc import Callable
from typing import IO, Annotated, Any

import typer

from gpucheck.cli.common import (
    CompatDirOpt,
    JsonOpt,
    UserError,
    choose_format,
    format_option,
    load_compat,
    write_output,
)
from gpucheck.compat import CompatError, answers
from gpucheck.compat.answers import about as about_data
from gpucheck.exit_status import ExitStatus
from gpucheck.model.frameworks import JAX, TENSORFLOW, TORCH
from gpucheck.report.output_format import Format, FunctionFormat, format_table, write_json
from gpucheck.report.text import printable

FormatOpt = Annotated[str | None, format_option("text or json.")]

compat_app = typer.Typer(
    help="Ask the compatibility data: which versions fit which driver, CUDA and GPU.",
    add_completion=False,
    rich_markup_mode=None,
)


# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "answered",
}


def _answer(
    ctx: typer.Context,
    kind: str,
    subject: str,
    as_json: bool,
    fmt: str | None,
    dirs: list[str] | None,
    **kw: str,
) -> None:
    group = ctx.obj if isinstance(ctx.obj, dict) else {}
    # `compat --json torch 2.5.1` and `compat torch 2.5.1 --json` ask the same.
    chosen = choose_format(
        ANSWER_FORMATS, fmt or group.get("format"), as_json or bool(group.get("json"))
    )
    compat = load_compat([*group.get("compat_dir", []), *(dirs or [])])
    try:
        answer = getattr(answers, kind)(compat, subject, **kw)
    except CompatError as exc:
        raise UserError(str(exc)) from None
    data = answer.to_dict()
    write_output(None, lambda stream: chosen.write(data, stream))


def _answer_text(data: dict[str, Any], stream: IO[str]) -> None:
    lines = [f"{key}: {_plain(value)}" for key, value in data.items() if key != "sources"]
    lines += [f"source: {source}" for source in data["sources"]]
    # What the user asked about is echoed with its control characters escaped.
    stream.write("".join(printable(line) + "\n" for line in lines))


def _about_text(data: dict[str, Any], stream: IO[str]) -> None:
    lines = [f"data as of: {data['data_as_of']}", f"folders: {', '.join(data['folders'])}"]
    for name, info in data["files"].items():
        counts = ", ".join(f"{n} {t}" for t, n in info["rows"].items())
        lines.append(f"{name}: {counts} (as of {info['data_as_of']})")
    lines.append(f"distinct sources cited: {data['distinct_sources']}")
    # What the user asked about is echoed with its control characters escaped.
    stream.write("".join(printable(line) + "\n" for line in lines))


# The formats of an answer (compat KIND ...) and of `compat --about`; text is the default.
ANSWER_FORMATS: dict[str, Format[dict[str, Any]]] = format_table(
    FunctionFormat("text", _answer_text), FunctionFormat("json", write_json)
)
ABOUT_FORMATS: dict[str, Format[dict[str, Any]]] = format_table(
    FunctionFormat("text", _about_text), FunctionFormat("json", write_json)
)


def _plain(value: object) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value) or "none"
    if isinstance(value, dict):
        return "; ".join(f"{k} {_plain(v)}" for k, v in value.items()) or "none"
    return str(value)


@compat_app.callback(invoke_without_command=True)
def compat(
    ctx: typer.Context,
    about: Annotated[
        bool, typer.Option("--about", help="The data's date, files and counts.")
    ] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Ask the compatibility data (compat/*.toml, every row cited)."""
    # For the subcommand: `compat --compat-dir D --json torch ...` applies to it too.
    ctx.obj = {"compat_dir": compat_dir or [], "json": as_json, "format": fmt}
    if ctx.invoked_subcommand is not None:
        return
    if not about:
        sys.stdout.write(ctx.get_help() + "\n")
        raise typer.Exit(ExitStatus.USAGE)

    chosen = choose_format(ABOUT_FORMATS, fmt, as_json)
    data = about_data(load_compat(compat_dir))
    write_output(None, lambda stream: chosen.write(data, stream))


def _release_command(kind: str, argument: str = "version") -> Callable[..., None]:
    """`compat KIND VERSION` (or another `argument`: a GPU's name): what compat.answers tells
    of one release of a framework, a library or CUDA, or of one GPU."""

    def command(
        ctx: typer.Context,
        subject: Annotated[str, typer.Argument(metavar=argument)],
        as_json: JsonOpt = False,
        fmt: FormatOpt = None,
        compat_dir: CompatDirOpt = None,
    ) -> None:
        _answer(ctx, kind, subject, as_json, fmt, compat_dir)

    return command


# The subjects asked about by release, with their help; `driver` takes an option of its own.
for _kind, _help in (
    (TENSORFLOW.key, "A TensorFlow release: its tested CUDA, cuDNN and Python range."),
    (
        TORCH.key,
        "A PyTorch release (2.5.1, or 2.5.1+cu124): CUDA variants, Python range, architectures.",
    ),
    (JAX.key, "A jaxlib release: the CUDA and cuDNN it needs."),
    ("cudnn", "A cuDNN release: supported CUDA versions, drivers and GPUs."),
):
    compat_app.command(_kind, help=_help)(_release_command(_kind))


@compat_app.command("driver")
def compat_driver(
    ctx: typer.Context,
    version: str,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    compat_dir: CompatDirOpt = None,
    windows: Annotated[bool, typer.Option("--windows", help="A Windows driver.")] = False,
) -> None:
    """A driver version: the newest CUDA, torch and TensorFlow builds that run on it."""
    os_name = "windows" if windows else "linux"
    _answer(ctx, "driver", version, as_json, fmt, compat_dir, os=os_name)


# After driver in --help, as the commands are listed in the order they are added.
compat_app.command(
    "cuda", help="A CUDA release: its minimum drivers and the GPUs it can build for."
)(_release_command("cuda"))
compat_app.command(
    "gpu",
    help="A GPU by name (as nvidia-smi prints it): compute capability and the newest builds "
    "for it.",
)(_release_command("gpu", "name"))
