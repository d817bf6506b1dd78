"""Real NVIDIA libraries for the tests, fetched once and cached; nothing is installed.

- `debian_driver()`: Debian bookworm's non-free `libnvidia-ml1` and `libcuda1` packages,
  downloaded with apt-get under a private sources list and state folder (the machine's apt
  configuration and lists are not touched) and unpacked with `dpkg -x`;
- `pip_site()`: the `nvidia-cuda-runtime-cu12` and `nvidia-cudnn-cu12` wheels, downloaded with
  pip, of which only the few files the tests need (and each wheel's .dist-info) are extracted
  into a folder laid out like a site-packages folder after `pip install`; `cudnn8_site()`: the
  same for a cuDNN 8 wheel.

Everything lives under ~/.cache/gpucheck-tests (or $GPUCHECK_TEST_CACHE). Each part writes its
COMPLETE.json marker only after a whole fetch; a part without one is wiped and fetched again.

`Unavailable` means "cannot be done on this kind of machine" (a test skips); `FetchError` means
a download or unpacking failed (a test fails, unless GPUCHECK_TEST_OFFLINE=1: then it skips).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "GPUCHECK_TEST_CACHE"
OFFLINE_ENV = "GPUCHECK_TEST_OFFLINE"
MARKER = "COMPLETE.json"

DEBIAN_SOURCE = "http://deb.debian.org/debian bookworm non-free"
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
DEBIAN_PACKAGES = ("libnvidia-ml1", "libcuda1")

# distribution -> (version, files to extract, relative to site-packages)
Table = dict[str, tuple[str, tuple[str, ...]]]
WHEELS: Table = {
    "nvidia-cuda-runtime-cu12": ("12.9.79", ("nvidia/cuda_runtime/lib/libcudart.so.12",)),
    "nvidia-cudnn-cu12": (
        "9.28.0.42",
        (
            "nvidia/cudnn/lib/libcudnn.so.9",
            "nvidia/cudnn/lib/libcudnn_graph.so.9",  # libcudnn.so.9 loads its symbols from here
            "nvidia/cudnn/include/cudnn_version.h",
        ),
    ),
}
# cuDNN 8, in a cache part of its own: its version marker lives in libcudnn_ops_infer.so.8.
CUDNN8_WHEELS: Table = {
    "nvidia-cudnn-cu12": (
        "8.9.2.26",
        ("nvidia/cudnn/lib/libcudnn.so.8", "nvidia/cudnn/lib/libcudnn_ops_infer.so.8"),
    ),
}

APT_TIMEOUT = 600  # seconds, per apt-get command
PIP_TIMEOUT = 3600  # the cuDNN wheel is over 700 MB


class Unavailable(Exception):
    """This machine cannot provide the libraries at all (not Debian-like, ...): skip."""


class FetchError(Exception):
    """Fetching or unpacking failed: fail loudly (skip only when offline is declared)."""


def offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "") not in ("", "0")


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    base = Path(configured) if configured else Path.home() / ".cache" / "gpucheck-tests"
    return base.expanduser().resolve()


# --- Debian driver packages -------------------------------------------------------------------


@dataclass(frozen=True)
class DebianDriver:
    root: Path  # where the packages were unpacked (dpkg -x)
    lib_dir: Path  # .../usr/lib/<multiarch>/nvidia/current
    debs: dict[str, Path]  # package -> .deb file
    versions: dict[str, str]  # package -> upstream version from the .deb name: "535.261.03"
    # The newest CUDA this libcuda supports, as its package says: Debian's libcuda1 "Provides"
    # libcuda-X.Y-1 for every CUDA X.Y it runs ("12.2" for the 535 branch); None if it lists none.
    cuda_version: str | None

    @property
    def version(self) -> str:
        """The driver version, as the libnvidia-ml1 package's file name says."""
        return self.versions["libnvidia-ml1"]

    @property
    def nvml(self) -> Path:
        return self.lib_dir / "libnvidia-ml.so.1"

    @property
    def libcuda(self) -> Path:
        return self.lib_dir / "libcuda.so.1"


