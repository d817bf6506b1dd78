"""Which PyTorch build runs here: every release line the request admits, newest first, each
either chosen (with its CUDA variant) or ruled out with the condition that rules it out.

A build runs here when it has code for every GPU (SASS for the GPU's compute capability, or
PTX at or below it that the driver can JIT-compile), its CUDA runs on the driver (directly,
through minor-version compatibility, or through forward compatibility where the machine has
data-centre GPUs and NVIDIA's cuda-compat package), and it has a wheel for the Python. Pure:
compat data and facts in, an answer out.
"""

from __future__ import annotations

from collections.abc import Callable

from msgspec import Struct, field
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from gpucheck.compat import Compat, driver_text, parse_version
from gpucheck.compat.frameworks import TorchRelease, code_for, cuda_of_local_tag, major_minor
from gpucheck.install.machine import Machine

CPU = "cpu"


class Build(Struct, frozen=True):
    """One release line's chosen build: its CUDA ("cpu" for the CPU build)."""

    release: str  # the line: "2.14"
    variant: str  # "12.6", or "cpu"
    notes: tuple[str, ...] = ()  # what holds only under a condition (PTX JIT, forward compat)

    @property
    def tag(self) -> str:
        return CPU if self.variant == CPU else "cu" + self.variant.replace(".", "")


class LineVerdict(Struct, frozen=True):
    release: str
    build: Build | None  # None: ruled out
    reasons: tuple[str, ...] = ()  # one per variant (or one for the line) when ruled out


class TorchAnswer(Struct, frozen=True):
    verdicts: tuple[LineVerdict, ...]  # every line the request admits, newest first
    chosen: Build | None
    cliff: str | None = None  # why the newest admitted line is not the one chosen
    notes: tuple[str, ...] = field(default_factory=tuple)


def admits(spec: SpecifierSet, line: Version) -> bool:
    """Does `spec` admit some release of `line` (2.5: 2.5.0 ... 2.5.x)? Patch releases are not
    in the data, so each plausible one is tried, and every version the specifier names."""
    if not str(spec):
        return True
    named = [parse_version(s.version.rstrip(".*")) for s in spec]
    tried = [Version(f"{line.major}.{line.minor}.{n}") for n in range(0, 20)]
    tried += [v for v in named if v is not None and major_minor(v) == line]
    return any(spec.contains(v, prereleases=False) for v in tried)


def variants(rel: TorchRelease, os: str) -> list[str]:
    """The CUDA variants of a release line, newest CUDA first. PyPI's own Linux wheel counts
    (its CUDA is read from the wheel) where the published variants are not in the data."""
    found = set(rel.cuda_variants)
    if os == "linux" and rel.default_pypi_cuda:
        found.add(rel.default_pypi_cuda)
    return sorted(found, key=lambda v: parse_version(v) or Version("0"), reverse=True)


def _python_reason(rel: TorchRelease, python: str | None) -> str | None:
    have = major_minor(python) if python else None
    if have is None:
        return None
    low, high = rel.python_min, rel.python_max
    if (low is not None and have < low) or (high is not None and have > high):
        return f"has no wheel for Python {have} (wheels for Python {low} to {high})"
    return None


def _driver_reason(compat: Compat, machine: Machine, cuda: str) -> tuple[str | None, str | None]:
    """(why CUDA `cuda` does not run on the machine's driver, a note where it runs only
    through forward compatibility)."""
    if machine.driver is None or not machine.gpus:
        return None, None
    runs = compat.cuda_runs_on_driver(cuda, machine.driver, machine.os)
    if runs is not False:
        return None, None
    need = compat.min_driver(cuda, machine.os)
    most = compat.max_cuda_for_driver(machine.driver, machine.os)
    floor = compat.minor_compat_floor(int(cuda.split(".")[0]), machine.os)
    lowest = floor or need
    needs = driver_text(lowest) if lowest else "a newer driver"
    at_most = f" runs CUDA {most} at most" if most else ""
    forward = machine.datacenter and machine.os == "linux"
    if forward and machine.forward_compat:
        return None, (
            f"CUDA {cuda} runs on driver {machine.driver} only through forward compatibility "
            "(NVIDIA's cuda-compat package, data-centre GPUs)"
        )
    also = " (data-centre GPUs: or forward compatibility, --forward-compat)" if forward else ""
    return f"needs driver {needs} or newer (driver {machine.driver}{at_most}){also}", None


def _code_reason(
    compat: Compat, machine: Machine, rel: TorchRelease, cuda: str
) -> tuple[str | None, list[str]]:
    """(why the build has no code for a GPU here, notes on GPUs served by PTX JIT)."""
    if not machine.gpus:
        return None, []
    arch = compat.torch.arch(rel.version, cuda)
    if arch is None:
        return "has GPU architectures the compat data does not know (not assumed)", []
    sass = [(v, False) for v in map(parse_version, arch.sm) if v is not None]
    ptx = [v for v in map(parse_version, arch.ptx) if v is not None]
    built = [f"sm_{s.replace('.', '')}" for s in arch.sm]
    return code_reason(compat, machine, cuda, lambda cc: code_for(cc, sass, ptx), built)


