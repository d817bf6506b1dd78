"""The `gpucheck` command line.

Errors are one line on stderr and a documented exit code (see gpucheck.report): 2 for bad
input, 3 when gpucheck itself broke. A traceback is shown only with GPUCHECK_DEBUG=1.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, NoReturn

import typer

from gpucheck import __version__
from gpucheck.report import EXIT_INTERNAL, EXIT_USAGE

if TYPE_CHECKING:
    from gpucheck.compat import Compat
    from gpucheck.probes import ProbeOptions
    from gpucheck.snapshot import Snapshot

app = typer.Typer(
    name="gpucheck",
    help="Is this machine ready to run deep learning on its NVIDIA GPUs? If not, what to change.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class UserError(Exception):
    """Bad input: reported as one line, exit 2."""


# Binary units for the bare letters (40G = 40 GiB, as memory is sold and nvidia-smi shows it);
# decimal for the explicit SI forms.
UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kib": 1024,
    "kb": 1000,
    "m": 1024**2,
    "mib": 1024**2,
    "mb": 1000**2,
    "g": 1024**3,
    "gib": 1024**3,
    "gb": 1000**3,
    "t": 1024**4,
    "tib": 1024**4,
    "tb": 1000**4,
}


def parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else None
    if not match or unit not in UNITS:
        raise UserError(
            f"--min-memory: {text!r} is not a size (examples: 40GiB, 24G, 80GB, 16384MiB)"
        )
    return int(float(match.group(1)) * UNITS[unit])


def parse_compute_capability(text: str) -> str:
    if not re.fullmatch(r"\d{1,2}(\.\d{1,2})?", text.strip()):
        raise UserError(
            f"--min-compute-capability: {text!r} is not a compute capability (like 8.0)"
        )
    major, _, minor = text.strip().partition(".")
    return f"{int(major)}.{int(minor or 0)}"


def _open_output(path: str | None) -> tuple[IO[str], str | None]:
    """stdout, or a temporary file beside `path` that replaces it only once fully written."""
    if path is None or path == "-":
        return sys.stdout, None
    target = Path(path)
    if target.is_dir():
        raise UserError(f"--output: {path} is a folder")
    if not target.parent.is_dir():
        raise UserError(f"--output: folder {target.parent} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise UserError(f"--output: cannot write in {target.parent}: {exc.strerror}") from None
    # mkstemp makes 0600; a report is read by collectors running as other users.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return os.fdopen(fd, "w", encoding="utf-8"), tmp


def _finish_output(stream: IO[str], tmp: str | None, path: str | None) -> None:
    if tmp is None or path is None:
        stream.flush()
        return
    stream.close()
    os.replace(tmp, path)


def _write(path: str | None, write: Callable[[IO[str]], object]) -> None:
    stream, tmp = _open_output(path)
    try:
        write(stream)
        _finish_output(stream, tmp, path)
    except BrokenPipeError:
        # The reader went away (gpucheck doctor | head): the exit code still tells the result.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except BaseException:
        if tmp is not None:
            stream.close()
            os.unlink(tmp)
        raise


def _read_snapshot(path: str) -> Snapshot:
    from gpucheck.snapshot import SnapshotError, loads

    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read(64 * 1024 * 1024 + 1)
    except FileNotFoundError:
        raise UserError(f"--from: {path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"--from: {path} is a folder") from None
    except UnicodeDecodeError:
        raise UserError(f"--from: {path} is not a gpucheck snapshot (not UTF-8 text)") from None
    except OSError as exc:
        raise UserError(f"--from: cannot read {path}: {exc.strerror}") from None
    if len(text) > 64 * 1024 * 1024:
        raise UserError(f"--from: {path} is too large to be a snapshot (over 64 MiB)")
    try:
        return loads(text)
    except SnapshotError as exc:
        raise UserError(f"--from: {path}: {exc}") from None


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
    ),
]


def _probe_options(timeout: float, python: str | None, deep: bool) -> ProbeOptions:
    from gpucheck.probes import ProbeOptions
    from gpucheck.probes.frameworks import PythonNotFound, interpreters

    options = ProbeOptions(timeout=timeout, python=python, deep=deep)
    try:
        interpreters(options.env, python)  # a bad --python is a usage error, not a finding
    except PythonNotFound as exc:
        raise UserError(str(exc)) from None
    return options


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


@app.command()
def doctor(
    json_out: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="text, json or junit.", metavar="FORMAT")
    ] = "text",
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write the report to FILE instead of stdout."
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show the evidence of passing checks too.")
    ] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too (exit 1).")] = False,
    from_file: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="FILE",
            help="Diagnose a saved snapshot (from `gpucheck snapshot`, or - for stdin).",
        ),
    ] = None,
    min_gpus: Annotated[
        int | None,
        typer.Option("--min-gpus", min=1, metavar="N", help="Require at least N usable GPUs."),
    ] = None,
    min_memory: Annotated[
        str | None,
        typer.Option(
            "--min-memory",
            metavar="SIZE",
            help="Require this much memory on every GPU (40GiB, 80GB).",
        ),
    ] = None,
    min_cc: Annotated[
        str | None,
        typer.Option(
            "--min-compute-capability",
            metavar="X.Y",
            help="Require this compute capability on every GPU (8.0).",
        ),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only", metavar="ID", help="Run only these checks (id or prefix, repeatable)."
        ),
    ] = None,
    skip: Annotated[
        list[str] | None,
        typer.Option("--skip", metavar="ID", help="Skip these checks (id or prefix, repeatable)."),
    ] = None,
    timeout: TimeoutOpt = 15.0,
    compat_dir: CompatDirOpt = None,
    deep: DeepOpt = False,
    python: PythonOpt = None,
) -> None:
    """Check the GPU, driver, CUDA, cuDNN and the frameworks; print problems with their fixes.

    Exit codes: 0 ready, 1 a check failed (or warned, with --strict), 2 usage error or
    unreadable snapshot, 3 gpucheck itself broke.
    """
    from gpucheck import checks
    from gpucheck.report import Report
    from gpucheck.report.formats import FORMATS

    fmt = "json" if json_out else fmt
    if fmt not in FORMATS:
        raise UserError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    requirements = checks.Requirements(
        min_gpus=min_gpus,
        min_memory_bytes=parse_size(min_memory) if min_memory is not None else None,
        min_memory_text=min_memory,
        min_compute_capability=parse_compute_capability(min_cc) if min_cc is not None else None,
    )
    try:
        selected = checks.select(only or [], skip or [])
    except checks.SelectionError as exc:
        raise UserError(str(exc)) from None
    if from_file is not None:
        if deep or python:
            raise UserError("--from diagnoses a saved snapshot; --deep and --python probe this one")
        snapshot = _read_snapshot(from_file)
    else:
        from gpucheck.probes import collect

        snapshot = collect(_probe_options(timeout, python, deep))
    from gpucheck.compat import CompatError

    try:
        ctx = checks.Context(snapshot, requirements, _compat=_compat(compat_dir))
        findings = checks.run(ctx, selected)
    except CompatError as exc:
        raise UserError(f"compat data: {exc}") from None
    report = Report(snapshot, findings, strict=strict, from_file=from_file)
    _write(output, lambda stream: FORMATS[fmt](report, stream, verbose))
    raise typer.Exit(report.exit_code)


@app.command()
def snapshot(
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write the snapshot to FILE instead of stdout."
        ),
    ] = None,
    timeout: TimeoutOpt = 15.0,
    deep: DeepOpt = False,
    python: PythonOpt = None,
) -> None:
    """Write the facts alone, as JSON (for `doctor --from` here or on another machine)."""
    from gpucheck.probes import collect
    from gpucheck.snapshot import dumps

    snap = collect(_probe_options(timeout, python, deep))
    _write(output, lambda stream: stream.write(dumps(snap)))


compat_app = typer.Typer(
    help="Ask the compatibility data: which versions fit which driver, CUDA and GPU.",
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(compat_app, name="compat")


def _compat(dirs: list[str] | None) -> Compat:
    from gpucheck.compat import CompatError, load

    try:
        return load(tuple(dirs or ()))
    except CompatError as exc:
        raise UserError(f"compat data: {exc}") from None


def _answer(
    ctx: typer.Context,
    kind: str,
    subject: str,
    as_json: bool,
    dirs: list[str] | None,
    **kw: str,
) -> None:
    import json

    from gpucheck.compat import CompatError, answers

    group_dirs = (ctx.obj or {}).get("compat_dir", []) if isinstance(ctx.obj, dict) else []
    compat = _compat([*group_dirs, *(dirs or [])])
    try:
        answer = getattr(answers, kind)(compat, subject, **kw)
    except CompatError as exc:
        raise UserError(str(exc)) from None
    data = answer.to_dict()
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    for key, value in data.items():
        if key == "sources":
            continue
        typer.echo(f"{key}: {_plain(value)}")
    for source in data["sources"]:
        typer.echo(f"source: {source}")


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
    compat_dir: CompatDirOpt = None,
) -> None:
    """Ask the compatibility data (compat/*.toml, every row cited)."""
    ctx.obj = {
        "compat_dir": compat_dir or []
    }  # for the subcommand: compat --compat-dir D torch ...
    if ctx.invoked_subcommand is not None:
        return
    if not about:
        sys.stdout.write(ctx.get_help() + "\n")
        raise typer.Exit(EXIT_USAGE)
    import json

    from gpucheck.compat.answers import about as about_data

    data = about_data(_compat(compat_dir))
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    typer.echo(f"data as of: {data['data_as_of']}")
    typer.echo(f"folders: {', '.join(data['folders'])}")
    for name, info in data["files"].items():
        counts = ", ".join(f"{n} {t}" for t, n in info["rows"].items())
        typer.echo(f"{name}: {counts} (as of {info['data_as_of']})")
    typer.echo(f"distinct sources cited: {data['distinct_sources']}")


@compat_app.command("tensorflow")
def compat_tensorflow(
    ctx: typer.Context, version: str, as_json: JsonOpt = False, compat_dir: CompatDirOpt = None
) -> None:
    """A TensorFlow release: its tested CUDA, cuDNN and Python range."""
    _answer(ctx, "tensorflow", version, as_json, compat_dir)


@compat_app.command("torch")
def compat_torch(
    ctx: typer.Context, version: str, as_json: JsonOpt = False, compat_dir: CompatDirOpt = None
) -> None:
    """A PyTorch release (2.5.1, or 2.5.1+cu124): CUDA variants, Python range, architectures."""
    _answer(ctx, "torch", version, as_json, compat_dir)


@compat_app.command("jax")
def compat_jax(
    ctx: typer.Context, version: str, as_json: JsonOpt = False, compat_dir: CompatDirOpt = None
) -> None:
    """A jaxlib release: the CUDA and cuDNN it needs."""
    _answer(ctx, "jax", version, as_json, compat_dir)


@compat_app.command("cudnn")
def compat_cudnn(
    ctx: typer.Context, version: str, as_json: JsonOpt = False, compat_dir: CompatDirOpt = None
) -> None:
    """A cuDNN release: supported CUDA versions, drivers and GPUs."""
    _answer(ctx, "cudnn", version, as_json, compat_dir)


@compat_app.command("driver")
def compat_driver(
    ctx: typer.Context,
    version: str,
    as_json: JsonOpt = False,
    compat_dir: CompatDirOpt = None,
    windows: Annotated[bool, typer.Option("--windows", help="A Windows driver.")] = False,
) -> None:
    """A driver version: the newest CUDA, torch and TensorFlow builds that run on it."""
    _answer(ctx, "driver", version, as_json, compat_dir, os="windows" if windows else "linux")


@compat_app.command("cuda")
def compat_cuda(
    ctx: typer.Context, version: str, as_json: JsonOpt = False, compat_dir: CompatDirOpt = None
) -> None:
    """A CUDA release: its minimum drivers and the GPUs it can build for."""
    _answer(ctx, "cuda", version, as_json, compat_dir)


@compat_app.command("gpu")
def compat_gpu(
    ctx: typer.Context, name: str, as_json: JsonOpt = False, compat_dir: CompatDirOpt = None
) -> None:
    """A GPU by name (as nvidia-smi prints it): compute capability and the newest builds for it."""
    _answer(ctx, "gpu", name, as_json, compat_dir)


@app.command()
def schema() -> None:
    """Print the JSON Schema of `doctor --json` reports."""
    from gpucheck.schema import SCHEMA_FILE

    sys.stdout.write(SCHEMA_FILE.read_text(encoding="utf-8"))


@app.command(name="checks")
def list_checks() -> None:
    """List every check: its id (for --only / --skip), section and what it looks at."""
    from gpucheck import checks

    for chk in checks.all_checks():
        typer.echo(f"{chk.id:34} {chk.section.value:13} {chk.summary}")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpucheck {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """gpucheck: is this machine ready for deep learning on NVIDIA GPUs?"""


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"gpucheck: {message}\n")
    sys.exit(code)


def main() -> None:
    command = typer.main.get_command(app)
    try:
        code = command.main(args=sys.argv[1:], prog_name="gpucheck", standalone_mode=False)
    except UserError as exc:
        _fail(str(exc), EXIT_USAGE)
    except (typer.Exit, SystemExit) as exc:
        sys.exit(exc.exit_code if isinstance(exc, typer.Exit) else exc.code)
    except (typer.Abort, KeyboardInterrupt):
        _fail("interrupted", 130)
    except BrokenPipeError:
        # The reader went away before the report was written (gpucheck checks | head).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except Exception as exc:
        # Typer's parser errors (click's, vendored in newer typer) carry their own message and
        # exit code; matched by shape so that no private module is imported.
        if type(exc).__name__ == "NoArgsIsHelpError":
            ctx = getattr(exc, "ctx", None)
            sys.stdout.write((ctx.get_help() if ctx else str(exc)) + "\n")
            sys.exit(EXIT_USAGE)
        code = getattr(exc, "exit_code", None)
        if hasattr(exc, "format_message") and isinstance(code, int):
            hint = f" (see: gpucheck {_subcommand()}--help)" if code == EXIT_USAGE else ""
            _fail(f"{exc.format_message()}{hint}", code or EXIT_USAGE)
        if os.environ.get("GPUCHECK_DEBUG"):
            raise
        _fail(
            f"internal error: {type(exc).__name__}: {exc} (a gpucheck bug; GPUCHECK_DEBUG=1 shows "
            "the traceback)",
            EXIT_INTERNAL,
        )
    sys.exit(code if isinstance(code, int) else 0)


def _subcommand() -> str:
    sub = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    return f"{sub} " if sub in ("doctor", "snapshot", "schema", "checks", "compat") else ""
