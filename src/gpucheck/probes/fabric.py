"""The host's side of NVSwitch systems, read from files (relative to `root`, as the system
probe): NVSwitch PCI devices and device nodes, the fabric manager's package (dpkg's status
file), unit file and process, the persistence daemon's process, and the IOMMU. Nothing is
loaded. One thing is run, and only where it matters: on an RPM system (no dpkg entry, an RPM
database under `root`) with NVSwitches or the manager's unit file, `rpm -qa` reads the
package's version from the database (no network), killed after RPM_TIMEOUT seconds; without
rpm on PATH the version stays unknown."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

from gpucheck.model.fabric import FabricHostFacts
from gpucheck.probes.files import read_text as _read
from gpucheck.probes.pci_ids import scan_pci

UNIT = "nvidia-fabricmanager.service"
UNIT_DIRS = ("etc/systemd/system", "lib/systemd/system", "usr/lib/systemd/system")
# Process names (comm, 15 characters at most) of the daemons.
FABRICMANAGER_COMM = "nv-fabricmanage"
PERSISTENCED_COMM = "nvidia-persiste"
PACKAGE = re.compile(r"nvidia-fabricmanager(-[0-9]+)?")
IOMMU_ARG = re.compile(r"(intel_iommu|amd_iommu|iommu|iommu\.passthrough|iommu\.strict)=\S+")
READ_LIMIT = 32 << 20  # dpkg's status file: tens of MiB on a full desktop
# RPM names: NVIDIA's spec names it nvidia-fabric-manager (it was nvidia-fabricmanager-BRANCH,
# and Amazon Linux 2023 lists nvidia-fabricmanager); -devel and cuda-drivers-* are not it.
RPM_PACKAGE = re.compile(r"nvidia-fabric-?manager(-[0-9]+)?")
# The database: /usr/lib/sysimage/rpm (Fedora 36+, openSUSE; /var/lib/rpm links there), else
# /var/lib/rpm (RHEL 7-9).
RPM_DBPATHS = ("usr/lib/sysimage/rpm", "var/lib/rpm")
RPM_TIMEOUT = 5.0  # seconds: a query by name takes milliseconds; a locked database waits


def probe_fabric_host(
    root: Path, in_container: bool, nvswitch_pci: list[str] | None = None
) -> FabricHostFacts:
    """`nvswitch_pci`: the NVSwitch addresses the system probe's PCI walk found (None: walk
    /sys/bus/pci here)."""
    if nvswitch_pci is None:
        nvswitch_pci = scan_pci(root)[3]
    facts = FabricHostFacts(nvswitch_pci=list(nvswitch_pci))
    with contextlib.suppress(OSError):
        facts.nvswitch_nodes = sorted(
            "/dev/" + n for n in os.listdir(root / "dev") if n.startswith("nvidia-nvswitch")
        )
    facts.fabricmanager_package, facts.fabricmanager_version = dpkg_fabricmanager(
        _read(root / "var/lib/dpkg/status", READ_LIMIT)
    )
    facts.fabricmanager_unit = any((root / d / UNIT).exists() for d in UNIT_DIRS)
    if facts.fabricmanager_version is None and (nvswitch_pci or facts.fabricmanager_unit):
        facts.fabricmanager_package, facts.fabricmanager_version = rpm_fabricmanager(root)
    facts.fabricmanager_enabled = (
        root / "etc/systemd/system/multi-user.target.wants" / UNIT
    ).exists()
    if not in_container:  # a container's /proc shows its own processes, not the host's daemons
        names = process_names(root / "proc")
        if names is not None:
            facts.fabricmanager_running = FABRICMANAGER_COMM in names
            facts.persistenced_running = PERSISTENCED_COMM in names
    try:
        facts.iommu_groups = len(os.listdir(root / "sys/kernel/iommu_groups"))
    except OSError:
        facts.iommu_groups = None
    cmdline = _read(root / "proc/cmdline") or ""
    facts.iommu_cmdline = [m.group(0) for m in IOMMU_ARG.finditer(cmdline)]
    return facts


def dpkg_fabricmanager(status: str | None) -> tuple[str | None, str | None]:
    """(package, upstream version) of an installed nvidia-fabricmanager[-BRANCH] in dpkg's
    status file: "570.86.15-1" and "1:570.133.20-0ubuntu1" are both driver 570.x's."""
    if not status:
        return None, None
    for stanza in _stanzas_of(status, "nvidia-fabricmanager"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(":")
            if sep and not line.startswith(" "):
                fields[key.strip().lower()] = value.strip()
        name = fields.get("package", "")
        if not PACKAGE.fullmatch(name) or "installed" not in fields.get("status", "").split():
            continue
        version = fields.get("version", "")
        upstream = version.split(":", 1)[-1].split("-", 1)[0] or None
        return name, upstream
    return None, None


def rpm_fabricmanager(root: Path, timeout: float = RPM_TIMEOUT) -> tuple[str | None, str | None]:
    """(package, version) of an installed fabric manager in the RPM database under `root`, as
    `rpm --root ROOT --dbpath DB -qa 'nvidia-fabric*'` lists it; (None, None) where there is no
    database, no rpm on PATH, or rpm fails or runs past `timeout` seconds."""
    dbpath = next((d for d in RPM_DBPATHS if _has_files(root / d)), None)
    rpm = shutil.which("rpm") if dbpath else None
    if rpm is None:
        return None, None
    import subprocess  # only here: most machines never get this far

    command = [rpm, "--root", str(root), "--dbpath", f"/{dbpath}", "-qa"]
    command += ["--queryformat", "%{NAME}\t%{VERSION}\n", "nvidia-fabric*"]
    try:
        out = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None, None
    for line in out.stdout.splitlines():
        name, _, version = line.partition("\t")
        if RPM_PACKAGE.fullmatch(name) and version.strip():
            return name, version.strip()
    return None, None


def _has_files(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(True for _ in entries)
    except OSError:
        return False


def _stanzas_of(status: str, prefix: str) -> list[str]:
    """The stanzas of dpkg's status file whose Package starts with `prefix`, found by search:
    the file holds every package (megabytes on a desktop), and splitting all of it cost more
    than the rest of this probe together."""
    found = []
    mark = f"Package: {prefix}"
    start = 0 if status.startswith(mark) else status.find("\n" + mark)
    while start != -1:
        end = status.find("\n\n", start + 1)
        found.append(status[start : end if end != -1 else len(status)].strip("\n"))
        start = -1 if end == -1 else status.find("\n" + mark, end)
    return found


def process_names(proc: Path) -> set[str] | None:
    """Every process's comm in `proc`; None when /proc cannot be listed."""
    try:
        pids = [p for p in os.listdir(proc) if p.isdigit()]
    except OSError:
        return None
    names = set()
    for pid in pids:
        comm = _read(proc / pid / "comm", 64)
        if comm:
            names.add(comm.strip())
    return names
