"""The compatibility matrix: cited data in compat/*.toml, and the questions checks ask of it.

Checks never hard-code a version fact; they ask here. The data is read once, lazily (only the
checks that need it pay for it), validated as it is read, and every row keeps its source so a
finding can cite it.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from msgspec import Struct
from packaging.version import Version

from gpucheck.compat.location import data_dir as data_dir
from gpucheck.compat.rows import CompatError, Rows, parse_version

if TYPE_CHECKING:
    from gpucheck.compat.cudnn import CudnnData
    from gpucheck.compat.cupy import CupyData
    from gpucheck.compat.driver_branches import DriverBranchData
    from gpucheck.compat.extensions import ExtensionData, TensorrtData
    from gpucheck.compat.frameworks import JaxData, TensorflowData, TorchData
    from gpucheck.compat.gpus import GpuIndex
    from gpucheck.compat.images import ImageData
    from gpucheck.compat.messages import MessageCatalog
    from gpucheck.compat.nvml_bindings import NvmlBindingData
    from gpucheck.compat.xids import XidCatalog

__all__ = [
    "Compat",
    "CompatError",
    "cuda_from_int",
    "data_dir",
    "driver_text",
    "load",
    "parse_version",
]


class ToolkitRelease(Struct, frozen=True):
    version: Version  # 12.4.1 = CUDA 12.4 Update 1
    label: str
    min_driver_linux: Version | None
    min_driver_windows: Version | None
    source: str


class MinorCompat(Struct, frozen=True):
    cuda_major: int
    min_driver_linux: Version | None
    min_driver_windows: Version | None
    source: str


class ToolkitArch(Struct, frozen=True):
    cuda: Version  # applies from this release until the next row
    min_cc: Version
    max_cc: Version
    source: str


class Architecture(Struct, frozen=True):
    name: str
    compute_capabilities: tuple[str, ...]
    source: str


# How rows of a user's compat folder replace shipped ones: same key, same row.
ROW_KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "cuda.toml": {
        "toolkit": ("version",),
        "minor_compat": ("cuda_major",),
        "toolkit_arch": ("cuda",),
        "architecture": ("name",),
    },
    "gpus.toml": {"gpu": ("name",)},
    "cudnn.toml": {"release": ("version",)},
    "torch.toml": {"release": ("version",), "arch": ("torch_min", "cuda")},
    "tensorflow.toml": {
        "release": ("version",),
        "windows_gpu": ("version",),
        "and_cuda": ("version",),
        "package": ("name",),
    },
    "jax.toml": {
        "release": ("version",),
        "cuda_major": ("major",),
        "ptxas_newer_than_driver": ("from",),
    },
    "cupy.toml": {"release": ("version",)},
    "extensions.toml": {
        "pairing": ("package", "torch"),
        "numpy_abi": ("package", "platform"),
        "kernel_archs": ("package", "from"),
        "kernel_library": ("package",),
    },
    "tensorrt.toml": {"release": ("version",)},
    "images.toml": {"tag_rule": ("repository", "pattern"), "ngc": ("repository", "release")},
    "messages.toml": {"message": ("id",)},
    "driver_branches.toml": {
        "legacy": ("name",),
        "open_module": ("first_architecture",),
        "flavour_packages": ("family",),
    },
    "xids.toml": {"xid": ("code",), "bucket": ("name",)},
    "nvml_bindings.toml": {"call": ("binding", "from")},
}
TOPICS = tuple(ROW_KEYS)
ENV_EXTRA_DIRS = "GPUCHECK_COMPAT_DIR"
TopicData = TypeVar("TopicData")


def _read_toml(path: Path) -> dict[str, Any]:
    from gpucheck.compat.prebuilt import parsed

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CompatError(f"{path}: cannot be read ({exc.strerror})") from None
    prebuilt = parsed(path, raw)
    if prebuilt is not None:
        return prebuilt
    # Only a file without a current pre-parsed form pays for the TOML parser: the start-up
    # benchmark's `doctor --from --json` row (benchmarks/startup.py) has no room for it.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]
    try:
        data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CompatError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise CompatError(f"{path}: not valid TOML (nested too deeply)") from None
    return data


def _row_key(row: Any, keys: tuple[str, ...]) -> tuple[str, ...] | None:
    if not isinstance(row, dict):
        return None
    return tuple(str(row.get(k, "")).strip() for k in keys)


def merge_topic(name: str, base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Rows of `extra` replace rows of `base` with the same key and add the others; its
    top-level values (data_as_of, ...) replace base's."""
    merged = dict(base)
    for table, value in extra.items():
        keys = ROW_KEYS.get(name, {}).get(table)
        if keys is None or not isinstance(value, list) or not isinstance(base.get(table), list):
            merged[table] = value
            continue
        rows = list(base[table])
        index = {_row_key(r, keys): i for i, r in enumerate(rows)}
        for row in value:
            key = _row_key(row, keys)
            if key is not None and key in index:
                rows[index[key]] = row
            else:
                rows.append(row)
        merged[table] = rows
    return merged


