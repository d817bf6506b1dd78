"""Framework builds: PyTorch (compat/torch.toml), TensorFlow (compat/tensorflow.toml) and JAX
(compat/jax.toml): what each release was built with, and which GPUs it carries code for."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from msgspec import Struct
from packaging.version import Version

from gpucheck.compat.rows import CompatError, R, Releases, Rows, parse_version


def major_minor(version: str | Version | None) -> Version | None:
    parsed = parse_version(version) if isinstance(version, str) else version
    return Version(f"{parsed.major}.{parsed.minor}") if parsed is not None else None


def cuda_of_local_tag(version: str) -> str | None:
    """A torch wheel's local tag names its CUDA: 2.5.1+cu124 -> 12.4, +cu118 -> 11.8.

    This rule holds for versions newer than the data too, so it is applied before the table.
    """
    match = re.search(r"\+cu([0-9]+)([0-9])$", version.strip())
    return f"{match.group(1)}.{match.group(2)}" if match else None


def code_for(cc: str, sass: Iterable[tuple[Version, bool]], ptx: Iterable[Version]) -> str | None:
    """Which code of a build runs on a GPU of compute capability `cc`: 'sass', 'ptx' or None.

    SASS runs on the same major at an equal or higher minor (an arch-specific 'a' build, the
    pair's True, only on that exact capability); PTX is JIT-compiled for its capability and
    every newer one."""
    want = parse_version(cc)
    if want is None:
        return None
    for have, exact in sass:
        if (have == want) if exact else (have.major == want.major and have.minor <= want.minor):
            return "sass"
    return "ptx" if any(p <= want for p in ptx) else None


# -- PyTorch ---------------------------------------------------------------------------------


class TorchRelease(Struct, frozen=True):
    version: Version  # major.minor line
    python_min: Version | None
    python_max: Version | None
    cuda_variants: tuple[str, ...]
    default_pypi_cuda: str | None
    rocm_variants: tuple[str, ...]
    source: str
    arch_unknown: str | None = None  # variants without an [[arch]] row, and why


class TorchArch(Struct, frozen=True):
    torch_min: Version
    torch_max: Version | None  # None: still current as far as the data knows
    cuda: str
    sm: tuple[str, ...]
    ptx: tuple[str, ...]
    source: str

    def covers(self, torch: Version, cuda: str) -> bool:
        mm = major_minor(torch)
        return (
            self.cuda == cuda
            and mm is not None
            and self.torch_min <= mm
            and (self.torch_max is None or mm <= self.torch_max)
        )

    def runs_on(self, cc: str) -> bool:
        sass = [(v, False) for v in map(parse_version, self.sm) if v is not None]
        ptx = [v for v in map(parse_version, self.ptx) if v is not None]
        return code_for(cc, sass, ptx) is not None


class LineReleases(Releases[R]):
    """Releases looked up by their major.minor line ("2.5.1+cu124" is the 2.5 row)."""

    def release(self, version: str) -> R | None:
        mm = major_minor(version)
        return next((r for r in self.releases if r.version == mm), None)


class TorchData(LineReleases[TorchRelease]):
    def __init__(self, releases: list[TorchRelease], archs: list[TorchArch]) -> None:
        super().__init__(releases)
        self.archs = archs

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> TorchData:
        rows = Rows(path, data)
        releases = [
            r.struct(TorchRelease, optional=("cuda_variants", "rocm_variants"))
            for r in rows.table("release")
        ]
        archs = [r.struct(TorchArch, optional=("ptx",)) for r in rows.table("arch")]
        return cls(releases, archs)

    def arch(self, version: str | Version, cuda: str) -> TorchArch | None:
        torch = parse_version(version) if isinstance(version, str) else version
        if torch is None:
            return None
        return next((a for a in self.archs if a.covers(torch, cuda)), None)

    def arch_before(self, version: str | Version, cuda: str) -> TorchArch | None:
        """For a pre-release (a nightly 2.7.0.dev...) of a line the data has no row for: the
        row of the newest release line before it with the same CUDA variant, which the nightly
        builds continue until the release changes them."""
        torch = parse_version(version) if isinstance(version, str) else version
        if torch is None or not torch.is_prerelease:
            return None
        mm = major_minor(torch)
        earlier = [a for a in self.archs if a.cuda == cuda and mm is not None and a.torch_min < mm]
        return max(earlier, key=lambda a: a.torch_min, default=None)


def _gpu_code_rows(path: Path, rows: Rows) -> list[TfGpuCode]:
    """[[gpu_code]] rows: each capability a version, at least one; one row per line, and more
    only for patch releases built otherwise (`from_version`, within the line)."""
    found: list[TfGpuCode] = []
    for row in rows.table("gpu_code"):
        code = row.struct(TfGpuCode, optional=("ptx", "build_info"))
        bad = [c for c in (*code.sm, *code.ptx) if parse_version(c) is None]
        if bad or not (code.sm or code.ptx):
            raise CompatError(f"{row.where}: sm/ptx must list capabilities like '6.1' (got {bad})")
        if code.from_version is not None and major_minor(code.from_version) != code.version:
            raise CompatError(
                f"{row.where}: from_version {code.from_version} is not {code.version}.x"
            )
        if any((g.version, g.from_version) == (code.version, code.from_version) for g in found):
            raise CompatError(f"{row.where}: a second row for line {code.version}")
        found.append(code)
    return found


# -- TensorFlow ------------------------------------------------------------------------------


class TfRelease(Struct, frozen=True):
    version: Version  # major.minor line
    python_min: Version | None
    python_max: Version | None
    cuda: str | None
    cudnn: str | None
    source: str
    package: str | None = None  # as the table prints it: "tensorflow_gpu" for the 1.x rows


class TfAndCuda(Struct, frozen=True):
    version: Version
    requires: tuple[str, ...]
    source: str
    # This exact release's loader does not find the wheels' libraries (why), and its source.
    loader_gap: str | None = None
    loader_gap_source: str | None = None


class TfGpuCode(Struct, frozen=True):
    """The GPU code one release line's builds carry: SASS (sm) and PTX (ptx) capabilities."""

    version: Version  # major.minor line
    sm: tuple[str, ...]
    ptx: tuple[str, ...]
    source: str
    # The cuda_compute_capabilities the wheel's build_info.py prints (empty: it prints none),
    # which tells the pip build from one built with other capabilities.
    build_info: tuple[str, ...] = ()
    # A patch release built otherwise than its line's first: this row holds from it on.
    from_version: Version | None = None

    def code_for(self, cc: str) -> str | None:
        sass = [(v, False) for v in map(parse_version, self.sm) if v is not None]
        ptx = [v for v in map(parse_version, self.ptx) if v is not None]
        return code_for(cc, sass, ptx)


class TfPackage(Struct, frozen=True):
    name: str
    note: str
    last_version: str | None
    source: str
    keras3_default_from: Version | None = None  # the keras row: first TF whose Keras is 3


class TensorflowData(LineReleases[TfRelease]):
    def __init__(
        self,
        releases: list[TfRelease],
        windows_gpu: list[TfRelease],
        and_cuda: list[TfAndCuda],
        packages: list[TfPackage],
        windows_native_gpu_last: Version | None,
        windows_native_gpu_source: str,
        gpu_code: list[TfGpuCode] | None = None,
        aarch64_gpu_code: str | None = None,
    ) -> None:
        super().__init__(releases)
        self.gpu_code = {g.version: g for g in gpu_code or [] if g.from_version is None}
        self.gpu_code_patches = sorted(
            (g for g in gpu_code or [] if g.from_version is not None),
            key=lambda g: g.from_version or g.version,
        )
        self.aarch64_gpu_code = aarch64_gpu_code  # "none": the Linux aarch64 wheels carry none
        self.windows_gpu = sorted(windows_gpu, key=lambda r: r.version)
        self.and_cuda = sorted(and_cuda, key=lambda r: r.version)
        self.packages = {p.name: p for p in packages}
        self.windows_native_gpu_last = windows_native_gpu_last
        self.windows_native_gpu_source = windows_native_gpu_source

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> TensorflowData:
        rows = Rows(path, data)

        last = rows.text("windows_native_gpu_last")
        last_version = parse_version(last) if last else None
        if last and last_version is None:
            raise CompatError(f"{path.name}: windows_native_gpu_last = {last!r} is not a version")
        releases = [r.struct(TfRelease) for r in rows.table("release")]
        gpu_code = _gpu_code_rows(path, rows)
        lines = {r.version for r in releases}
        if stray := [str(g.version) for g in gpu_code if g.version not in lines]:
            raise CompatError(f"{path.name}: [[gpu_code]] for lines with no [[release]]: {stray}")
        return cls(
            releases=releases,
            windows_gpu=[r.struct(TfRelease) for r in rows.table("windows_gpu")],
            and_cuda=[r.struct(TfAndCuda) for r in rows.table("and_cuda")],
            packages=[
                r.struct(TfPackage, note=r.opt_text("note") or "") for r in rows.table("package")
            ],
            windows_native_gpu_last=last_version,
            windows_native_gpu_source=rows.text("windows_native_gpu_source"),
            gpu_code=gpu_code,
            aarch64_gpu_code=rows.text("aarch64_gpu_code") or None,
        )

    def gpu_code_for(self, version: str | Version) -> TfGpuCode | None:
        """The GPU code of a release (2.3.1: that patch's row) or of a line (2.3: its newest
        patch's, which `==2.3.*` installs); None where no source ties one to the release."""
        parsed = parse_version(version) if isinstance(version, str) else version
        line = major_minor(parsed)
        if parsed is None or line is None:
            return None
        patches = [g for g in self.gpu_code_patches if g.version == line]
        if len(parsed.release) > 2:
            patches = [
                g for g in patches if g.from_version is not None and g.from_version <= parsed
            ]
        return patches[-1] if patches else self.gpu_code.get(line)

    def and_cuda_for(self, version: str) -> TfAndCuda | None:
        """The newest and-cuda pin set at or below `version` within its line."""
        wanted = parse_version(version)
        mm = major_minor(version)
        if wanted is None or mm is None:
            return None
        rows = [a for a in self.and_cuda if major_minor(a.version) == mm and a.version <= wanted]
        if not rows:
            rows = [a for a in self.and_cuda if major_minor(a.version) == mm]
        return rows[-1] if rows else None


# -- JAX -------------------------------------------------------------------------------------


class JaxRelease(Struct, frozen=True):
    version: Version  # the first jaxlib release of a change; holds until the next row
    cuda_min: str | None
    cudnn_min: str | None
    python_min: Version | None
    cuda_majors: tuple[str, ...]
    packages: tuple[str, ...]
    cuda_built: dict[str, str]  # a monolithic wheel's cuDNN tag ("cudnn82") -> its build's CUDA
    sass: tuple[str, ...]  # capabilities its CUDA kernels carry SASS for (empty: not known)
    source: str


class PtxasBehaviour(Struct, frozen=True):
    """What XLA does with a ptxas newer than the driver, from a jaxlib release on."""

    start: Version  # the TOML's `from`
    behaviour: str  # "fails" | "falls_back" | "unknown" (neither shown by the sources)
    source: str


PTXAS_BEHAVIOURS = ("fails", "falls_back", "unknown")


class JaxData(Releases[JaxRelease]):
    def __init__(
        self, releases: list[JaxRelease], ptxas: list[PtxasBehaviour] | None = None
    ) -> None:
        super().__init__(releases)
        self.ptxas = sorted(ptxas or [], key=lambda p: p.start)

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> JaxData:
        rows = Rows(path, data)
        ptxas = []
        for r in rows.table("ptxas_newer_than_driver"):
            behaviour = r.text("behaviour")
            if behaviour not in PTXAS_BEHAVIOURS:
                raise CompatError(
                    f"{r.where}: behaviour must be one of {', '.join(PTXAS_BEHAVIOURS)}"
                )
            ptxas.append(PtxasBehaviour(r.version("from"), behaviour, r.text("source")))
        releases = [
            r.struct(JaxRelease, optional=("cuda_majors", "packages", "sass"))
            for r in rows.table("release")
        ]
        return cls(releases, ptxas)

    def ptxas_behaviour(self, jaxlib: str) -> PtxasBehaviour | None:
        """The row that holds for this jaxlib (None: no version, or no row at or below it)."""
        have = parse_version(jaxlib.split("+", 1)[0])
        rows = [p for p in self.ptxas if have is not None and p.start <= have]
        return rows[-1] if rows else None

    def release(self, version: str) -> JaxRelease | None:
        wanted = parse_version(version)
        if wanted is None or not self.releases or wanted >= _next_minor(self.releases[-1].version):
            return None  # newer than the data: unknown, not assumed unchanged
        # A row holds within its own minor line only: jax 0.2.x (which went with jaxlib 0.1.x)
        # is not answered by the jaxlib 0.1.76 row.
        rows = [r for r in self.releases if r.version <= wanted and _same_line(r.version, wanted)]
        return rows[-1] if rows else None


def _same_line(a: Version, b: Version) -> bool:
    return (a.major, a.minor) == (b.major, b.minor)


def _next_minor(version: Version) -> Version:
    return Version(f"{version.major}.{version.minor + 1}")


# conda build strings: conda-forge writes the CUDA compiler's major and minor run together
# (jaxlib cuda120py312h..., tensorflow cuda112py310h..., pytorch cuda118_py311h...; cuda12_ the
# major alone); the pytorch channel writes it dotted (py3.10_cuda12.1_cudnn8.9.2_0, and once
# with its patch: py3.7_cuda10.1.243_cudnn7.6.3_0).
# (Patterns as text: re compiles one on first use, not at every start-up.)
_CONDA_CUDA = r"(?:^|_)cuda(?:([0-9]{1,2})\.([0-9]+)|([0-9]{2})([0-9])?)(?![0-9])"
_CONDA_CPU = r"(?:^|_)cpu(?:_|$)"


def conda_cuda(build: str | None) -> str | None:
    """The CUDA a conda build string names: cuda120py312h... -> 12.0, cuda12_py311... -> 12,
    py3.10_cuda12.1_cudnn8.9.2_0 -> 12.1 (None: a CPU build, cpu_py311..., or not from conda)."""
    match = re.search(_CONDA_CUDA, build or "")
    if match is None:
        return None
    dotted_major, dotted_minor, major, minor = match.groups()
    if dotted_major is not None:
        return f"{int(dotted_major)}.{int(dotted_minor)}"
    return f"{int(major)}.{minor}" if minor else str(int(major))


def conda_cpu(build: str | None) -> bool:
    """A conda build string of a CPU-only variant: conda-forge's cpu_py311h..., cpu_generic_...,
    cpu_mkl_...; the pytorch channel's py3.10_cpu_0."""
    cpu = re.search(_CONDA_CPU, build or "") is not None
    return bool(build) and conda_cuda(build) is None and cpu
