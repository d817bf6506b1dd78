"""CuPy: the newest release line the request admits with a wheel that runs here. A wheel
(cupy-cuda12x) is for one CUDA major; CuPy compiles its kernels at run time with that CUDA's
NVRTC, for each GPU's own architecture, so it runs where the driver runs some CUDA version of the
wheel's (directly or through minor-version compatibility) whose NVRTC builds for every GPU. Two
CuPy packages in one environment conflict: an installed one that is not the pick is named."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from gpucheck.compat import Compat
from gpucheck.compat.cupy import CupyRelease, wheel_major
from gpucheck.compat.frameworks import major_minor
from gpucheck.install.answer import Conflict, PackageAnswer
from gpucheck.install.machine import Machine
from gpucheck.install.others import arch_reason, driver_reason
from gpucheck.install.request import Wanted, pinned_requirement
from gpucheck.install.torch_builds import admits

NO_CPU_BUILD = (
    "CuPy has no CPU build: it runs on an NVIDIA GPU (compute capability {floor} or newer, "
    "CuPy's requirements) and this machine has none"
)


def is_cupy(name: str) -> bool:
    """The names that install the `cupy` module: cupy (from source), cupy-cuda*, cupy-rocm-*."""
    return name == "cupy" or name.startswith(("cupy-cuda", "cupy-rocm"))


def _python_reason(machine: Machine, row: CupyRelease) -> str | None:
    have = major_minor(machine.python) if machine.python else None
    if have is None or str(have) in row.python:
        return None
    return f"has no wheel for Python {have} (Python {row.python[0]} to {row.python[-1]})"


def _newest_major_first(packages: tuple[str, ...]) -> list[str]:
    def order(package: str) -> tuple[int, int]:
        major, exact = wheel_major(package) or ("0", None)
        return int(major), int(exact.split(".")[1]) if exact else 99

    return sorted(packages, key=order, reverse=True)


def _wheel_here(
    compat: Compat, machine: Machine, row: CupyRelease, package: str
) -> tuple[str | None, str | None]:
    """(the newest CUDA of the wheel that runs here, None) or (None, why none does)."""
    cudas = row.wheel_cuda(package)
    if not cudas:
        return None, f"{package} covers no CUDA version of this line"
    low = [cc for cc in machine.ccs if Version(cc) < row.min_cc]
    if low:
        return None, f"compute capability {', '.join(low)} is below CuPy's floor {row.min_cc}"
    runs = [c for c in cudas if driver_reason(compat, machine, c) is None]
    if not runs:
        why = driver_reason(compat, machine, cudas[0])
        return None, f"{package}: {why}"
    builds = [c for c in runs if arch_reason(compat, machine, c) is None]
    if not builds and compat.cc_range(runs[-1]) is None:
        return None, (
            f"{package}: the compat data has no compute-capability range for CUDA {runs[-1]} "
            "(compat/cuda.toml's start at 11.0): not assumed"
        )
    if not builds:
        return None, f"{package}: {arch_reason(compat, machine, runs[-1])}"
    return builds[-1], None


def resolve_cupy(compat: Compat, machine: Machine, wanted: Wanted) -> PackageAnswer:
    answer = PackageAnswer(name=wanted.name)
    data = compat.cupy
    only = wanted.name if wanted.name != "cupy" else None
    if not machine.gpus:
        floor = data.releases[-1].min_cc if data.releases else "3.0"
        answer.ruled_out = [NO_CPU_BUILD.format(floor=floor)]
        return answer
    if not data.releases:
        answer.ruled_out = ["the compat data holds no CuPy lines (compat/cupy.toml)"]
        return answer
    if only is not None and only not in data.wheels:
        answer.ruled_out = [f"no CuPy line in the compat data publishes {only}"]
        return answer
    for row in reversed(data.releases):
        if not admits(wanted.specifier, row.version):
            continue
        line = f"{row.version.major}.{row.version.minor}"
        reason = _python_reason(machine, row)
        chosen: tuple[str, str] | None = None
        if reason is None:
            why = []
            candidates = [p for p in _newest_major_first(row.packages) if only in (None, p)]
            for package in candidates:
                cuda, fails = _wheel_here(compat, machine, row, package)
                if cuda is not None:
                    chosen = package, cuda
                    break
                if fails:
                    why.append(fails)
            reason = None if chosen else "; ".join(why) or f"publishes no {only}"
        if chosen is None:
            answer.ruled_out.append(f"{line}: {reason}")
            continue
        package, cuda = chosen
        _choose(compat, machine, answer, row, package, cuda, wanted.specifier)
        break
    if not answer.ruled_out and answer.release is None:
        known = f"{data.releases[0].version} to {data.releases[-1].version}"
        answer.ruled_out = [f"no CuPy line in the compat data ({known}) matches cupy{wanted.spec}"]
    if answer.ruled_out and answer.release is not None:
        answer.cliff = f"cupy {answer.ruled_out[0]}: {answer.release} is the last that runs here"
    return answer


def _choose(
    compat: Compat,
    machine: Machine,
    answer: PackageAnswer,
    row: CupyRelease,
    package: str,
    cuda: str,
    spec: SpecifierSet,
) -> None:
    line = f"{row.version.major}.{row.version.minor}"
    major = cuda.split(".")[0]
    cudas = row.wheel_cuda(package)
    usable = [c for c in cudas if arch_reason(compat, machine, c) is None]
    floor = usable[0] if usable and usable[0] != cudas[0] else None
    name = f"{package}[ctk]" if row.ctk_extra else package
    answer.requirement = pinned_requirement(name, line, spec)
    answer.release, answer.build, answer.cuda = line, package, cuda
    if floor is not None:
        answer.notes.append(
            f"these GPUs need CUDA {floor} or newer: CUDA {cudas[0]} cannot build for them"
        )
    if row.ctk_extra:
        answer.notes.append(
            f"[ctk] installs NVIDIA's CUDA {major} wheels beside it: only the driver is needed"
        )
    else:
        toolkit = f"CUDA Toolkit {floor or cudas[0]} to {cudas[-1]}"
        answer.notes.append(
            f"{package} {line} needs a {toolkit} on the system (it has no [ctk] extra); "
            "conda-forge's cupy brings its own CUDA libraries"
        )
    rng = compat.cc_range(cuda)
    answer.sources = [s for s in (row.source, rng.source if rng else None) if s]


def cupy_conflicts(machine: Machine, answer: PackageAnswer) -> list[Conflict]:
    """Installed CuPy packages other than the one picked: both install the `cupy` module."""
    if answer.build is None:
        return []
    return [
        Conflict(
            dist.name,
            dist.version,
            "",
            f"{dist.name} {dist.version} is installed: it and {answer.build} both install the "
            f"cupy module and conflict (CuPy's install guide): pip uninstall {dist.name} first",
        )
        for dist in machine.installed
        if is_cupy(dist.name) and dist.name != answer.build
    ]