def read_topic(dirs: list[Path], name: str) -> tuple[Path, dict[str, Any]]:
    """The shipped file of a topic merged with the same file in each extra folder, in order."""
    path = dirs[0] / name
    data = _read_toml(path)
    for extra in dirs[1:]:
        candidate = extra / name
        if candidate.is_file():
            data = merge_topic(name, data, _read_toml(candidate))
            path = candidate
    return path, data


def driver_text(version: Version) -> str:
    """A driver version as NVIDIA prints it: 535.104.05, not packaging's 535.104.5."""
    major, *rest = version.release
    return ".".join([str(major), *(f"{part:02d}" for part in rest)])


def cuda_from_int(value: int | None) -> str | None:
    """CUDA's integer encoding (12020) -> '12.2'."""
    if value is None or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


class _Topic(Generic[TopicData]):
    """A topic besides cuda.toml, as an attribute of Compat named after its file: its module
    imported and its file read (with the extra folders' rows) when first asked for, then kept
    on the instance, as functools.cached_property keeps a value."""

    def __init__(self, module: str, loader: str) -> None:
        self.module, self.loader = module, loader  # the class whose from_data builds it

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, compat: None, owner: type) -> _Topic[TopicData]: ...
    @overload
    def __get__(self, compat: Compat, owner: type) -> TopicData: ...
    def __get__(self, compat: Compat | None, owner: type) -> _Topic[TopicData] | TopicData:
        if compat is None:
            return self
        loader = getattr(import_module(self.module), self.loader)
        data: TopicData = loader.from_data(*read_topic(compat.dirs, f"{self.name}.toml"))
        compat.__dict__[self.name] = data  # found there from now on, before this descriptor
        return data


