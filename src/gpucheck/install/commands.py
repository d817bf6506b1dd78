"""The answer as commands for the installer people use: pip, `uv pip`, `uv add` (with the
index in pyproject.toml, as uv's PyTorch guide configures it), conda or mamba (the pytorch
channel up to its last release there, 2.5; conda-forge after it). Every value is quoted
(model/shell.py): a package string is data, never shell syntax."""

from __future__ import annotations

from msgspec import Struct
from packaging.version import Version

from gpucheck.install.answer import Move, PackageAnswer
from gpucheck.install.request import TORCH_FAMILY
from gpucheck.model.shell import join

INSTALLERS = ("pip", "uv-pip", "uv-add", "conda", "mamba")
# PyTorch's Anaconda channel: "2.5 will be the last release of PyTorch that will be published
# to the pytorch channel" (pytorch/pytorch#138506); its CUDA builds came with pytorch-cuda=X.Y
# from the nvidia channel (the previous-versions page's conda lines).
PYTORCH_CHANNEL_LAST = Version("2.5")
UV_GUIDE = "https://docs.astral.sh/uv/guides/integration/pytorch/"


class Commands(Struct):
    lines: list[str]
    pyproject: str | None = None
    notes: list[str] = []


def _pip_groups(
    packages: list[PackageAnswer], moves: list[Move]
) -> list[tuple[list[str], str | None]]:
    """Requirements grouped by the index they come from, in the order first named."""
    groups: dict[str | None, list[str]] = {}
    index_of_torch = next((p.index_url for p in packages if p.name == "torch"), None)
    for p in packages:
        if p.requirement is not None:
            groups.setdefault(p.index_url, []).append(p.requirement)
    for m in moves:  # companions come from torch's index
        groups.setdefault(index_of_torch, []).append(m.requirement)
    return [(reqs, index) for index, reqs in groups.items()]


def pip_like(prefix: list[str], packages: list[PackageAnswer], moves: list[Move]) -> list[str]:
    lines = []
    for reqs, index in _pip_groups(packages, moves):
        argv = [*prefix, "install", *reqs]
        if index is not None:
            argv += ["--index-url", index]
        lines.append(join(argv))
    return lines


def uv_add(packages: list[PackageAnswer], moves: list[Move]) -> Commands:
    reqs = [p.requirement for p in packages if p.requirement] + [m.requirement for m in moves]
    line = join(["uv", "add", *reqs]) if reqs else ""
    index = next((p.index_url for p in packages if p.name == "torch" and p.index_url), None)
    if index is None:
        return Commands([line] if line else [])
    name = "pytorch-" + index.rstrip("/").rsplit("/", 1)[-1]
    from_index = [p.name for p in packages if p.index_url == index and p.requirement]
    from_index += [m.name for m in moves]
    sources = "\n".join(f'{n} = [{{ index = "{name}" }}]' for n in from_index)
    pyproject = (
        f'[[tool.uv.index]]\nname = "{name}"\nurl = "{index}"\nexplicit = true\n\n'
        f"[tool.uv.sources]\n{sources}\n"
    )
    return Commands(
        [line],
        pyproject,
        [f"add to pyproject.toml first (uv's PyTorch guide: {UV_GUIDE}), then run uv add"],
    )


def conda(tool: str, packages: list[PackageAnswer], moves: list[Move]) -> Commands:
    """torch lines up to 2.5 from the pytorch channel (pytorch-cuda=X.Y, or cpuonly); later
        ones from conda-forge (cuda-version=X.Y); the other frameworks from conda-forge (CuPy as
    `cupy` with the cuda-version of the wheel's CUDA)."""
    lines, notes = [], []
    rest = [p for p in packages if p.name not in TORCH_FAMILY]
    family = [p for p in packages if p not in rest and p.requirement]
    specs = [_conda_spec(p.requirement) for p in family if p.requirement]
    specs += [_conda_spec(m.requirement) for m in moves]
    torch = next((p for p in packages if p.name == "torch"), None)
    line = Version(torch.release) if torch and torch.release else None
    if specs and torch is not None and line is not None and line <= PYTORCH_CHANNEL_LAST:
        extra = [f"pytorch-cuda={torch.cuda}"] if torch.cuda else ["cpuonly"]
        channels = ["-c", "pytorch", *(["-c", "nvidia"] if torch.cuda else [])]
        lines.append(join([tool, "install", *specs, *extra, *channels]))
    elif specs:
        cuda = torch.cuda if torch else None
        extra = [f"cuda-version={cuda}"] if cuda else []
        lines.append(join([tool, "install", "-c", "conda-forge", *specs, *extra]))
        notes.append(
            "conda-forge builds PyTorch itself: its GPU architectures may differ from the "
            "wheels' that gpucheck judged"
        )
    for p in rest:
        if p.requirement and p.build and p.build.startswith("cupy-"):
            # conda-forge's one cupy package, its CUDA chosen by cuda-version (CuPy's guide)
            spec = "cupy" + _conda_spec(p.requirement)[len(p.build) :]
            extra = [f"cuda-version={p.cuda}"] if p.cuda else []
            lines.append(join([tool, "install", "-c", "conda-forge", spec, *extra]))
        elif p.requirement:
            lines.append(join([tool, "install", "-c", "conda-forge", _conda_spec(p.requirement)]))
    return Commands(lines, None, notes)


def _conda_spec(requirement: str) -> str:
    """pip's `torch==2.14.*` as conda names it: `pytorch=2.14`; extras dropped."""
    at = next((i for i, c in enumerate(requirement) if c in "[=<>!~"), len(requirement))
    name, rest = requirement[:at], requirement[at:]
    if rest.startswith("["):
        rest = rest.split("]", 1)[1]
    name = "pytorch" if name == "torch" else name
    if rest.startswith("==") and "," not in rest:
        return f"{name}={rest[2:].removesuffix('.*')}"
    return f"{name}{rest}"


def commands(installer: str, packages: list[PackageAnswer], moves: list[Move]) -> Commands:
    if installer == "pip":
        return Commands(pip_like(["pip"], packages, moves))
    if installer == "uv-pip":
        return Commands(pip_like(["uv", "pip"], packages, moves))
    if installer == "uv-add":
        return uv_add(packages, moves)
    return conda(installer, packages, moves)
