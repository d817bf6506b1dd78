"""Find copies of CUDA user-space libraries on disk without loading them.

Where a library can come from, and whether the dynamic loader would pick it by name:
LD_LIBRARY_PATH and the ldconfig cache (on the loader path), the default system folders,
CUDA toolkits (CUDA_HOME, /usr/local/cuda*), pip's nvidia-* wheels in the site folders of
the environments we probe, and conda environments. Versions come from the file name where it
carries one (libcudart.so.12.4.127), the library's own files (probes/library_version.py), the
header beside it, or the wheel's metadata; the
libraries' own version calls refine that later in a child process (probes/native.py).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from msgspec import Struct, field

from gpucheck.model.snapshot import LIBRARY_FAMILIES, LibraryCopy
from gpucheck.probes.library_version import library_version

# The main library of each family, by its name before ".so": libcudart.so.12 but not
# libcudart_static.a; libcudnn.so.9 but not libcudnn_ops.so.9 (cuDNN's sub-libraries follow
# the main one); TensorRT's libnvinfer for the system copies.
STEMS = {"cudart": "libcudart", "cudnn": "libcudnn", "nvinfer": "libnvinfer", **LIBRARY_FAMILIES}
SHARED_LIBRARY = re.compile(r"^(lib[^.]+)\.so(?:\.[0-9]+)*$")  # group 1: the stem
SYSTEM_DIRS = (
    "/usr/local/lib",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib64",
    "/lib",
)
LDCONFIG_CANDIDATES = ("/sbin/ldconfig", "/usr/sbin/ldconfig", "/sbin/ldconfig.real")


class SearchScope(Struct):
    """Where to look: the environment and site folders of the interpreters being probed."""

    env: Mapping[str, str]
    site_dirs: list[Path] = field(default_factory=list)
    cuda_homes: list[Path] = field(default_factory=list)
    use_ldconfig: bool = True
    system_dirs: tuple[str, ...] = SYSTEM_DIRS
    # Each folder listed once for every family (a system folder holds thousands of files):
    # folder -> stem -> the shared libraries of that stem, sorted.
    _listings: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def libraries_in(self, folder: Path, stem: str) -> list[str]:
        """The names in `folder` of shared libraries called `stem` (libcudart.so, .so.12)."""
        key = str(folder)
        if key not in self._listings:
            self._listings[key] = by_stem(_names(folder))
        return self._listings[key].get(stem, [])


def _names(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def by_stem(names: Iterable[str]) -> dict[str, list[str]]:
    """Shared library names grouped by their stem (libcudart.so.12 -> libcudart)."""
    groups: dict[str, list[str]] = {}
    for name in names:
        match = SHARED_LIBRARY.match(name)
        if match:
            groups.setdefault(match.group(1), []).append(name)
    return groups


def ld_library_path(env: Mapping[str, str]) -> list[Path]:
    return [Path(p) for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]


@cache
def ldconfig_cache() -> dict[str, list[str]]:
    """soname -> paths from `ldconfig -p` (empty where it cannot run)."""
    exe = next((c for c in LDCONFIG_CANDIDATES if os.access(c, os.X_OK)), None)
    exe = exe or shutil.which("ldconfig")
    if exe is None:
        return {}
    try:
        out = subprocess.run(
            [exe, "-p"], capture_output=True, text=True, timeout=5, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    entries: dict[str, list[str]] = {}
    for line in out.splitlines():
        match = re.match(r"\s+(\S+) \(([^)]*)\) => (\S+)", line)
        if match:
            entries.setdefault(match.group(1), []).append(match.group(3))
    return entries


@cache
def _cache_by_stem() -> dict[str, list[str]]:
    return by_stem(ldconfig_cache())


def version_from_filename(path: str) -> str | None:
    """libcudart.so.12.4.127 -> 12.4.127; libcudnn.so.9 -> None (the major alone says little)."""
    match = re.search(r"\.so\.([0-9]+(?:\.[0-9]+)+)$", os.path.basename(path))
    return match.group(1) if match else None


def cudnn_header_version(lib_path: str) -> str | None:
    """Read cudnn_version.h (or cudnn.h before 8.0) shipped beside a cuDNN library."""
    lib_dir = Path(lib_path).parent
    candidates = [
        lib_dir.parent / "include",
        lib_dir.parent.parent / "include",
        Path("/usr/include"),
    ]
    if str(lib_dir).startswith(("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu")):
        candidates.insert(0, Path("/usr/include") / lib_dir.name)
    for inc in candidates:
        for header in ("cudnn_version.h", "cudnn.h"):
            try:
                text = (inc / header).read_text(errors="replace")
            except OSError:
                continue
            parts = [
                re.search(rf"#define\s+CUDNN_{key}\s+([0-9]+)", text)
                for key in ("MAJOR", "MINOR", "PATCHLEVEL")
            ]
            if all(parts):
                return ".".join(p.group(1) for p in parts if p)
    return None


def _pip_owner(site_dir: Path, lib_path: Path) -> tuple[str, str] | None:
    """The pip distribution (name, version) whose RECORD lists `lib_path`."""
    try:
        rel = lib_path.relative_to(site_dir).as_posix()
    except ValueError:
        return None
    for dist in [*site_dir.glob("nvidia_*.dist-info"), *site_dir.glob("torch-*.dist-info")]:
        try:
            record = (dist / "RECORD").read_text(errors="replace")
        except OSError:
            continue
        if any(line.split(",", 1)[0] == rel for line in record.splitlines()):
            meta = _metadata(dist)
            if meta:
                return meta
    return None


def _metadata(dist: Path) -> tuple[str, str] | None:
    name = version = None
    try:
        with (dist / "METADATA").open(errors="replace") as fh:
            for line in fh:
                if line.startswith("Name:"):
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("Version:"):
                    version = line.split(":", 1)[1].strip()
                if (name and version) or not line.strip():
                    break
    except OSError:
        return None
    return (name, version) if name and version else None


def _candidate_dirs(scope: SearchScope) -> Iterable[tuple[Path, str]]:
    for d in ld_library_path(scope.env):
        yield d, "ld_library_path"
    for home in scope.cuda_homes:
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"):
            yield home / sub, "cuda_toolkit"
    for site in scope.site_dirs:
        # pip wheels: nvidia/cuda_runtime/lib, nvidia/cudnn/lib, CUDA 13's nvidia/cu13/lib
        for lib_dir in sorted(site.glob("nvidia/*/lib")):
            yield lib_dir, "pip"
        # PyTorch wheels before the nvidia-* pins (1.x) bundle cuDNN, cuBLAS, ... here.
        yield site / "torch/lib", "pip"
    conda = scope.env.get("CONDA_PREFIX")
    if conda:
        yield Path(conda) / "lib", "conda"
    for system_dir in scope.system_dirs:
        yield Path(system_dir), "system"


def find_copies(family: str, scope: SearchScope) -> list[LibraryCopy]:
    """Every distinct copy (by real path) of one library family, loader-path copies first."""
    stem = STEMS[family]
    loader_dirs = {str(d) for d in ld_library_path(scope.env)}
    cache_paths: dict[str, str] = {}  # realpath -> path as listed in the ldconfig cache
    if scope.use_ldconfig:
        cache = ldconfig_cache()
        for soname in _cache_by_stem().get(stem, []):
            for p in cache[soname]:
                cache_paths.setdefault(os.path.realpath(p), p)
    found: dict[str, LibraryCopy] = {}

    def add(path: str, origin: str) -> None:
        real = os.path.realpath(path)
        if real in found or not os.path.isfile(real):
            return
        on_path = (
            origin in ("ld_library_path", "ldconfig")
            or str(Path(path).parent) in loader_dirs
            or real in cache_paths
            or (origin == "system" and not scope.use_ldconfig)
        )
        copy = LibraryCopy(
            name=family, path=path, realpath=real, origin=origin, on_loader_path=on_path
        )
        copy.version = version_from_filename(real)
        copy.version_source = "filename" if copy.version else None
        if copy.version is None:
            # The library's own files before a header, which may be another install's.
            copy.version = library_version(family, real)
            copy.version_source = "library" if copy.version else None
        if family == "cudnn" and copy.version is None:
            copy.version = cudnn_header_version(real)
            copy.version_source = "header" if copy.version else None
        if origin == "pip":
            site = next((s for s in scope.site_dirs if _is_under(Path(path), s)), None)
            owner = _pip_owner(site, Path(path)) if site else None
            if owner:
                copy.package = f"{owner[0]} {owner[1]}"
                if copy.version is None:
                    copy.version, copy.version_source = owner[1], "metadata"
        if origin == "conda" and copy.version is None:
            copy.package = "conda"
        found[real] = copy

    for d, origin in _candidate_dirs(scope):
        # Prefer the soname link (libcudart.so.12) as the displayed path.
        for name in sorted(scope.libraries_in(d, stem), key=_soname_first):
            add(str(d / name), origin)
    for real, listed in cache_paths.items():
        if real not in found:
            add(listed, "ldconfig")
        else:
            found[real].on_loader_path = True
    return sorted(found.values(), key=lambda c: (not c.on_loader_path, c.origin, c.path))


def _soname_first(name: str) -> tuple[int, str]:
    dots = name.count(".")
    return (0 if dots == 2 else 1, name)


def _is_under(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
        return True
    except ValueError:
        return False


def cuda_homes(env: Mapping[str, str]) -> tuple[list[Path], str | None, str | None]:
    """The toolkits to look in; and the CUDA home a build would use, with where it came from."""
    home, source = None, None
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            home, source = env[var], var
            break
    if home is None and os.path.isdir("/usr/local/cuda"):
        home, source = "/usr/local/cuda", "default"
    homes: list[Path] = [Path(home)] if home else []
    for extra in sorted(glob.glob("/usr/local/cuda-*")):
        if Path(extra) not in homes and os.path.realpath(extra) not in map(os.path.realpath, homes):
            homes.append(Path(extra))
    return homes, home, source