def code_reason(
    compat: Compat,
    machine: Machine,
    cuda: str,
    code_on: Callable[[str], str | None],
    built: list[str],
) -> tuple[str | None, list[str]]:
    """(why a CUDA `cuda` build has no code for a GPU here, notes on GPUs served by PTX JIT):
    `code_on(cc)` is the code the build runs on compute capability cc ('sass', 'ptx' or None),
    `built` its architectures as the reason names them. The one rule of torch's and
    TensorFlow's builds: PTX serves a GPU only where the driver can JIT-compile that CUDA."""
    most = compat.max_cuda_for_driver(machine.driver, machine.os) if machine.driver else None
    build = major_minor(cuda)
    missing, notes = [], []
    for cc in machine.ccs:
        how = code_on(cc)
        if how == "ptx" and most is not None and build is not None and build > most:
            how = None  # the driver cannot JIT-compile PTX of a newer CUDA
        if how is None:
            missing.append(cc)
        elif how == "ptx":
            notes.append(f"compute capability {cc} runs through PTX JIT compilation")
    if missing:
        named = " ".join(built)
        return f"has no code for compute capability {', '.join(missing)} (built for {named})", []
    return None, notes


def judge_line(
    compat: Compat, machine: Machine, rel: TorchRelease, only_cuda: str | None = None
) -> LineVerdict:
    line = str(rel.version)
    why_python = _python_reason(rel, machine.python)
    if why_python:
        return LineVerdict(line, None, (why_python,))
    if not machine.gpus:
        return LineVerdict(line, Build(line, CPU))  # the CPU build of every line
    found = [v for v in variants(rel, machine.os) if only_cuda in (None, v)]
    if not found:
        if only_cuda is not None:
            return LineVerdict(line, None, (f"has no CUDA {only_cuda} build",))
        said = "" if machine.os == "linux" else " for Windows"
        return LineVerdict(line, None, (f"has no CUDA build the compat data lists{said}",))
    reasons = []
    for cuda in found:
        why, forward = _driver_reason(compat, machine, cuda)
        why_code, jit = _code_reason(compat, machine, rel, cuda)
        if why_code is None and why is None:
            notes = tuple(n for n in [forward, *jit] if n)
            return LineVerdict(line, Build(line, cuda, notes))
        reasons.append(f"CUDA {cuda}: {why_code or why}")
    return LineVerdict(line, None, tuple(reasons))


def resolve_torch(compat: Compat, machine: Machine, spec: SpecifierSet) -> TorchAnswer:
    """The newest build `spec` admits that runs here, and a verdict per admitted line."""
    releases = list(reversed(compat.torch.releases))
    local = next((cuda_of_local_tag(s.version) for s in spec if "+" in s.version), None)
    public = SpecifierSet(",".join(str(s).split("+", 1)[0] for s in spec))
    admitted = [r for r in releases if admits(public, r.version)]
    verdicts: list[LineVerdict] = []
    chosen: Build | None = None
    for rel in admitted:
        verdict = judge_line(compat, machine, rel, local)
        verdicts.append(verdict)
        if verdict.build is not None:
            chosen = verdict.build
            break
    notes = []
    if machine.gpus and machine.os == "windows":
        notes.append(
            "GPU architectures judged by the Linux x86_64 wheels' lists: Windows builds may "
            "carry other architectures"
        )
    if machine.gpus and machine.driver is None:
        notes.append("the driver is not known: whether the build's CUDA runs on it is not judged")
    return TorchAnswer(tuple(verdicts), chosen, _cliff(verdicts, chosen, str(spec)), tuple(notes))


def _cliff(verdicts: list[LineVerdict], chosen: Build | None, spec: str) -> str | None:
    """The newest admitted line has no build here: say which is the last that does, and why."""
    if not verdicts or verdicts[0].build is not None:
        return None
    newest = verdicts[0]
    per_cuda = [r for r in newest.reasons if r.startswith("CUDA ")]
    if not per_cuda:
        why = newest.reasons[0]
    else:
        cudas = [r.split(":", 1)[0].removeprefix("CUDA ") for r in per_cuda]
        builds = ", ".join(cudas[:-1]) + " and " + cudas[-1] if len(cudas) > 1 else cudas[0]
        only = " only" if len(cudas) == 1 else ""
        causes = {r.split(": ", 1)[1].split(" (built for")[0] for r in per_cuda}
        cause = next(iter(causes))
        if len(causes) == 1:
            plural = cause.replace("has ", "have ", 1).replace("needs ", "need ", 1)
            why = f"ships CUDA {builds} builds{only}, which {plural}"
        else:
            why = f"ships CUDA {builds} builds{only}: " + "; ".join(per_cuda)
    if chosen is None:
        admitted = f" that torch{spec} admits" if spec else ""
        return f"torch {newest.release} {why}: no release in the compat data{admitted} runs here"
    build = "the CPU build" if chosen.variant == CPU else f"CUDA {chosen.variant}"
    return f"torch {newest.release} {why}: {chosen.release} with {build} is the last that runs here"