def deb_upstream_version(filename: str) -> tuple[str, str]:
    """'libnvidia-ml1_535.261.03-1_amd64.deb' -> ('libnvidia-ml1', '535.261.03').

    apt-get names a download package_version_arch.deb, with an epoch's colon as %3a; the
    upstream version is the Debian version without epoch and Debian revision."""
    match = re.fullmatch(r"([^_]+)_([^_]+)_([^_]+)\.deb", filename)
    if not match:
        raise FetchError(f"unexpected .deb file name: {filename}")
    version = match.group(2).replace("%3a", ":").replace("%3A", ":")
    version = version.split(":", 1)[-1]
    if "-" in version:
        version = version.rsplit("-", 1)[0]
    return match.group(1), version


def newest_cuda(provides: str) -> str | None:
    """'libcuda-11.8-1, libcuda-12.2-1, libcuda.so.1 (= 535.261.03)' -> '12.2'."""
    found = re.findall(r"\blibcuda-(\d+)\.(\d+)-1\b", provides)
    if not found:
        return None
    major, minor = max((int(a), int(b)) for a, b in found)
    return f"{major}.{minor}"


def debian_driver(cache: Path | None = None) -> DebianDriver:
    base = (cache or cache_root()) / "debian"
    for tool in ("apt-get", "dpkg", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} not found: the Debian driver packages need a Debian-like OS")
    with _locked(base):
        found = _debian_from_marker(base)
        if found is None:
            _wipe(base, keep={".lock"})
            _fetch_debian(base)
            found = _debian_from_marker(base)
            if found is None:
                raise FetchError(f"{base}: the fetch did not complete")
        return found


