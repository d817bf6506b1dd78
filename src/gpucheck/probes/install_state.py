"""How the driver is installed, read from files under `root` (a fabricated tree in tests): the
kernel log's module-loading lines, the module-signing keys, DKMS's nvidia tree, the loader's
/etc/ld.so.conf.d and the CDI specs. Read-only, bounded: a few small files, each read once."""

from __future__ import annotations

import os
import re
from pathlib import Path

from gpucheck.model.install_state import (
    CdiSpec,
    DkmsBuild,
    DkmsFailure,
    InstallStateFacts,
    LoaderEntry,
)
from gpucheck.probes.files import read_text
from gpucheck.probes.kernel_log import read_module_load

# Where DKMS signs with by default (/etc/dkms/framework.conf's mok_signing_key is
# /var/lib/dkms/mok.key) and where Ubuntu's shim-signed keeps its MOK.
SIGNING_KEYS = ("var/lib/dkms/mok.pub", "var/lib/shim-signed/mok/MOK.der")
DKMS_NVIDIA = "var/lib/dkms/nvidia"
MAX_ERRORS = 5  # make.log lines kept
MAX_LOG = 4 << 20  # bytes of a make.log read
MAX_SPEC = 4 << 20
MAX_FILES = 64  # ld.so.conf.d files, CDI specs
CDI_DIRS = ("etc/cdi", "var/run/cdi")
_VERSION = re.compile(r"[0-9]+\.[0-9]+(?:\.[0-9]+)?")
_HEADER = re.compile(r"DKMS make\.log for \S+ for kernel (\S+)")
_ERROR = re.compile(r"error:|Error [0-9]+|\*\*\* |is not supported|cannot be found|not found")
_CUDA_DIR = re.compile(r"cuda-([0-9]+\.[0-9]+)")
# A driver library by its versioned name: libcuda.so.550.54.15, libEGL_nvidia.so.535.161.07.
_DRIVER_LIB = re.compile(r"lib(?:cuda|\w*nvidia[\w-]*)\.so\.([0-9]{3}\.[0-9]+(?:\.[0-9]+)?)")


def probe_install_state(root: Path) -> InstallStateFacts:
    facts = InstallStateFacts()
    facts.module_log, facts.module_log_error = read_module_load(root)
    facts.signing_keys = ["/" + key for key in SIGNING_KEYS if (root / key).is_file()]
    facts.dkms_builds, facts.dkms_failures = dkms_tree(root)
    facts.loader_entries = loader_entries(root)
    facts.cdi_specs = cdi_specs(root)
    return facts


def _listdir(path: Path) -> list[str] | None:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def dkms_tree(root: Path) -> tuple[list[DkmsBuild] | None, list[DkmsFailure]]:
    """/var/lib/dkms/nvidia/VERSION/KERNEL/ARCH/module/*.ko*: a build per kernel; and the
    make.log a failed build left (VERSION/build/make.log, or DKMS 3's per-kernel
    VERSION/KERNEL/ARCH/log/make.log)."""
    base = root / DKMS_NVIDIA
    versions = _listdir(base)
    if versions is None:
        return None, []
    builds: list[DkmsBuild] = []
    failures: list[DkmsFailure] = []
    for version in versions:
        if not _VERSION.fullmatch(version) or not (base / version).is_dir():
            continue
        logs = [base / version / "build/make.log"]
        for kernel in _listdir(base / version) or []:
            if kernel in ("build", "source") or not (base / version / kernel).is_dir():
                continue
            for arch in _listdir(base / version / kernel) or []:
                folder = base / version / kernel / arch
                modules = _listdir(folder / "module") or []
                built = any(".ko" in name for name in modules)
                builds.append(DkmsBuild(version, kernel, arch, built))
                if not built:
                    logs.append(folder / "log/make.log")
        for log in logs:
            failure = _failure(root, version, log)
            if failure is not None:
                failures.append(failure)
    return builds, failures


def _failure(root: Path, version: str, log: Path) -> DkmsFailure | None:
    text = read_text(log, limit=MAX_LOG)
    if text is None:
        return None
    header = _HEADER.search(text)
    errors = [line.strip()[:240] for line in text.splitlines() if _ERROR.search(line)]
    return DkmsFailure(
        version,
        "/" + str(log.relative_to(root)),
        header.group(1) if header else None,
        errors[:MAX_ERRORS],
    )


def loader_entries(root: Path) -> list[LoaderEntry] | None:
    folder = root / "etc/ld.so.conf.d"
    names = _listdir(folder)
    if names is None:
        return None
    entries = []
    for name in [n for n in names if n.endswith(".conf")][:MAX_FILES]:
        text = read_text(folder / name, limit=1 << 16) or ""
        dirs = [
            line.split("#", 1)[0].strip()
            for line in text.splitlines()
            if line.split("#", 1)[0].strip().startswith("/")
        ]
        found = [_CUDA_DIR.search(d) for d in dirs]
        cuda = next((m.group(1) for m in found if m), None)
        exists = [(root / d.lstrip("/")).is_dir() for d in dirs]
        entries.append(LoaderEntry("/etc/ld.so.conf.d/" + name, dirs, cuda, exists))
    return entries


def cdi_specs(root: Path) -> list[CdiSpec]:
    specs = []
    for folder in CDI_DIRS:
        for name in (_listdir(root / folder) or [])[:MAX_FILES]:
            if not name.endswith((".yaml", ".yml", ".json")):
                continue
            path = root / folder / name
            text = read_text(path, limit=MAX_SPEC)
            if text is None:
                specs.append(CdiSpec("/" + f"{folder}/{name}", error="not readable"))
                continue
            kind = re.search(r'"?kind"?\s*:\s*"?([^"\s,]+)', text)
            versions = sorted(set(_DRIVER_LIB.findall(text)))
            specs.append(
                CdiSpec("/" + f"{folder}/{name}", kind.group(1) if kind else None, versions)
            )
    return specs
