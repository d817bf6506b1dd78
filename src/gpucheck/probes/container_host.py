"""The container host's side of GPU containers, read from files (no engine is asked): which
engines and which NVIDIA Container Toolkit programs are installed, the runtimes Docker is
configured with, CDI specs, the /dev/char links the systemd cgroup driver needs, and the
cgroup version. Only on a host: inside a container these say nothing about the host."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpucheck.model.snapshot import ContainerHostFacts

BIN_DIRS = ("usr/bin", "usr/local/bin", "bin", "usr/sbin", "sbin")
ENGINES = ("docker", "podman", "containerd", "nerdctl")
# nvidia-container-cli (libnvidia-container-tools) does the work for every path: the legacy
# hook (nvidia-container-toolkit / -runtime-hook), the runtime, and `docker run --gpus`.
TOOLKIT = (
    "nvidia-ctk",
    "nvidia-container-cli",
    "nvidia-container-runtime",
    "nvidia-container-runtime-hook",
    "nvidia-container-toolkit",
    "nvidia-cdi-hook",
)
CDI_DIRS = ("etc/cdi", "var/run/cdi")


def _programs(root: Path, names: tuple[str, ...]) -> list[str]:
    return [n for n in names if any(os.access(root / d / n, os.X_OK) for d in BIN_DIRS)]


def _docker_runtimes(root: Path) -> list[str] | None:
    try:
        data = json.loads((root / "etc/docker/daemon.json").read_text(errors="replace"))
    except (OSError, ValueError):
        return None
    runtimes = data.get("runtimes") if isinstance(data, dict) else None
    return sorted(runtimes) if isinstance(runtimes, dict) else []


def _nvidia_runtime(root: Path) -> tuple[str | None, bool | None]:
    """daemon.json's nvidia runtime: (its path as registered, whether that program exists).
    A bare name is searched where dockerd would find it; an absolute path is taken as is (the
    GPU Operator's toolkit lives under /usr/local/nvidia/toolkit)."""
    try:
        data = json.loads((root / "etc/docker/daemon.json").read_text(errors="replace"))
    except (OSError, ValueError):
        return None, None
    runtimes = data.get("runtimes") if isinstance(data, dict) else None
    entry = runtimes.get("nvidia") if isinstance(runtimes, dict) else None
    path = entry.get("path") if isinstance(entry, dict) else None
    if not isinstance(path, str) or not path:
        return None, None
    if path.startswith("/"):
        return path, os.access(root / path.lstrip("/"), os.X_OK)
    return path, any(os.access(root / d / path, os.X_OK) for d in BIN_DIRS)


def _cdi_specs(root: Path) -> list[str]:
    found = []
    for rel in CDI_DIRS:
        try:
            names = sorted(os.listdir(root / rel))
        except OSError:
            continue
        found += [f"/{rel}/{n}" for n in names if n.endswith((".yaml", ".yml", ".json"))]
    return found


def _dev_char_links(root: Path) -> int | None:
    """Links in /dev/char that resolve to /dev/nvidia* nodes (nvidia-ctk system
    create-dev-char-symlinks makes them; systemd's device rules need them)."""
    try:
        names = os.listdir(root / "dev/char")
    except OSError:
        return None
    count = 0
    for name in names:
        try:
            target = os.readlink(root / "dev/char" / name)
        except OSError:
            continue
        count += os.path.basename(target).startswith("nvidia")
    return count


def probe_container_host(root: Path) -> ContainerHostFacts:
    cgroup = root / "sys/fs/cgroup"
    version = 2 if (cgroup / "cgroup.controllers").exists() else (1 if cgroup.is_dir() else None)
    runtime_path, runtime_found = _nvidia_runtime(root)
    return ContainerHostFacts(
        docker_nvidia_runtime_path=runtime_path,
        docker_nvidia_runtime_found=runtime_found,
        engines=_programs(root, ENGINES),
        toolkit=_programs(root, TOOLKIT),
        docker_runtimes=_docker_runtimes(root),
        cdi_specs=_cdi_specs(root),
        dev_char_links=_dev_char_links(root),
        cgroup_version=version,
    )