def _fetch_debian(base: Path) -> None:
    if not DEBIAN_KEYRING.is_file():
        raise Unavailable(
            f"{DEBIAN_KEYRING} not found: cannot verify Debian's archive (not a Debian machine?)"
        )
    (base / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (base / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    debs_dir = base / "debs"
    debs_dir.mkdir()
    sources = base / "sources.list"
    sources.write_text(f"deb [signed-by={DEBIAN_KEYRING}] {DEBIAN_SOURCE}\n")
    options = [
        f"-oDir::Etc::SourceList={sources}",
        "-oDir::Etc::SourceParts=/dev/null",
        f"-oDir::State::Lists={base / 'lists'}",
        f"-oDir::Cache={base / 'cache'}",
        "-oAcquire::Retries=3",
        "-oAcquire::http::Timeout=60",
        "-oAPT::Update::Error-Mode=any",  # a failed download fails `update` (apt >= 2.1)
    ]
    if os.geteuid() == 0:
        # apt's _apt sandbox user cannot write into our folders; download as ourselves.
        options.append("-oAPT::Sandbox::User=root")
    log = _run(["apt-get", *options, "update"], base, APT_TIMEOUT)
    if not any(base.glob("lists/*_Packages*")):
        tail = "\n".join(log.strip().splitlines()[-10:])
        raise FetchError(f"apt-get update fetched no package list from {DEBIAN_SOURCE}:\n{tail}")
    _run(["apt-get", *options, "download", *DEBIAN_PACKAGES], debs_dir, APT_TIMEOUT)
    debs: dict[str, str] = {}
    versions: dict[str, str] = {}
    for deb in sorted(debs_dir.glob("*.deb")):
        package, version = deb_upstream_version(deb.name)
        debs[package], versions[package] = deb.name, version
    missing = [p for p in DEBIAN_PACKAGES if p not in debs]
    if missing:
        raise FetchError(f"apt-get download did not produce {', '.join(missing)} in {debs_dir}")
    root = base / "root"
    for name in debs.values():
        _run(["dpkg", "-x", str(debs_dir / name), str(root)], base, 120)
    candidates = sorted(root.glob("usr/lib/*/nvidia/current/libnvidia-ml.so.1")) or sorted(
        root.rglob("libnvidia-ml.so.1")
    )
    if not candidates:
        raise FetchError(f"no libnvidia-ml.so.1 in the unpacked packages under {root}")
    lib_dir = candidates[0].parent
    for package, soname in (("libnvidia-ml1", "libnvidia-ml.so"), ("libcuda1", "libcuda.so")):
        versioned = lib_dir / f"{soname}.{versions[package]}"
        if not versioned.is_file():
            raise FetchError(f"{versioned} missing: the package's layout is not the expected one")
    deb = debs_dir / debs["libcuda1"]
    provides = subprocess.run(
        ["dpkg-deb", "-f", str(deb), "Provides"], capture_output=True, text=True, check=False
    ).stdout
    marker = {
        "lib_dir": str(lib_dir.relative_to(base)),
        "debs": debs,
        "versions": versions,
        "cuda_version": newest_cuda(provides),
    }
    _write_marker(base, marker)


def _debian_from_marker(base: Path) -> DebianDriver | None:
    data = _read_marker(base)
    if data is None:
        return None
    lib_dir, debs, versions = data.get("lib_dir"), data.get("debs"), data.get("versions")
    cuda_version = data.get("cuda_version")
    if not (isinstance(lib_dir, str) and isinstance(debs, dict) and isinstance(versions, dict)):
        return None
    driver = DebianDriver(
        root=base / "root",
        lib_dir=base / lib_dir,
        debs={str(k): base / "debs" / str(v) for k, v in debs.items()},
        versions={str(k): str(v) for k, v in versions.items()},
        cuda_version=cuda_version if isinstance(cuda_version, str) else None,
    )
    if set(driver.versions) != set(DEBIAN_PACKAGES):
        return None
    if not (driver.nvml.exists() and driver.libcuda.exists()):
        return None
    return driver


# --- pip wheels -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PipSite:
    site: Path  # laid out like site-packages after `pip install` of the two wheels
    versions: dict[str, str]  # distribution -> version, from the wheels' METADATA

    @property
    def cudart_version(self) -> str:
        return self.versions["nvidia-cuda-runtime-cu12"]

    @property
    def cudnn_version(self) -> str:
        return self.versions["nvidia-cudnn-cu12"]

    @property
    def libcudart(self) -> Path:
        return self.site / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.12"

    @property
    def libcudnn(self) -> Path:
        return self.site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"

    @property
    def cudnn_header(self) -> Path:
        return self.site / "nvidia" / "cudnn" / "include" / "cudnn_version.h"


def pip_site(cache: Path | None = None) -> PipSite:
    return _pip_part(cache, "pip", WHEELS)


def cudnn8_site(cache: Path | None = None) -> PipSite:
    """The cuDNN 8 wheel's libraries, laid out like site-packages (versions: its METADATA)."""
    return _pip_part(cache, "pip-cudnn8", CUDNN8_WHEELS)


def _pip_part(cache: Path | None, part: str, table: Table) -> PipSite:
    base = (cache or cache_root()) / part
    with _locked(base):
        found = _pip_from_marker(base, table)
        if found is None:
            # The wheels folder survives a failed run: pip reuses a wheel already downloaded
            # there once it checks out against the index's hash.
            _wipe(base, keep={".lock", "wheels"})
            _fetch_wheels(base, table)
            found = _pip_from_marker(base, table)
            if found is None:
                raise FetchError(f"{base}: the fetch did not complete")
        return found


def _fetch_wheels(base: Path, table: Table) -> None:
    wheels = base / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    staging = base / "site.partial"
    versions: dict[str, str] = {}
    for dist, (version, members) in table.items():
        wheel = _download_wheel(dist, version, wheels)
        try:
            versions[dist] = _extract(wheel, dist, members, staging)
        except (zipfile.BadZipFile, OSError) as exc:
            wheel.unlink(missing_ok=True)
            raise FetchError(f"{wheel.name}: cannot extract: {exc}") from exc
        if versions[dist] != version:
            raise FetchError(f"{wheel.name}: METADATA says version {versions[dist]}")
        wheel.unlink()  # the cuDNN wheel is 700 MB; only the extracted files are kept
    staging.rename(base / "site")
    shutil.rmtree(wheels, ignore_errors=True)
    _write_marker(base, {"site": "site", "versions": versions})


def _wheel_prefix(dist: str, version: str) -> str:
    return f"{dist.replace('-', '_')}-{version}-"


def _download_wheel(dist: str, version: str, wheels: Path) -> Path:
    prefix = _wheel_prefix(dist, version)
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--no-cache-dir",  # keep one copy, ours, not a second one in pip's cache
            "--disable-pip-version-check",
            "--retries=3",
            "--timeout=60",
            "-d",
            str(wheels),
            f"{dist}=={version}",
        ],
        wheels,
        PIP_TIMEOUT,
    )
    found = [w for w in wheels.glob("*.whl") if w.name.lower().startswith(prefix.lower())]
    if len(found) != 1:
        raise FetchError(f"pip download of {dist}=={version} left {found or 'no wheel'}")
    return found[0]


