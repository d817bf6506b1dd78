"""The packages asked for, resolved together: torch and its companions (torchvision,
torchaudio) from one build, the other frameworks each on its own; installed packages that pin
torch moved to matching versions or named as conflicts. Pure: compat data and facts in."""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from gpucheck.compat import Compat
from gpucheck.compat.answers import TORCH_INDEX
from gpucheck.compat.frameworks import major_minor
from gpucheck.install.answer import Conflict, Move, PackageAnswer
from gpucheck.install.cupy_builds import cupy_conflicts, is_cupy, resolve_cupy
from gpucheck.install.machine import Machine
from gpucheck.install.others import resolve_jax, resolve_tensorflow
from gpucheck.install.request import TORCH_FAMILY, Wanted, pinned_requirement
from gpucheck.install.torch_builds import CPU, Build, admits, resolve_torch

COMPANIONS = TORCH_FAMILY[1:]


class Resolved:
    def __init__(self) -> None:
        self.packages: list[PackageAnswer] = []
        self.moves: list[Move] = []
        self.conflicts: list[Conflict] = []


def resolve(compat: Compat, machine: Machine, wanted: list[Wanted]) -> Resolved:
    done = Resolved()
    names = [w.name for w in wanted]
    if any(n in TORCH_FAMILY for n in names):
        _torch_family(compat, machine, wanted, done)
    for w in wanted:
        if w.name == "tensorflow":
            done.packages.append(resolve_tensorflow(compat, machine, w))
        elif w.name == "jax":
            done.packages.append(resolve_jax(compat, machine, w))
        elif is_cupy(w.name):
            cupy = resolve_cupy(compat, machine, w)
            done.packages.append(cupy)
            done.conflicts += cupy_conflicts(machine, cupy)
    return done


def torch_index(compat: Compat, build: Build, os: str) -> str | None:
    """Where the build's wheels are: PyPI (None) for the line's default Linux CUDA build (and
    for the CPU build on Windows, PyPI's own there), else PyTorch's index for its variant."""
    rel = compat.torch.release(build.release)
    if build.variant == CPU:
        return None if os == "windows" else TORCH_INDEX.format(tag="").removesuffix("cu") + CPU
    if os == "linux" and rel is not None and rel.default_pypi_cuda == build.variant:
        return None
    return TORCH_INDEX.format(tag=build.variant.replace(".", ""))


def kept_torch_index(version: str) -> str | None:
    """The index an installed torch came from, read from its local tag: +cu118 -> PyTorch's
    cu118 index (+cpu, +rocm6.1 likewise); no tag -> PyPI (None). Companions of a torch that
    stays installed must come from there, or pip swaps torch for another CUDA build."""
    try:
        local = Version(version).local
    except InvalidVersion:
        return None
    if not local:
        return None
    return TORCH_INDEX.format(tag="").removesuffix("cu") + local


def _torch_spec(machine: Machine, wanted: dict[str, Wanted]) -> tuple[SpecifierSet, bool]:
    """torch's constraint, and whether torch itself goes into the command: asked for, or not
    installed; an installed torch asked only for companions keeps its release."""
    if "torch" in wanted:
        return wanted["torch"].specifier, True
    have = machine.dist("torch")
    if have is None:
        return SpecifierSet(), True
    return SpecifierSet(f"=={have.version}"), False


