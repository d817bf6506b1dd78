"""`gpucheck install`'s flow, for the command line and Python alike: the machine (this one,
probed without the slow parts; a saved snapshot; or one described), the packages resolved
against it, the installer chosen (detected from the environment unless named), the commands.
Bad input raises UserError (exit 2)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec
from msgspec import Struct

from gpucheck.compat import Compat, read_topic
from gpucheck.inputs import UserError, load_compat, probe_here, read_snapshot
from gpucheck.install.answer import InstallAnswer
from gpucheck.install.commands import INSTALLERS, commands
from gpucheck.install.machine import Described, InstallError, Machine, described, from_snapshot
from gpucheck.install.request import Wanted, parse_wanted
from gpucheck.install.resolve import resolve
from gpucheck.model.snapshot import Snapshot


class InstallRequest(Struct, frozen=True, kw_only=True):
    packages: tuple[str, ...]
    from_file: str | None = None  # a saved snapshot or doctor --json report
    machine: Described | None = None  # --gpu/--driver/--python X.Y/--os
    python: str | None = None  # the interpreter to probe here (--python)
    installer: str | None = None  # None: detected
    timeout: float = 15.0
    compat_dirs: tuple[str, ...] = ()
    project: str | None = None  # the folder whose uv project is looked for (default: cwd)
    forward_compat: bool = False  # cuda-compat installed (data-centre GPUs): this machine too


# pyproject.toml and pyvenv.cfg are a few KiB: more is not one to judge by
_DETECT_LIMIT = 1 << 20


def _small_text(path: Path) -> str | None:
    """A regular file's text, read up to _DETECT_LIMIT; None if it is not there. A device, a
    FIFO or a larger file is refused (InstallError): read whole, /dev/zero would fill memory
    and a FIFO would wait forever (hence O_NONBLOCK on the open)."""
    refuse = f"cannot tell the installer: {path} "
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if isinstance(exc, (IsADirectoryError, NotADirectoryError)):
            return None
        raise InstallError(
            refuse + f"cannot be read ({exc.strerror}); name one with --installer"
        ) from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InstallError(refuse + "is not a regular file; name one with --installer")
        data = fh.read(_DETECT_LIMIT + 1)
    if len(data) > _DETECT_LIMIT:
        raise InstallError(refuse + "is over 1 MiB; name one with --installer")
    return data.decode("utf-8", errors="replace")


def detect_installer(machine: Machine, project: Path) -> tuple[str, str]:
    """(installer, why): a uv project (uv.lock, or pyproject.toml with [tool.uv]) -> uv add;
    a conda environment (conda-meta/ in its prefix) -> conda; a venv uv made -> uv pip;
    else pip."""
    if (project / "uv.lock").is_file():
        return "uv-add", f"{project / 'uv.lock'} exists (a uv project)"
    pyproject = project / "pyproject.toml"
    if "[tool.uv" in (_small_text(pyproject) or ""):
        return "uv-add", f"{pyproject} has a [tool.uv] table (a uv project)"
    if machine.prefix:
        prefix = Path(machine.prefix)
        if (prefix / "conda-meta").is_dir():
            return "conda", f"{prefix} is a conda environment (conda-meta/)"
        cfg = _small_text(prefix / "pyvenv.cfg") or ""
        if any(line.split("=", 1)[0].strip() == "uv" for line in cfg.splitlines()):
            return "uv-pip", f"{prefix} was made by uv (pyvenv.cfg)"
    return "pip", "no uv project or conda environment found"


def answer_for(
    compat: Compat,
    machine: Machine,
    wanted: list[Wanted],
    installer: str = "pip",
    installer_why: str = "",
) -> InstallAnswer:
    """The whole answer for a machine (pure: what the API, MCP and the dockerfile judge call)."""
    done = resolve(compat, machine, wanted)
    kept = machine.dist("torch")
    installs_torch = any(p.name == "torch" for p in done.packages)
    made = commands(
        installer,
        done.packages,
        done.moves,
        machine.interpreter,
        machine.os == "windows",
        kept.version if kept is not None and not installs_torch else None,
    )
    ok = all(p.requirement is not None for p in done.packages) and not done.conflicts
    answer = InstallAnswer(
        machine=machine.described_as,
        gpus=[f"{g.name} ({g.cc})" for g in machine.gpus],
        driver=machine.driver,
        python=machine.python,
        os=machine.os,
        environment=machine.interpreter,
        installer=installer,
        installer_why=installer_why,
        packages=done.packages,
        moves=done.moves,
        conflicts=done.conflicts,
        commands=made.lines if ok or done.conflicts else [],
        pyproject=made.pyproject,
        data_as_of=data_as_of(compat),
        ok=ok,
    )
    for note in made.notes:
        for p in answer.packages:
            if p.name == "torch":
                p.notes.append(note)
    return answer


def data_as_of(compat: Compat) -> str:
    """The oldest date of the data an answer reads: what it cannot know is newer than that."""
    dates = [compat.data_as_of]
    for topic in ("torch.toml", "extensions.toml", "tensorflow.toml", "jax.toml", "cupy.toml"):
        dates.append(str(read_topic(compat.dirs, topic)[1].get("data_as_of", "")))
    return min((d for d in dates if d), default="")


def _machine(request: InstallRequest, compat: Compat) -> Machine:
    if request.machine is not None:
        if request.from_file is not None or request.python is not None:
            raise UserError("--gpu/--driver describe another machine: drop --from and --python")
        return described(compat, request.machine)
    if request.from_file is not None:
        if request.python is not None:
            raise UserError("--from reads a saved snapshot; --python probes this machine")
        saved = from_snapshot(
            read_snapshot(request.from_file), compat, f"snapshot {request.from_file}"
        )
        return msgspec.structs.replace(saved, forward_compat=request.forward_compat)
    here = from_snapshot(_probe(request), compat)
    return msgspec.structs.replace(here, forward_compat=request.forward_compat)


def _probe(request: InstallRequest) -> Snapshot:
    snap = probe_here(request.timeout, request.python)
    # The environment the user works in first: --python's, else the active venv or conda env.
    order = {"--python": 0, "virtualenv": 1, "conda": 1}
    snap.environments.sort(key=lambda e: order.get(e.origin, 2))
    return snap


def run_install(request: InstallRequest) -> InstallAnswer:
    try:
        wanted = parse_wanted(list(request.packages))
        if request.installer is not None and request.installer not in INSTALLERS:
            raise InstallError(
                f"--installer: {request.installer!r} is not one of {', '.join(INSTALLERS)}"
            )
        compat = load_compat(list(request.compat_dirs))
        machine = _machine(request, compat)
    except InstallError as exc:
        raise UserError(str(exc)) from None
    if request.installer is not None:
        installer, why = request.installer, "--installer"
    elif request.machine is not None or request.from_file is not None:
        installer, why = "pip", "the default for another machine; --installer names another"
    else:
        try:
            installer, why = detect_installer(machine, Path(request.project or os.getcwd()))
        except InstallError as exc:
            raise UserError(str(exc)) from None
    return answer_for(compat, machine, wanted, installer, why)