def _extract(wheel: Path, dist: str, members: tuple[str, ...], dest: Path) -> str:
    """Extract `members` and the wheel's .dist-info/ into `dest`; return METADATA's version."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        dist_info = [n for n in names if n.split("/", 1)[0].endswith(".dist-info")]
        missing = [m for m in members if m not in names]
        if missing or not dist_info:
            raise FetchError(f"{wheel.name} lacks {missing or 'a .dist-info folder'}")
        for name in (*members, *dist_info):
            if name.endswith("/"):
                continue
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(name) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, 1024 * 1024)
            mode = (zf.getinfo(name).external_attr >> 16) & 0o777
            os.chmod(target, mode or 0o644)
        metadata = next(n for n in dist_info if n.endswith(".dist-info/METADATA"))
        text = zf.read(metadata).decode("utf-8", "replace")
    named = re.search(r"^Name:\s*(\S+)", text, re.M)
    found = re.search(r"^Version:\s*(\S+)", text, re.M)
    if not (named and found) or named.group(1).lower().replace("_", "-") != dist:
        raise FetchError(f"{wheel.name}: METADATA does not name {dist}")
    return found.group(1)


def _pip_from_marker(base: Path, table: Table) -> PipSite | None:
    data = _read_marker(base)
    if data is None:
        return None
    site, versions = data.get("site"), data.get("versions")
    if not (isinstance(site, str) and isinstance(versions, dict)):
        return None
    found = PipSite(site=base / site, versions={str(k): str(v) for k, v in versions.items()})
    for dist, (version, members) in table.items():
        if found.versions.get(dist) != version:
            return None  # fetched for another version of this file: fetch again
        if not all((found.site / m).is_file() for m in members):
            return None
    return found


# --- shared -----------------------------------------------------------------------------------


def _run(cmd: list[str], cwd: Path, timeout: float) -> str:
    """Run `cmd`; its stdout and stderr together, or FetchError."""
    shown = " ".join(a for a in cmd if not a.startswith("-o"))  # apt's -o options are noise
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise FetchError(f"{shown}: no answer within {timeout:g} s (in {cwd})") from exc
    except OSError as exc:
        raise FetchError(f"{shown}: {exc}") from exc
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
        raise FetchError(f"{shown} (in {cwd}) exited with status {proc.returncode}:\n{tail}")
    return proc.stdout


@contextlib.contextmanager
def _locked(base: Path) -> Iterator[None]:
    """One fetch at a time per cache part (pytest-xdist workers, parallel CI jobs)."""
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _wipe(base: Path, keep: set[str]) -> None:
    for entry in base.iterdir():
        if entry.name in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _write_marker(base: Path, data: Mapping[str, object]) -> None:
    tmp = base / (MARKER + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, base / MARKER)


def _read_marker(base: Path) -> dict[str, object] | None:
    try:
        data = json.loads((base / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