def _torch_family(compat: Compat, machine: Machine, wanted: list[Wanted], done: Resolved) -> None:
    asked = {w.name: w for w in wanted if w.name in TORCH_FAMILY}
    spec, install_torch = _torch_spec(machine, asked)
    answer = resolve_torch(compat, machine, spec)
    torch = PackageAnswer(name="torch", notes=list(answer.notes), cliff=answer.cliff)
    torch.ruled_out = [
        f"{v.release}: {'; '.join(v.reasons)}" for v in answer.verdicts if v.build is None
    ]
    build = answer.chosen
    if not answer.verdicts:
        known = f"{compat.torch.releases[0].version} to {compat.torch.releases[-1].version}"
        torch.ruled_out = [f"no release in the compat data ({known}) matches torch{spec}"]
    if build is not None:
        rel = compat.torch.release(build.release)
        torch.release, torch.build = build.release, build.tag
        torch.cuda = None if build.variant == CPU else build.variant
        torch.index_url = torch_index(compat, build, machine.os)
        torch.requirement = pinned_requirement("torch", build.release, spec)
        torch.notes += list(build.notes)
        arch = compat.torch.arch(build.release, build.variant) if torch.cuda else None
        torch.sources = [
            s for s in (rel.source if rel else None, arch.source if arch else None) if s
        ]
    kept = machine.dist("torch")
    if not install_torch and kept is not None:
        torch.index_url = kept_torch_index(kept.version)
        local = kept.version.partition("+")[2]
        if local.startswith("cu") and local[2:].isdigit() and len(local) > 3:
            torch.build, torch.cuda = local, f"{local[2:-1]}.{local[-1]}"
    if install_torch or build is None:
        done.packages.append(torch)
    pinned_exact = torch.requirement if torch.requirement and "*" not in torch.requirement else None
    torch_version = (pinned_exact or "").split("==")[-1] or (build.release if build else "")
    for name in COMPANIONS:
        if name in asked:
            done.packages.append(_companion(compat, name, torch, torch_version, asked[name]))
    if build is not None:
        _installed_pinners(
            compat, machine, build.release, torch_version, asked, done, torch.index_url
        )


def _companion(
    compat: Compat, name: str, torch: PackageAnswer, torch_version: str, wanted: Wanted
) -> PackageAnswer:
    own = PackageAnswer(name=name, index_url=torch.index_url, build=torch.build, cuda=torch.cuda)
    if torch.release is None:
        own.ruled_out = ["no torch build runs here (see torch)"]
        return own
    row = compat.extensions.pairing(name, torch_version)
    if row is None:
        own.ruled_out = [f"the compat data has no {name} release paired with torch {torch_version}"]
        return own
    version = row.versions[-1]
    requirement = f"{name}=={version}" if version.count(".") >= 2 else f"{name}=={version}.*"
    if wanted.spec and not _admits_prefix(wanted.specifier, version):
        own.ruled_out = [
            f"{name}{wanted.spec} excludes {version}, the {name} built for torch {torch_version}"
        ]
        return own
    own.requirement, own.release, own.sources = requirement, version, [row.source]
    return own


def _admits_prefix(spec: SpecifierSet, prefix: str) -> bool:
    parts = prefix.split(".")
    if len(parts) >= 3:
        return spec.contains(prefix, prereleases=True)
    return admits(spec, Version(prefix))


def _installed_pinners(
    compat: Compat,
    machine: Machine,
    line: str,
    torch_version: str,
    asked: dict[str, Wanted],
    done: Resolved,
    index_url: str | None,
) -> None:
    """Installed packages built for another torch: companions move with it (the pairing
    table names their version; from torch's index, `index_url`), others are named: the compat
    data holds no pins of theirs."""
    target = Version(line)
    for dist in machine.installed:
        if dist.name in asked or dist.name == "torch":
            continue
        pin = _torch_pin(dist.requires)
        if dist.name in COMPANIONS:
            paired = compat.extensions.torch_for(dist.name, dist.version)
            fits = pin is not None and admits(pin, target)
            if pin is None and paired is not None:
                fits = major_minor(paired.torch) == target
            if fits:
                continue
            row = compat.extensions.pairing(dist.name, torch_version)
            if row is not None:
                version = row.versions[-1]
                requirement = f"{dist.name}=={version}" + ("" if version.count(".") >= 2 else ".*")
                done.moves.append(
                    Move(
                        dist.name,
                        dist.version,
                        requirement,
                        f"built for another torch than {line}",
                        index_url,
                    )
                )
                continue
        if pin is not None and not admits(pin, target):
            done.conflicts.append(
                Conflict(
                    dist.name,
                    dist.version,
                    f"torch{pin}",
                    f"{dist.name} {dist.version} requires torch{pin}; torch {line} breaks it: "
                    f"install a {dist.name} built for torch {line}, or keep torch{pin}",
                )
            )


def _torch_pin(requires: tuple[str, ...]) -> SpecifierSet | None:
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == "torch" and str(req.specifier):
            if req.marker is not None and "extra" in str(req.marker):
                continue
            # (a local tag, ==2.5.1+cu124, is judged by its public version)
            return SpecifierSet(",".join(str(s).split("+", 1)[0] for s in req.specifier))
    return None
