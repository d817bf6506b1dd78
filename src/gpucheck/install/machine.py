"""The facts an install answer is decided by: the GPUs' compute capabilities, the driver, the
Python and the OS, and what the environment already holds. Read from a snapshot (this machine
probed, or a saved one), or described (a machine about to be rented)."""

from __future__ import annotations

from msgspec import Struct, field

from gpucheck.compat import Compat, parse_version
from gpucheck.compat.frameworks import major_minor
from gpucheck.model.snapshot import Snapshot

# NVML brands of data-centre GPUs, the only ones CUDA forward compatibility serves (the compat
# data's images.toml forward_compat row names them; gpus.toml calls the segment "datacenter").
DATACENTER = "datacenter"


class InstallError(ValueError):
    """An input the answer cannot be made from: one line for the user (exit 2)."""


class MachineGpu(Struct, frozen=True):
    name: str
    cc: str  # compute capability, "8.6"


class InstalledDist(Struct, frozen=True):
    name: str  # normalised: "flash-attn"
    version: str
    requires: tuple[str, ...] = ()  # its Requires-Dist lines


class Machine(Struct, frozen=True, kw_only=True):
    gpus: tuple[MachineGpu, ...] = ()
    driver: str | None = None  # "570.124.06"; None: not known (or no driver)
    python: str | None = None  # "3.11"; None: not known
    os: str = "linux"  # linux | windows
    datacenter: bool = False  # every GPU a data-centre GPU (forward compatibility possible)
    forward_compat: bool = False  # NVIDIA's cuda-compat package is (or will be) installed
    installed: tuple[InstalledDist, ...] = ()
    interpreter: str | None = None  # the environment's Python, where probed
    prefix: str | None = None  # the environment's prefix, where probed
    described_as: str = "this machine"

    @property
    def ccs(self) -> list[str]:
        return sorted({g.cc for g in self.gpus}, key=lambda cc: parse_version(cc) or cc)

    def dist(self, name: str) -> InstalledDist | None:
        return next((d for d in self.installed if d.name == name), None)


def _os_name(text: str) -> str:
    return "windows" if text.lower().startswith(("win", "cygwin")) else "linux"


def from_snapshot(
    snapshot: Snapshot, compat: Compat, described_as: str = "this machine"
) -> Machine:
    """The first probed Python environment's facts, with the GPUs CUDA programs would use."""
    nvml = snapshot.nvml
    gpus = [
        MachineGpu(g.name or f"GPU {g.index}", g.compute_capability)
        for g in nvml.gpus
        if g.compute_capability and parse_version(g.compute_capability)
    ]
    if not gpus:  # NVML not answering: libcuda's view, where it has one
        gpus = [
            MachineGpu(d.name or "GPU", d.compute_capability)
            for d in snapshot.cuda.driver.devices
            if d.compute_capability and parse_version(d.compute_capability)
        ]
    rule = compat.images.forward
    brands = set(rule.gpu_brands) if rule else set()
    datacenter = bool(nvml.gpus) and all(g.brand in brands for g in nvml.gpus)
    env = next((e for e in snapshot.environments if e.error is None), None)
    installed: tuple[InstalledDist, ...] = ()
    python = None
    os_name = _os_name(snapshot.system.os or "linux")
    if env is not None:
        installed = tuple(
            InstalledDist(d.name, d.version, tuple(d.requires)) for d in env.distributions
        )
        mm = major_minor(env.version) if env.version else None
        python = str(mm) if mm else None
        os_name = _os_name(env.platform or snapshot.system.os or "linux")
    return Machine(
        gpus=tuple(gpus),
        driver=nvml.driver_version,
        python=python,
        os=os_name,
        datacenter=datacenter,
        installed=installed,
        interpreter=env.python if env else None,
        prefix=env.prefix if env else None,
        described_as=described_as,
    )


class Described(Struct, frozen=True, kw_only=True):
    """A machine given on the command line (--gpu, --driver, --python, --os)."""

    gpus: tuple[str, ...] = ()
    driver: str | None = None
    python: str | None = None
    os: str = "linux"
    forward_compat: bool = False
    installed: tuple[InstalledDist, ...] = field(default_factory=tuple)


def described(compat: Compat, given: Described) -> Machine:
    """GPU names resolved through compat/gpus.toml ("RTX 5090", "P100", "sm_61" or "6.1")."""
    gpus: list[MachineGpu] = []
    segments: list[str] = []
    for name in given.gpus:
        gpu, segment = _gpu(compat, name)
        gpus.append(gpu)
        segments.append(segment)
    if given.driver is not None and parse_version(given.driver) is None:
        raise InstallError(f"--driver: {given.driver!r} is not a driver version (like 570.124.06)")
    python = None
    if given.python is not None:
        mm = major_minor(given.python)
        if mm is None or mm.major != 3:
            raise InstallError(
                f"--python: {given.python!r} is not a Python 3 version (3.11) or an interpreter"
            )
        python = str(mm)
    if given.os not in ("linux", "windows"):
        raise InstallError(f"--os: {given.os!r} is not one of linux, windows")
    parts = [", ".join(g.name for g in gpus) or "no GPU"]
    if given.driver:
        parts.append(f"driver {given.driver}")
    if python:
        parts.append(f"Python {python}")
    parts.append(given.os)
    return Machine(
        gpus=tuple(gpus),
        driver=given.driver,
        python=python,
        os=given.os,
        datacenter=bool(segments) and all(s == DATACENTER for s in segments),
        forward_compat=given.forward_compat,
        installed=given.installed,
        described_as="described: " + ", ".join(parts),
    )


def _gpu(compat: Compat, name: str) -> tuple[MachineGpu, str]:
    text = name.strip()
    bare = text.lower().removeprefix("sm_").removeprefix("sm")
    if bare.isdigit() and len(bare) in (2, 3):
        bare = f"{bare[:-1]}.{bare[-1]}"
    cc = parse_version(bare)
    if cc is not None and bare.replace(".", "").isdigit() and "." in bare:
        value = f"{cc.major}.{cc.minor}"
        # CUDA's first capability is 1.0 but no CUDA release of the data builds below 3.0;
        # a typo ("10" read as 1.0, "8.3") must not be judged as a GPU
        if cc.major < 3 or compat.architecture(value) is None:
            raise InstallError(
                f"--gpu: {text!r} is not a known compute capability (3.0 or newer, like 8.6 "
                "or sm_86) or a GPU name"
            )
        return MachineGpu(f"compute capability {value}", value), ""
    model, several = compat.gpus.find(text)
    if model is None and several:
        raise InstallError(
            f"--gpu: {text!r} names several known GPUs: {', '.join(several[:6])}: name one"
        )
    if model is None:
        close = compat.gpus.suggestions(text)
        hint = f" (closest known: {', '.join(close)})" if close else ""
        raise InstallError(f"--gpu: {text!r} is not in the compat data{hint}")
    return MachineGpu(model.name, model.compute_capability), model.segment
