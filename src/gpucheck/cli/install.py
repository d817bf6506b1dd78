"""`gpucheck install PACKAGE...`: the build of each package that runs on this machine (or a
saved or described one), and the command for the installer in use; --apply runs it through
`gpucheck fix`'s journal."""

from __future__ import annotations

import re
import sys
from typing import Annotated

import typer

from gpucheck.cli import acting
from gpucheck.cli.common import (
    CompatDirOpt,
    JsonOpt,
    OutputOpt,
    TimeoutOpt,
    UserError,
    from_option,
    refuse_input_as_output,
    write_output,
)
from gpucheck.exit_status import ExitStatus
from gpucheck.report.text import printable

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "every package has a build that runs here (and --apply installed it)",
    ExitStatus.FAILED: "a package has no build that runs here, an installed package would "
    "break, or a step of --apply failed",
}
_PYTHON_VERSION = r"[0-9]+\.[0-9]+"


def install(
    packages: Annotated[
        list[str],
        typer.Argument(
            metavar="PACKAGE...",
            help="torch, torchvision, torchaudio, tensorflow, jax, cupy; with constraints as pip "
            "takes them: 'torch==2.5.1', 'torch>=2.4,<2.6'.",
            show_default=False,
        ),
    ],
    from_file: Annotated[
        str | None, from_option("Answer for a saved snapshot or doctor --json report.")
    ] = None,
    gpus: Annotated[
        list[str] | None,
        typer.Option(
            "--gpu",
            metavar="NAME",
            help="Answer for a machine you describe: a GPU as nvidia-smi names it ('RTX 5090', "
            "'H100') or its compute capability ('6.1'); repeatable.",
        ),
    ] = None,
    driver: Annotated[
        str | None,
        typer.Option("--driver", metavar="VERSION", help="The described machine's driver."),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            metavar="X.Y|PATH",
            help="X.Y: the described machine's Python; a path: the interpreter to probe and "
            "install into (default: the active virtualenv/conda env, else gpucheck's own).",
        ),
    ] = None,
    os_name: Annotated[
        str | None,
        typer.Option("--os", metavar="linux|windows", help="The described machine's OS."),
    ] = None,
    forward_compat: Annotated[
        bool,
        typer.Option(
            "--forward-compat",
            help="NVIDIA's cuda-compat package is installed (data-centre GPUs only): a newer "
            "CUDA than the driver's may run.",
        ),
    ] = False,
    installer: Annotated[
        str | None,
        typer.Option(
            "--installer",
            metavar="NAME",
            help="pip, uv-pip, uv-add, conda or mamba (default: detected from the project and "
            "environment).",
        ),
    ] = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    apply: Annotated[
        bool, acting.apply_option("Run the commands in the probed environment, after asking.")
    ] = False,
    yes: acting.YesOpt = False,
    record: acting.RecordOpt = None,
    timeout: TimeoutOpt = 15.0,
    compat_dir: CompatDirOpt = None,
) -> None:
    """Name the build of each package that runs on this machine, and the command for it."""
    from gpucheck.install.flow import InstallRequest, run_install
    from gpucheck.install.machine import Described
    from gpucheck.install.render import render_text

    version = python if python is not None and re.fullmatch(_PYTHON_VERSION, python) else None
    interpreter = python if version is None else None
    describing = bool(gpus) or driver is not None or version is not None or os_name is not None
    if describing and interpreter is not None:
        raise UserError("--python PATH probes this machine: describe another with --python X.Y")
    if apply and (json_out or output is not None):
        raise UserError(acting.APPLY_IS_TEXT)
    if apply and describing:
        raise UserError("--apply installs on this machine: drop --gpu/--driver/--python X.Y/--os")
    refuse_input_as_output(output, [from_file] if from_file else [])
    described = (
        Described(
            gpus=tuple(gpus or ()),
            driver=driver,
            python=version,
            os=os_name or "linux",
            forward_compat=forward_compat,
        )
        if describing
        else None
    )
    answer = run_install(
        InstallRequest(
            packages=tuple(packages),
            from_file=from_file,
            machine=described,
            python=interpreter,
            installer=installer,
            timeout=timeout,
            compat_dirs=tuple(compat_dir or ()),
            forward_compat=forward_compat,
        )
    )
    if apply:
        _apply(answer, yes, record, timeout)
        return
    if json_out:
        import json

        write_output(output, lambda out: out.write(json.dumps(answer.to_dict(), indent=2) + "\n"))
    else:
        write_output(output, lambda out: render_text(answer, out))
    raise typer.Exit(ExitStatus.OK if answer.ok else ExitStatus.FAILED)


def _apply(answer: object, yes: bool, record: str | None, timeout: float) -> None:
    from gpucheck.fixplan.apply import ApplyError, apply_plan
    from gpucheck.fixplan.install import NotAppliable, after_install, install_plan
    from gpucheck.install.answer import InstallAnswer
    from gpucheck.install.render import render_text

    assert isinstance(answer, InstallAnswer)
    render_text(answer, sys.stdout, dry_run=False)
    try:
        plan = install_plan(answer)
    except NotAppliable as exc:
        raise UserError(str(exc)) from None
    if not acting.confirmed("--apply", f"Install into {answer.environment} now?", yes):
        return
    folder = acting.record_folder(record, "install")
    python = answer.environment or sys.executable
    try:
        apply_plan(plan, folder, python, lambda line: print(printable(line), file=sys.stderr))
    except ApplyError as exc:
        print(f"gpucheck: {printable(str(exc))}", file=sys.stderr)
        raise typer.Exit(ExitStatus.FAILED) from None
    print(printable(f"Installed (record: {folder}; undo: gpucheck fix --undo {folder})"))
    print(printable(after_install(python, timeout)))
