"""The install answer in the form the doctor's fixes take (compat.answers.Pick): the torch
build a reinstall step names is the one `gpucheck install torch` names."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from gpucheck.compat import Compat
from gpucheck.compat.answers import Pick, newest_torch, torch_install
from gpucheck.compat.frameworks import major_minor
from gpucheck.install.cupy_builds import resolve_cupy
from gpucheck.install.machine import Machine, MachineGpu
from gpucheck.install.request import Wanted
from gpucheck.install.torch_builds import CPU, resolve_torch


def _machine(ccs: list[str], driver: str | None, python: str | None, os: str) -> Machine:
    mm = major_minor(python) if python else None
    return Machine(
        gpus=tuple(MachineGpu(f"compute capability {cc}", cc) for cc in ccs),
        driver=driver,
        python=str(mm) if mm else None,
        os=os,
    )


def torch_pick(
    compat: Compat,
    ccs: list[str],
    driver: str | None,
    python: str | None,
    os: str,
    line: str | None = None,
) -> Pick | None:
    """The newest torch build (of release `line`, if given) with code for these compute
    capabilities that runs on `driver` with wheels for `python`. Without GPUs to judge, the
    newest CUDA build that fits (compat.answers.newest_torch): a fix for a CUDA install."""
    if not ccs:
        return newest_torch(compat, driver=driver, os=os, python=python, line=line)
    machine = _machine(ccs, driver, python, os)
    spec = SpecifierSet(f"=={line}.*") if line else SpecifierSet()
    build = resolve_torch(compat, machine, spec).chosen
    if build is None or build.variant == CPU:
        return None
    install = torch_install(compat, Version(build.release), build.variant, os)
    return Pick(build.release, build.variant, install)


def cupy_pick(
    compat: Compat, ccs: list[str], driver: str | None, python: str | None, os: str
) -> tuple[str, str] | None:
    """(package, requirement) of the CuPy `gpucheck install cupy` names for these GPUs, this
    driver and Python: "cupy-cuda12x", "cupy-cuda12x[ctk]==13.6.*"; None where none runs."""
    if not ccs:
        return None
    answer = resolve_cupy(compat, _machine(ccs, driver, python, os), Wanted("cupy", ""))
    if answer.build is None or answer.requirement is None:
        return None
    return answer.build, answer.requirement