class Compat:
    def __init__(
        self,
        toolkits: list[ToolkitRelease],
        minor: list[MinorCompat],
        arch_ranges: list[ToolkitArch],
        architectures: list[Architecture],
        data_as_of: str,
        dirs: list[Path] | None = None,
    ) -> None:
        self.dirs = dirs or [data_dir()]
        self.toolkits = sorted(toolkits, key=lambda t: t.version)
        self.minor = {m.cuda_major: m for m in minor}
        self.arch_ranges = sorted(arch_ranges, key=lambda a: a.cuda)
        self.architectures = architectures
        self.data_as_of = data_as_of

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def from_dir(cls, directory: Path, extra: list[Path] | None = None) -> Compat:
        """The data in `directory`, with each extra folder's rows replacing or adding rows."""
        for folder in extra or []:
            if not folder.is_dir():
                raise CompatError(f"{folder}: no such compat folder")
            unknown = sorted(p.name for p in folder.glob("*.toml") if p.name not in TOPICS)
            if unknown:
                raise CompatError(
                    f"{folder}: unknown compat file {unknown[0]} (known: {', '.join(TOPICS)})"
                )
        dirs = [directory, *(extra or [])]
        path, data = read_topic(dirs, "cuda.toml")
        compat = cls.from_data(path, data, dirs)
        if extra:
            compat.validate_extra()
        return compat

    def validate_extra(self) -> None:
        """Read every topic a user's folder overrides now, so that a bad file is refused
        whatever the machine (a doctor that never needed gpus.toml must not pass it)."""
        for name in TOPICS:
            if any((folder / name).is_file() for folder in self.dirs[1:]):
                self._read(name)

    def read_all(self) -> None:
        """Read every topic now rather than when first asked for (a caller with time to spare,
        such as the doctor while its probes run)."""
        for name in TOPICS:
            self._read(name)

    def _read(self, name: str) -> None:
        attribute = name.removesuffix(".toml")
        if attribute != "cuda":  # read when loaded
            getattr(self, attribute)

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any], dirs: list[Path] | None = None) -> Compat:
        """Build from parsed cuda.toml; `path` names the file in error messages; the other
        topics are read from `dirs` when first asked for."""
        rows = Rows(path, data)
        return cls(
            toolkits=[
                # Where the notes print only a branch (R610), any driver of it qualifies.
                r.struct(
                    ToolkitRelease,
                    min_driver_linux=r.opt_version("min_driver_linux")
                    or r.opt_version("driver_branch"),
                )
                for r in rows.table("toolkit")
            ],
            minor=[r.struct(MinorCompat) for r in rows.table("minor_compat")],
            arch_ranges=[r.struct(ToolkitArch) for r in rows.table("toolkit_arch")],
            architectures=[r.struct(Architecture) for r in rows.table("architecture")],
            data_as_of=str(data.get("data_as_of", "")),
            dirs=dirs,
        )

    # -- the other topics, each read when first needed ---------------------------------------

    gpus: _Topic[GpuIndex] = _Topic("gpucheck.compat.gpus", "GpuIndex")
    cudnn: _Topic[CudnnData] = _Topic("gpucheck.compat.cudnn", "CudnnData")
    torch: _Topic[TorchData] = _Topic("gpucheck.compat.frameworks", "TorchData")
    tensorflow: _Topic[TensorflowData] = _Topic("gpucheck.compat.frameworks", "TensorflowData")
    jax: _Topic[JaxData] = _Topic("gpucheck.compat.frameworks", "JaxData")
    cupy: _Topic[CupyData] = _Topic("gpucheck.compat.cupy", "CupyData")
    extensions: _Topic[ExtensionData] = _Topic("gpucheck.compat.extensions", "ExtensionData")
    tensorrt: _Topic[TensorrtData] = _Topic("gpucheck.compat.extensions", "TensorrtData")
    images: _Topic[ImageData] = _Topic("gpucheck.compat.images", "ImageData")
    messages: _Topic[MessageCatalog] = _Topic("gpucheck.compat.messages", "MessageCatalog")
    driver_branches: _Topic[DriverBranchData] = _Topic(
        "gpucheck.compat.driver_branches", "DriverBranchData"
    )
    xids: _Topic[XidCatalog] = _Topic("gpucheck.compat.xids", "XidCatalog")
    nvml_bindings: _Topic[NvmlBindingData] = _Topic(
        "gpucheck.compat.nvml_bindings", "NvmlBindingData"
    )

    # -- questions -------------------------------------------------------------------------

    def release(self, cuda: str) -> ToolkitRelease | None:
        """The first release (GA) of a CUDA major.minor, or the exact update if one is named."""
        wanted = parse_version(cuda)
        if wanted is None:
            return None
        exact = [t for t in self.toolkits if t.version == wanted]
        if exact:
            return exact[0]
        same = [t for t in self.toolkits if t.version.release[:2] == wanted.release[:2]]
        return same[0] if same else None

    def min_driver(self, cuda: str, os: str = "linux") -> Version | None:
        rel = self.release(cuda)
        if rel is None:
            return None
        return rel.min_driver_windows if os == "windows" else rel.min_driver_linux

    def max_cuda_for_driver(self, driver: str, os: str = "linux") -> Version | None:
        """The newest CUDA release (major.minor) whose minimum driver this driver meets."""
        have = parse_version(driver)
        if have is None:
            return None
        best = None
        for t in self.toolkits:
            need = t.min_driver_windows if os == "windows" else t.min_driver_linux
            if need is not None and have >= need:
                best = t.version
        return Version(f"{best.major}.{best.minor}") if best else None

    def minor_compat_floor(self, cuda_major: int, os: str = "linux") -> Version | None:
        row = self.minor.get(cuda_major)
        if row is None:
            return None
        return row.min_driver_windows if os == "windows" else row.min_driver_linux

    def cc_range(self, cuda: str) -> ToolkitArch | None:
        wanted = parse_version(cuda)
        if wanted is None:
            return None
        current = None
        for row in self.arch_ranges:
            if row.cuda.release[:2] <= wanted.release[:2]:
                current = row
        return current

    def architecture(self, cc: str) -> str | None:
        for arch in self.architectures:
            if cc in arch.compute_capabilities:
                return arch.name
        return None

    def cuda_runs_on_driver(self, cuda: str, driver: str, os: str = "linux") -> bool | None:
        """Does a program built with CUDA `cuda` (bringing its own runtime, as framework
        wheels do) run on `driver`? Yes at the release's own minimum driver; from CUDA 11 on,
        also at the major's minor-version-compatibility floor (PTX JIT aside). None: unknown."""
        want = parse_version(cuda)
        have = parse_version(driver)
        if want is None or have is None:
            return None
        need = self.min_driver(cuda, os)
        if need is not None and have >= need:
            return True
        floor = self.minor_compat_floor(want.major, os) if want.major >= 11 else None
        if floor is not None:
            return have >= floor
        return False if need is not None else None


def extra_dirs_from_env() -> list[Path]:
    value = os.environ.get(ENV_EXTRA_DIRS, "")
    return [Path(p) for p in value.split(os.pathsep) if p]


@cache
def load(extra: tuple[str, ...] = ()) -> Compat:
    """The shipped data, extended by GPUCHECK_COMPAT_DIR's folders and then `extra`'s."""
    return Compat.from_dir(data_dir(), [*extra_dirs_from_env(), *map(Path, extra)])
