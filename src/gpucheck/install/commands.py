"""The answer as commands for the installer people use: pip, `uv pip`, `uv add` (with the
index in pyproject.toml, as uv's PyTorch guide configures it), conda or mamba (the pytorch
channel up to its last release there, 2.5; conda-forge after it). Every value is quoted
(model/shell.py): a package string is data, never shell syntax."""

from __future__ import annotations

from msgspec import Struct
from packaging.version import InvalidVersion, Version

from gpucheck.install.answer import Move, PackageAnswer
from gpucheck.install.request import TORCH_FAMILY
from gpucheck.model.shell import interpreter_pip, join

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
    for p in packages:
        if p.requirement is not None:
            groups.setdefault(p.index_url, []).append(p.requirement)
    for m in moves:  # companions come from torch's index, which the resolver names
        groups.setdefault(m.index_url, []).append(m.requirement)
    return [(reqs, index) for index, reqs in groups.items()]


def pip_like(
    prefix: str, packages: list[PackageAnswer], moves: list[Move], target: tuple[str, ...] = ()
) -> list[str]:
    """`prefix install REQS [--index-url I]` per index; `target` names the environment
    (uv pip's --python PY)."""
    lines = []
    for reqs, index in _pip_groups(packages, moves):
        argv = ["install", *target, *reqs]
        if index is not None:
            argv += ["--index-url", index]
        lines.append(f"{prefix} {join(argv)}")
    return lines


def uv_add(packages: list[PackageAnswer], moves: list[Move]) -> Commands:
    reqs = [p.requirement for p in packages if p.requirement] + [m.requirement for m in moves]
    line = join(["uv", "add", *reqs]) if reqs else ""
    # torch's index, or (torch kept installed) the one its companions and moves come from
    family = [p.index_url for p in packages if p.name in TORCH_FAMILY and p.requirement]
    index = next((i for i in [*family, *(m.index_url for m in moves)] if i), None)
    if index is None:
        return Commands([line] if line else [])
    name = "pytorch-" + index.rstrip("/").rsplit("/", 1)[-1]
    from_index = [p.name for p in packages if p.index_url == index and p.requirement]
    from_index += [m.name for m in moves if m.index_url == index]
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


def conda(
    tool: str, packages: list[PackageAnswer], moves: list[Move], kept_torch: str | None = None
) -> Commands:
    """torch lines up to 2.5 from the pytorch channel (pytorch-cuda=X.Y, or cpuonly); later
    ones from conda-forge (cuda-version=X.Y); the other frameworks from conda-forge (CuPy as
    `cupy` with the cuda-version of the wheel's CUDA). With torch kept installed (`kept_torch`,
    its version), its companions follow its line and CUDA."""
    lines, notes = [], []
    rest = [p for p in packages if p.name not in TORCH_FAMILY]
    family = [p for p in packages if p not in rest and p.requirement]
    specs = [_conda_spec(p.requirement) for p in family if p.requirement]
    specs += [_conda_spec(m.requirement) for m in moves]
    torch = next((p for p in packages if p.name == "torch"), None)
    release = torch.release if torch is not None else kept_torch
    line = _line_of(release)
    # a companion carries torch's CUDA, that of the build kept where torch is not installed
    cuda = torch.cuda if torch is not None else next((p.cuda for p in family if p.cuda), None)
    if specs and line is not None and line <= PYTORCH_CHANNEL_LAST:
        extra = [f"pytorch-cuda={cuda}"] if cuda else ["cpuonly"]
        channels = ["-c", "pytorch", *(["-c", "nvidia"] if cuda else [])]
        lines.append(join([tool, "install", *specs, *extra, *channels]))
    elif specs:
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
            specs = _conda_cuda_build(p.name, _conda_spec(p.requirement), p.cuda)
            lines.append(join([tool, "install", "-c", "conda-forge", *specs]))
    return Commands(lines, None, notes)


def _line_of(release: str | None) -> Version | None:
    """ "2.5.1+cu118" -> 2.5: the release line (None where it is not a version)."""
    try:
        return Version(".".join(map(str, Version(release).release[:2]))) if release else None
    except InvalidVersion:
        return None


def _conda_cuda_build(name: str, spec: str, cuda: str | None) -> list[str]:
    """conda-forge's jaxlib and tensorflow come as CPU and CUDA builds of one version, and a
    solver may pick the CPU one (pangeo-data/pangeo-docker-images#549, which pins the
    `cuda120*` builds): a GPU answer pins the build string to a CUDA one and the CUDA major.
    (`tensorflow-gpu`, the old wheel's name, is `tensorflow` there.)"""
    if spec.startswith("tensorflow-gpu"):
        spec = "tensorflow" + spec.removeprefix("tensorflow-gpu")
    if cuda is None:
        return [spec]
    major = f"cuda-version={cuda.split('.')[0]}"
    if name == "jax":
        return [spec, "jaxlib=*=*cuda*", major]
    return [f"{spec}=*cuda*" if spec.count("=") == 1 else spec, major]


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


def commands(
    installer: str,
    packages: list[PackageAnswer],
    moves: list[Move],
    python: str | None = None,
    windows: bool = False,
    kept_torch: str | None = None,
) -> Commands:
    """The installer's lines; where the environment is known (`python`, its interpreter),
    pip and uv pip are pointed at it: a bare `pip` is whichever the shell finds first.
    `kept_torch`: the version of the torch that stays installed (torch not asked for)."""
    if installer == "pip":
        prefix = interpreter_pip(python, windows) if python else "pip"
        return Commands(pip_like(prefix, packages, moves))
    if installer == "uv-pip":
        target = ("--python", python) if python else ()
        return Commands(pip_like("uv pip", packages, moves, target))
    if installer == "uv-add":
        return uv_add(packages, moves)
    return conda(installer, packages, moves, kept_torch)
